// The human reference page: a server-side render of the OpenAPI document (tags → operations →
// parameters, body, responses) plus the guide's prose. Self-contained: inline CSS (templates/docs/
// docs.css), no script, no external resource, so it works offline and under a strict
// Content-Security-Policy.
import { errorCatalogue, type ErrorCode } from '../errors.js';
import { API_PREFIX } from '../http/urls.js';
import type { Block, Section } from './markdown.js';
import { errorSchemaName, type JsonSchema, type Parameter } from './openapi.js';
import { componentResolver, constraints, deref, fieldRows, refName, typeLabel, type FieldRow, type Resolver } from './schema.js';
import { readDocs } from './templates.js';
import { webhookEntries } from './webhooks.js';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s: unknown): string {
  return String(s ?? '').replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/** Escaped text where `code` spans become <code>. */
function inline(s: unknown): string {
  return escapeHtml(s).replace(/`([^`]+)`/g, '<code>$1</code>');
}

/** A fragment id made only of safe characters. */
function anchor(prefix: string, s: string): string {
  return `${prefix}-${s.replace(/[^A-Za-z0-9_-]/g, '-')}`;
}

function table(head: string[], rows: string[][], ids?: string[]): string {
  return `<div class="scroll"><table><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${rows
    .map((r, i) => `<tr${ids?.[i] ? ` id="${ids[i]}"` : ''}>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`)
    .join('')}</tbody></table></div>`;
}

function blockHtml(b: Block): string {
  if ('p' in b) return `<p>${inline(b.p)}</p>`;
  if ('ul' in b) return `<ul>${b.ul.map((li) => `<li>${inline(li)}</li>`).join('')}</ul>`;
  if ('code' in b) return `<pre><code>${escapeHtml(b.code)}</code></pre>`;
  const { head, rows, anchor: prefix } = b.table;
  const ids = prefix ? rows.map((r) => anchor(prefix, (r[0] ?? '').replace(/`/g, ''))) : undefined;
  return table(head.map(inline), rows.map((r) => r.map(inline)), ids);
}

function typeCell(row: FieldRow): string {
  const text = escapeHtml(row.type);
  return row.ref ? text.replace(escapeHtml(row.ref), `<a href="#${anchor('schema', row.ref)}">${escapeHtml(row.ref)}</a>`) : text;
}

/** Whether `text` says `phrase` as a whole: "at most 200" is not said by "at most 2000". */
function says(text: string, phrase: string): boolean {
  for (let i = text.indexOf(phrase); i >= 0; i = text.indexOf(phrase, i + 1)) {
    if (!/\w/.test(text[i - 1] ?? '') && !/\w/.test(text[i + phrase.length] ?? '')) return true;
  }
  return false;
}

/** The constraints a description does not state already: "1 to 255 characters" is said once. */
function unsaid(notes: string[], description: unknown): string[] {
  return typeof description === 'string' ? notes.filter((n) => !says(description, n)) : notes;
}

function fieldsTable(rows: FieldRow[]): string {
  if (!rows.length) return '';
  return table(
    ['Field', 'Type', 'Required', 'Notes'],
    rows.map((r) => {
      const notes = unsaid(r.notes, r.description);
      return [
        `<code>${escapeHtml(r.path)}</code>`,
        typeCell(r),
        r.required ? 'yes' : 'no',
        [r.description ? inline(r.description) : '', notes.length ? `<span class="muted">${escapeHtml(notes.join('; '))}</span>` : ''].filter(Boolean).join('<br>'),
      ];
    }),
  );
}

function schemaHtml(schema: unknown, resolve: Resolver): string {
  const name = refName(schema);
  if (name) return `<p>Body: <a href="#${anchor('schema', name)}">${escapeHtml(name)}</a></p>`;
  const rows = fieldRows(schema, resolve, { keepRefs: true });
  return rows.length ? fieldsTable(rows) : `<p>Body: ${escapeHtml(typeLabel(schema, resolve, true))}</p>`;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** A path in the sidebar may break after each slash: the long webhook paths are wider than it. */
function navPath(path: string): string {
  return escapeHtml(path).replace(/\//g, '/<wbr>');
}

interface Op {
  method: string;
  path: string;
  op: JsonSchema;
}

function operationHtml({ method, path, op }: Op, resolve: Resolver): string {
  const id = anchor('op', String(op.operationId ?? `${method}-${path}`));
  const scope = op['x-required-scope'];
  const open = Array.isArray(op.security) && op.security.length === 0;
  const parts: string[] = [
    `<h3><a class="self" href="#${id}"><span class="method ${escapeHtml(method)}">${escapeHtml(method.toUpperCase())}</span> <code class="path">${escapeHtml(path)}</code></a></h3>`,
    `<p class="summary">${inline(op.summary)}</p>`,
  ];
  const facts = [
    open ? '<span class="badge open">no key needed</span>' : scope ? `<span class="badge">scope <code>${escapeHtml(scope)}</code></span>` : '<span class="badge">any valid key</span>',
    `<span class="muted">operationId <code>${escapeHtml(op.operationId)}</code></span>`,
  ];
  parts.push(`<p class="facts">${facts.join(' ')}</p>`);
  if (typeof op.description === 'string') {
    // The closing "Scope: ..." / "No key needed." line is the badge above.
    const paras = op.description.split(/\n{2,}/).filter((para) => !/^(Scope: `[^`]*`\.|Any valid key \(no scope needed\)\.|No key needed\.)$/.test(para.trim()));
    parts.push(paras.map((para) => `<p>${inline(para)}</p>`).join(''));
  }

  const params = (op.parameters ?? []) as Parameter[];
  if (params.length) {
    parts.push(
      '<h4>Parameters</h4>',
      table(
        ['Name', 'In', 'Type', 'Required', 'Notes'],
        params.map((p) => [
          `<code>${escapeHtml(p.name)}</code>`,
          escapeHtml(p.in),
          escapeHtml(typeLabel(p.schema, resolve)),
          p.required ? 'yes' : 'no',
          [p.description ? inline(p.description) : '', escapeHtml(unsaid(constraints(p.schema, resolve), p.description).join('; '))].filter(Boolean).join('<br>'),
        ]),
      ),
    );
  }

  const body = ((op.requestBody as JsonSchema | undefined)?.content as Record<string, JsonSchema> | undefined)?.['application/json'];
  if (body) {
    const strict = deref(body.schema, resolve).additionalProperties === false;
    parts.push(
      `<h4>Request body <span class="muted">application/json${strict ? '; unknown fields are rejected' : ''}</span></h4>`,
      fieldsTable(fieldRows(body.schema, resolve)) || `<p>${escapeHtml(typeLabel(body.schema, resolve))}</p>`,
    );
    if (body.example !== undefined) parts.push(`<details><summary>Example body</summary><pre><code>${escapeHtml(JSON.stringify(body.example, null, 2))}</code></pre></details>`);
  }

  const responses = Object.entries((op.responses ?? {}) as Record<string, JsonSchema>);
  const ok = responses.filter(([status]) => /^2/.test(status));
  const errors = responses.filter(([status]) => !/^2/.test(status));
  parts.push('<h4>Responses</h4>');
  for (const [status, r] of ok) {
    const content = (r.content ?? {}) as Record<string, JsonSchema>;
    const json = content['application/json'];
    parts.push(
      `<p><span class="status ok">${escapeHtml(status)}</span> ${inline(r.description)}${Object.keys(content).length ? ` <span class="muted">${escapeHtml(Object.keys(content).join(', '))}</span>` : ''}</p>`,
      json?.schema ? schemaHtml(json.schema, resolve) : '',
    );
  }
  if (errors.length) {
    parts.push(
      table(
        ['Status', 'Error codes'],
        errors.map(([status, r]) => {
          const examples = (((r.content ?? {}) as Record<string, JsonSchema>)['application/json']?.examples ?? {}) as Record<string, unknown>;
          const codes = Object.keys(examples);
          return [
            `<span class="status err">${escapeHtml(status)}</span>`,
            codes.length ? codes.map((c) => `<a href="#${anchor('error', c)}"><code>${escapeHtml(c)}</code></a>`).join(', ') : inline(r.description),
          ];
        }),
      ),
    );
  }

  const sample = (op['x-codeSamples'] as { source?: string }[] | undefined)?.[0]?.source;
  if (sample) parts.push(`<h4>Example</h4><pre><code>${escapeHtml(sample)}</code></pre>`);
  return `<article class="op" id="${id}">${parts.join('\n')}</article>`;
}

/** What a merchant's endpoint receives (the document's `webhooks`): the headers and answers every type shares, then each type's body. */
function webhooksHtml(doc: JsonSchema, resolve: Resolver): string {
  const entries = webhookEntries(doc);
  const first = entries[0];
  if (!first) return '';
  return [
    '<section id="webhook-events"><h2>Webhook events</h2>',
    "<p>Each event is a POST of JSON to every enabled endpoint subscribed to its type (an empty <code>events</code> list subscribes to all), described by the OpenAPI document's <code>webhooks</code>, with these headers:</p>",
    table(
      ['Header', 'Type', 'Notes'],
      first.headers.map((p) => [`<code>${escapeHtml(p.name)}</code>`, escapeHtml(typeLabel(p.schema, resolve)), inline(p.description)]),
    ),
    '<h4>Your answer</h4>',
    table(['Status', 'Meaning'], first.answers.map(([status, meaning]) => [`<span class="status">${escapeHtml(status)}</span>`, inline(meaning)])),
    '<h4>Event types</h4>',
    table(
      ['Event type', 'Sent when', 'Body'],
      entries.map((e) => [`<code>${escapeHtml(e.type)}</code>`, inline(e.summary), e.body ? `<a href="#${anchor('schema', e.body)}">${escapeHtml(e.body)}</a>` : '']),
      entries.map((e) => anchor('event', e.type)),
    ),
    '</section>',
  ].join('\n');
}

const CSS = readDocs('docs.css');

/** Renders the OpenAPI document (and the guide) as one HTML page. */
export function renderHtml(doc: JsonSchema, sections: Section[], baseUrl: string): string {
  const info = (doc.info ?? {}) as JsonSchema;
  const components = ((doc.components as JsonSchema | undefined)?.schemas ?? {}) as Record<string, JsonSchema>;
  const resolve = componentResolver(components);

  const byTag = new Map<string, Op[]>();
  for (const t of (doc.tags ?? []) as { name: string }[]) byTag.set(t.name, []);
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Record<string, JsonSchema>>)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = ((op.tags as string[] | undefined) ?? ['Other'])[0]!;
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag)!.push({ method, path: path.startsWith(API_PREFIX) ? path.slice(API_PREFIX.length) || '/' : path, op });
    }
  }
  // The error envelopes differ only in `code` and `details`: the guide's catalogue shows those.
  const envelopes = new Set((Object.keys(errorCatalogue) as ErrorCode[]).map(errorSchemaName));
  const schemaNames = Object.keys(components).filter((n) => !envelopes.has(n));

  const eventsHtml = webhooksHtml(doc, resolve);
  const nav = [
    '<strong>Guide</strong><ul>',
    ...sections.map((s) => `<li><a href="#${anchor('guide', s.id)}">${escapeHtml(s.title)}</a></li>`),
    '</ul><strong>Endpoints</strong><ul>',
    ...[...byTag.entries()].map(
      ([tag, ops]) =>
        `<li><a href="#${anchor('tag', tag)}">${escapeHtml(tag)}</a><ul>${ops
          .map((o) => `<li><a href="#${anchor('op', String(o.op.operationId))}">${escapeHtml(o.method.toUpperCase())} ${navPath(o.path)}</a></li>`)
          .join('')}</ul></li>`,
    ),
    '</ul>',
    ...(eventsHtml ? ['<strong><a href="#webhook-events">Webhook events</a></strong><br>'] : []),
    ...(schemaNames.length ? [`<strong><a href="#schemas">Schemas</a></strong>`] : []),
  ].join('');

  const guideHtml = sections.map((s) => `<section id="${anchor('guide', s.id)}"><h2>${escapeHtml(s.title)}</h2>${s.blocks.map(blockHtml).join('\n')}</section>`);
  const endpointsHtml = [...byTag.entries()].map(
    ([tag, ops]) => `<section id="${anchor('tag', tag)}"><h2>${escapeHtml(tag)}</h2>${ops.map((o) => operationHtml(o, resolve)).join('\n')}</section>`,
  );
  const schemasHtml = schemaNames.length
    ? `<section id="schemas"><h2>Schemas</h2>${schemaNames
        .map((n) => `<h3 id="${anchor('schema', n)}">${escapeHtml(n)}</h3>${fieldsTable(fieldRows({ $ref: `#/components/schemas/${n}` }, resolve, { keepRefs: true }))}`)
        .join('\n')}</section>`
    : '';

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(info.title)} reference</title>
<style>
${CSS}</style>
</head>
<body>
<header>
<h1>${escapeHtml(info.title)} <span class="muted">v${escapeHtml(info.version)}</span></h1>
<p>${inline(info.summary)}</p>
<p>Base URL <code>${escapeHtml(baseUrl)}</code> · <a href="${escapeHtml(API_PREFIX)}/docs/openapi.json">OpenAPI 3.1 (openapi.json)</a> · <a href="${escapeHtml(API_PREFIX)}/docs/llms.txt">llms.txt</a></p>
</header>
<div class="layout">
<nav aria-label="Contents">${nav}</nav>
<main>
${guideHtml.join('\n')}
${endpointsHtml.join('\n')}
${eventsHtml}
${schemasHtml}
</main>
</div>
</body>
</html>
`;
}
