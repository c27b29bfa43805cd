// llms.txt: the whole reference as one Markdown text for language models and humans in a
// terminal. Routes come from the RouteDef list; schemas, parameters, errors and examples from
// the OpenAPI document built from that same list, so nothing here describes a route by hand.
import type { RouteDef } from '../http/route.js';
import { API_PREFIX } from '../http/urls.js';
import { API_SUMMARY, API_TITLE, displayPath, guide, sectionsToMarkdown } from './guide.js';
import { errorsByStatus, openApiPath, type JsonSchema, type Parameter, type PublicRoute } from './openapi.js';
import { componentResolver, constraints, deref, fieldRows, refName, typeLabel, type FieldRow, type Resolver } from './schema.js';
import { webhookEntries } from './webhooks.js';

function fieldLine(row: FieldRow): string {
  const bits = [row.type, row.required ? 'required' : 'optional', ...row.notes];
  return `- \`${row.path}\` (${bits.join('; ')})${row.description ? `: ${row.description}` : ''}`;
}

function paramLine(p: Parameter, resolve: Resolver): string {
  const bits = [typeLabel(p.schema, resolve), p.required ? 'required' : 'optional', ...constraints(p.schema, resolve)];
  return `- \`${p.name}\` (${bits.join('; ')})${p.description ? `: ${p.description}` : ''}`;
}

function operationOf(doc: JsonSchema, method: string, path: string): JsonSchema {
  const paths = doc.paths as Record<string, Record<string, JsonSchema>>;
  return paths[openApiPath(path)]?.[method.toLowerCase()] ?? {};
}

function codeSample(op: JsonSchema): string | undefined {
  const samples = op['x-codeSamples'] as { source: string }[] | undefined;
  return samples?.[0]?.source;
}

function routeSection(def: RouteDef, doc: JsonSchema, resolve: Resolver, refs: Set<string>): string {
  const op = operationOf(doc, def.method, def.path);
  const params = (op.parameters ?? []) as Parameter[];
  const out: string[] = [`### ${def.method} ${displayPath(def.path)}`, `${def.summary}.`.replace(/\.\.$/, '.')];
  if (def.description) out.push(def.description);

  const success = (op.responses as Record<string, JsonSchema>)[String(def.response.status)] ?? {};
  const successContent = (success.content ?? {}) as Record<string, JsonSchema>;
  const successSchema = successContent['application/json']?.schema;
  const otherTypes = Object.keys(successContent).filter((t) => t !== 'application/json');
  const successName = refName(successSchema);
  if (successName) refs.add(successName);
  const facts = [
    `URL: \`${doc['x-base-url'] as string}${displayPath(def.path)}\``,
    `Scope: ${def.scope ? `\`${def.scope}\`` : 'none (any valid key)'}`,
    `Operation id: \`${def.operationId}\` (tag ${def.tag})`,
    ...(def.idempotent ? ['Idempotency-Key: accepted; the answer is replayed for 24 hours'] : []),
    `Success: HTTP ${def.response.status}, ${def.response.description}${
      successName ? ` (body: \`${successName}\`, see Schemas)` : successSchema ? '' : otherTypes.length ? ` (body: ${otherTypes.map((t) => `\`${t}\``).join(', ')})` : ' (no body)'
    }`,
    `Errors: ${errorsByStatus(def)
      .map(([status, codes]) => `${status} ${codes.map((c) => `\`${c}\``).join(', ')}`)
      .join('; ')}`,
  ];
  out.push(facts.map((f) => `- ${f}`).join('\n'));

  for (const [where, title] of [
    ['path', 'Path parameters'],
    ['query', 'Query parameters'],
    ['header', 'Headers'],
  ] as const) {
    const list = params.filter((p) => p.in === where);
    if (list.length) out.push(`${title}:\n\n${list.map((p) => paramLine(p, resolve)).join('\n')}`);
  }

  const body = ((op.requestBody as JsonSchema | undefined)?.content as Record<string, JsonSchema> | undefined)?.['application/json'];
  if (body) {
    const schema = deref(body.schema, resolve);
    const strict = schema.additionalProperties === false ? ' Unknown fields are rejected (422).' : '';
    const rows = fieldRows(body.schema, resolve);
    out.push(`Request body (JSON, \`Content-Type: application/json\`).${strict}\n\n${rows.length ? rows.map(fieldLine).join('\n') : `- ${typeLabel(body.schema, resolve)}`}`);
  }

  if (successSchema && !successName) {
    const rows = fieldRows(successSchema, resolve, { keepRefs: true, refs });
    if (rows.length) out.push(`Response ${def.response.status} body:\n\n${rows.map(fieldLine).join('\n')}`);
  }

  const sample = codeSample(op);
  if (sample) out.push(`Example:\n\n\`\`\`sh\n${sample}\n\`\`\``);
  return out.join('\n\n');
}

/** What a merchant's endpoint receives: the document's `webhooks`, whose headers and answers every type shares. */
function webhooksSection(doc: JsonSchema, resolve: Resolver, refs: Set<string>): string[] {
  const entries = webhookEntries(doc);
  const first = entries[0];
  if (!first) return [];
  for (const e of entries) if (e.body) refs.add(e.body);
  return [
    [
      '## Webhook events',
      'Each event is a POST of JSON to every enabled endpoint subscribed to its type (an empty `events` list subscribes to all), described by the OpenAPI document\'s `webhooks`, with these headers:',
      first.headers.map((p) => paramLine(p, resolve)).join('\n'),
      `Your answer:\n\n${first.answers.map(([status, meaning]) => `- ${status}: ${meaning}`).join('\n')}`,
      `Event types and their bodies (see Schemas):\n\n${entries.map((e) => `- \`${e.type}\`: body \`${e.body}\`. ${e.summary}`).join('\n')}`,
    ].join('\n\n'),
  ];
}

function publicSection(r: PublicRoute, doc: JsonSchema): string {
  const op = operationOf(doc, r.method, r.path);
  const sample = codeSample(op);
  return [
    `### ${r.method} ${displayPath(r.path)}`,
    `${r.summary}.`,
    r.description,
    [`- URL: \`${doc['x-base-url'] as string}${displayPath(r.path)}\``, '- Scope: none; no key needed', `- Operation id: \`${r.operationId}\` (tag ${r.tag})`, `- Success: HTTP 200, \`${r.contentType}\``].join('\n'),
    ...(sample ? [`Example:\n\n\`\`\`sh\n${sample}\n\`\`\``] : []),
  ].join('\n\n');
}

export function buildLlmsTxt(routes: RouteDef[], publicRoutes: PublicRoute[], doc: JsonSchema, publicBaseUrl: string): string {
  const baseUrl = publicBaseUrl + API_PREFIX;
  const withBase = { ...doc, 'x-base-url': baseUrl };
  const components = ((doc.components as JsonSchema | undefined)?.schemas ?? {}) as Record<string, JsonSchema>;
  const resolve = componentResolver(components);
  const refs = new Set<string>();

  const index = [
    ...routes.map((r) => `- \`${r.method} ${displayPath(r.path)}\`: ${r.summary} (${r.scope ? `scope \`${r.scope}\`` : 'any valid key'})`),
    ...publicRoutes.map((r) => `- \`${r.method} ${displayPath(r.path)}\`: ${r.summary} (no key)`),
  ].join('\n');

  const tags: string[] = [];
  for (const r of [...routes, ...publicRoutes]) if (!tags.includes(r.tag)) tags.push(r.tag);
  const endpoints = tags.map((tag) => {
    const parts = [
      ...routes.filter((r) => r.tag === tag).map((r) => routeSection(r, withBase, resolve, refs)),
      ...publicRoutes.filter((r) => r.tag === tag).map((r) => publicSection(r, withBase)),
    ];
    return `## ${tag}\n\n${parts.join('\n\n')}`;
  });

  const events = webhooksSection(doc, resolve, refs);

  // Named response shapes, once each (a shape may name further shapes: follow them).
  const schemaSections: string[] = [];
  const done = new Set<string>();
  for (let pending = [...refs]; pending.length; pending = [...refs].filter((n) => !done.has(n))) {
    for (const name of pending) {
      done.add(name);
      const rows = fieldRows({ $ref: `#/components/schemas/${name}` }, resolve, { keepRefs: true, refs });
      schemaSections.push(`### ${name}\n\n${rows.map(fieldLine).join('\n')}`);
    }
  }

  return [
    `# ${API_TITLE}`,
    `> ${API_SUMMARY}`,
    `Base URL: \`${baseUrl}\`. Authentication: header \`X-API-Key\`. OpenAPI 3.1: \`${baseUrl}/docs/openapi.json\`.`,
    sectionsToMarkdown(guide({ baseUrl, routes, publicPaths: publicRoutes.map((r) => r.path) })),
    `## Endpoints\n\nEvery path is relative to the base URL.\n\n${index}`,
    ...endpoints,
    ...events,
    ...(schemaSections.length ? [`## Schemas\n\nResponse and event shapes named above. Nullable fields are present with the value null.\n\n${schemaSections.join('\n\n')}`] : []),
  ].join('\n\n') + '\n';
}
