import t from 'tap';
import { Validator } from '@seriousme/openapi-schema-validator';
import { testApp, type TestApp } from './helpers/app.js';
import { apiRoutes } from '../src/routes.js';
import { errorCatalogue } from '../src/errors.js';
import { API_PREFIX } from '../src/http/urls.js';

const DOCS = ['/docs', '/docs/openapi.json', '/docs/llms.txt'];
const toOpenApi = (path: string) => API_PREFIX + path.replace(/:([A-Za-z_]+)/g, '{$1}');
const relative = (path: string) => path.replace(/:([A-Za-z_]+)/g, '{$1}');

/** Every (method, path) the app serves, read from Fastify's route tree. */
function servedRoutes(h: TestApp): { method: string; path: string }[] {
  const out: { method: string; path: string }[] = [];
  const stack: string[] = [];
  for (const line of h.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^(.*?)[├└]── (\S+)(?: \(([^)]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = Math.round([...m[1]!].length / 4);
    stack.length = depth;
    stack[depth] = m[2]!;
    const path = stack.join('');
    for (const method of (m[3] ?? '').split(',').map((s) => s.trim()).filter(Boolean)) out.push({ method, path });
  }
  return out;
}

t.test('the reference', async (t) => {
  const h = await testApp(t);
  await h.app.ready();

  t.test('all three answer 200 without a key, with their content types', async (t) => {
    for (const [path, type] of [
      ['/docs/openapi.json', /^application\/json/],
      ['/docs/llms.txt', /^text\/plain/],
      ['/docs', /^text\/html/],
    ] as const) {
      const res = await h.api('GET', path);
      t.equal(res.status, 200, `${path} answers 200`);
      t.match(String(res.headers['content-type']), type, `${path} content type`);
      t.ok(res.raw.length > 1000, `${path} has content`);
    }
    // A wrong key does not matter either: the reference is public.
    const withBadKey = await h.api('GET', '/docs/llms.txt', { key: 'ik_live_nope' });
    t.equal(withBadKey.status, 200);
    // An unknown document under /docs is an unknown route, in the envelope.
    const missing = await h.api('GET', '/docs/nope.txt');
    t.equal(missing.status, 404);
    t.equal(missing.body.code, 'route_not_found');
  });

  t.test('openapi.json is a valid OpenAPI 3.1 document', async (t) => {
    const { body: doc } = await h.api('GET', '/docs/openapi.json');
    t.equal(doc.openapi, '3.1.0');
    const res = await new Validator().validate(doc);
    t.same(res.errors, undefined, 'no validation errors');
    t.ok(res.valid, 'valid');
    // Every $ref resolves inside the document (a `#/$defs/...` left in a schema would not).
    const refs = JSON.stringify(doc).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of new Set(refs)) {
      const target = JSON.parse(`{${ref}}`).$ref as string;
      t.match(target, /^#\/components\//, `${target} points into components`);
      const found = target
        .slice(2)
        .split('/')
        .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
        .reduce<any>((node, seg) => node?.[seg], doc);
      t.ok(found, `${target} exists`);
    }
  });

  t.test('every route is in the document, with its method, scope, errors and example', async (t) => {
    const { body: doc } = await h.api('GET', '/docs/openapi.json');
    for (const def of apiRoutes) {
      const op = doc.paths[toOpenApi(def.path)]?.[def.method.toLowerCase()];
      t.ok(op, `${def.method} ${def.path} documented`);
      if (!op) continue;
      t.equal(op.operationId, def.operationId);
      t.equal(op['x-required-scope'], def.scope, `${def.operationId} scope`);
      t.ok(op.responses[String(def.response.status)], `${def.operationId} documents its success status`);
      for (const code of def.errors) {
        const status = String(errorCatalogue[code].status);
        t.ok(JSON.stringify(op.responses[status] ?? {}).includes(code), `${def.operationId} documents ${code} under ${status}`);
      }
      t.ok(op.responses['422'], `${def.operationId} documents 422`);
      t.match(op['x-codeSamples']?.[0]?.source, /^curl /, `${def.operationId} has a curl example`);
      if (def.body) t.ok(op.requestBody?.content?.['application/json']?.schema, `${def.operationId} documents its body`);
      for (const name of def.path.match(/:([A-Za-z_]+)/g) ?? []) {
        t.ok(
          op.parameters.some((p: { name: string; in: string }) => p.in === 'path' && p.name === name.slice(1)),
          `${def.operationId} documents path parameter ${name}`,
        );
      }
      if (def.idempotent) t.ok(op.parameters.some((p: { name: string }) => p.name === 'Idempotency-Key'), `${def.operationId} documents Idempotency-Key`);
    }
    // Each operation says what it needs: a scope (null: any valid key) or no key at all.
    let count = 0;
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(item)) {
        count++;
        const open = Array.isArray(op.security) && op.security.length === 0;
        t.ok(open || 'x-required-scope' in op, `${method} ${path} has x-required-scope or security []`);
        t.equal(typeof op.summary, 'string');
      }
    }
    t.equal(count, apiRoutes.length + DOCS.length, 'nothing else is documented');
    for (const path of DOCS) t.same(doc.paths[API_PREFIX + path]?.get?.security, [], `${path} needs no key`);
    // Operation ids are unique.
    const ids = Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((item) => Object.values(item).map((op) => op.operationId));
    t.equal(new Set(ids).size, ids.length, 'operationIds are unique');
  });

  t.test('every route the app serves under the prefix is documented', async (t) => {
    const { body: doc } = await h.api('GET', '/docs/openapi.json');
    const served = servedRoutes(h).filter((r) => r.method !== 'HEAD' && (r.path === API_PREFIX || r.path.startsWith(`${API_PREFIX}/`)));
    t.ok(served.length >= apiRoutes.length + DOCS.length, 'routes were read from the router');
    for (const r of served) t.ok(doc.paths[toOpenApi(r.path.slice(API_PREFIX.length))]?.[r.method.toLowerCase()], `${r.method} ${r.path} documented`);
  });

  t.test('llms.txt mentions every route and every error code', async (t) => {
    const { raw: text } = await h.api('GET', '/docs/llms.txt');
    for (const def of apiRoutes) {
      t.ok(text.includes(`### ${def.method} ${relative(def.path)}`), `${def.method} ${def.path} has a section`);
      t.ok(text.includes(def.summary), `${def.operationId} summary`);
      if (def.scope) t.ok(text.includes(`\`${def.scope}\``), `${def.operationId} scope`);
    }
    for (const path of DOCS) t.ok(text.includes(`### GET ${path}`), `${path} has a section`);
    for (const [code, { status, retry }] of Object.entries(errorCatalogue)) {
      t.ok(text.includes(`| \`${code}\` | ${status} | \`${retry}\` |`), `catalogue row of ${code}`);
    }
    for (const phrase of [
      'X-API-Key',
      'shown once',
      'Idempotency-Key',
      'Idempotent-Replayed: true',
      'Retry-After: 5',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'has_more',
      'limit+1',
      'decimal strings',
      'JSON numbers',
      'after_seconds:N',
      'http://invoicing.test/api/v1/external',
    ]) {
      t.ok(text.includes(phrase), `mentions ${phrase}`);
    }
    // Request body fields come from the zod schema, nested ones in dot/bracket form.
    t.ok(text.includes('- `items[].unit_price` (number; required'), 'nested body fields');
    t.ok(text.includes('- `client.email` (string (email); required'), 'nested object fields');
    // A request field with a default may be left out, and the docs still say the default.
    t.ok(text.includes('- `is_tax_exempt` (boolean; optional): Default: `false`'), 'defaults of request fields');
    // The catalogue says what `details` holds for each code.
    t.match(text, /^\| `client_already_exists` \| 409 \| `never` \| [^|]+ \| `email`: /m, 'details of a code');
    // One curl per route.
    t.equal((text.match(/^curl /gm) ?? []).length >= apiRoutes.length + DOCS.length, true, 'a curl example per route');
  });

  t.test('the HTML page covers every operation, escapes and links the machine formats', async (t) => {
    const res = await h.api('GET', '/docs');
    const html = res.raw;
    t.match(html, /^<!doctype html>/i);
    t.match(html, /<meta name="viewport"/);
    t.notMatch(html, /<script/i, 'no script');
    t.notMatch(html, /(src|href)="(https?:)?\/\//i, 'no external resource');
    t.match(String(res.headers['content-security-policy']), /default-src 'none'/);
    t.ok(html.includes(`href="${API_PREFIX}/docs/openapi.json"`), 'links openapi.json');
    t.ok(html.includes(`href="${API_PREFIX}/docs/llms.txt"`), 'links llms.txt');
    for (const def of apiRoutes) {
      t.ok(html.includes(`id="op-${def.operationId}"`), `${def.operationId} has an anchor`);
      t.ok(html.includes(`<code class="path">${relative(def.path)}</code>`), `${def.operationId} path`);
    }
    for (const code of Object.keys(errorCatalogue)) t.ok(html.includes(`id="error-${code}"`), `${code} has an anchor`);
    // Anchors are unique and every in-page link lands on one.
    const ids = [...html.matchAll(/\sid="([^"]+)"/g)].map((m) => m[1]!);
    t.equal(new Set(ids).size, ids.length, 'ids are unique');
    const broken = [...html.matchAll(/\shref="#([^"]*)"/g)].map((m) => m[1]!).filter((id) => !ids.includes(id));
    t.same(broken, [], 'no broken in-page link');
    // Text is escaped: the curl examples' quotes and the "<" of no tag leak through unescaped.
    t.notMatch(html.replace(/<\/?[a-z][a-z0-9]*(?:\s[^<>]*)?>|<!doctype html>/gi, ''), /[<>]/, 'no stray angle brackets outside tags');
  });
});

t.test('the reference, like every keyless request, is counted per address with the rate-limit headers', async (t) => {
  const h = await testApp(t);
  for (const path of ['/docs', '/docs/openapi.json', '/docs/llms.txt']) {
    const res = await h.api('GET', path);
    t.equal(res.status, 200, path);
    t.equal(res.headers['x-ratelimit-limit'], '600', path);
    t.ok(Number(res.headers['x-ratelimit-remaining']) < 600, path);
  }
});
