import t from 'tap';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import { inject, testApp, isEnvelope, TEST_ENV } from './helpers/app.js';
import { assertError } from './helpers/assertions.js';
import { createSql, type Sql } from '../src/db/client.js';
import { API_PREFIX } from '../src/http/urls.js';
import { loadConfig } from '../src/config.js';
import { buildApp } from '../src/app.js';
import { ApiKeyStore } from '../src/http/auth.js';
import { createBoss } from '../src/queue/boss.js';
import type { AppContext } from '../src/http/context.js';
import { loadSecretBox } from '../src/secret-box.js';

const ONE_MIB = 1024 * 1024;
const SOME_UUID = '0191e4b2-7c1a-7000-8000-0000000000aa';

/**
 * The real app on a pool whose database cannot be reached. Built by hand: testApp starts pg-boss,
 * which needs the database; here nothing is started, as in a process whose database went away.
 */
async function appWithoutDatabase(t: { teardown(fn: () => unknown): void }, sql: Sql, url: string): Promise<{ app: FastifyInstance }> {
  const config = loadConfig({ ...TEST_ENV, DATABASE_URL: url });
  const ctx: AppContext = { config, sql, keys: new ApiKeyStore(sql), boss: createBoss(sql, { worker: false }), secrets: loadSecretBox(config) };
  const app = await buildApp(ctx, { logger: false });
  t.teardown(() => app.close());
  return { app };
}

t.test('unknown routes answer 404 route_not_found in the envelope', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);

  const inside = await inject(h.app, { method: 'GET', url: `${API_PREFIX}/no-such-thing?x=1&y=2` });
  assertError(t, inside, 404, 'route_not_found', { path: `${API_PREFIX}/no-such-thing` });
  t.equal(inside.body.retry, 'never');

  const insideWithKey = await inject(h.app, { method: 'GET', url: `${API_PREFIX}/no-such-thing`, headers: { 'x-api-key': key } });
  assertError(t, insideWithKey, 404, 'route_not_found', { path: `${API_PREFIX}/no-such-thing` });

  // A known path with a method it does not have is no route either.
  const wrongMethod = await inject(h.app, { method: 'DELETE', url: `${API_PREFIX}/clients?limit=2`, headers: { 'x-api-key': key } });
  assertError(t, wrongMethod, 404, 'route_not_found', { path: `${API_PREFIX}/clients` });

  const prefixOnly = await inject(h.app, { method: 'GET', url: API_PREFIX });
  assertError(t, prefixOnly, 404, 'route_not_found', { path: API_PREFIX });

  const underDocs = await inject(h.app, { method: 'GET', url: `${API_PREFIX}/docs/no-such-document` });
  assertError(t, underDocs, 404, 'route_not_found', { path: `${API_PREFIX}/docs/no-such-document` });

  const outside = await inject(h.app, { method: 'GET', url: '/no/such/page?q=1' });
  assertError(t, outside, 404, 'route_not_found', { path: '/no/such/page' });

  const outsidePost = await inject(h.app, { method: 'POST', url: '/nothing-here', payload: '{}', headers: { 'content-type': 'application/json' } });
  assertError(t, outsidePost, 404, 'route_not_found', { path: '/nothing-here' });
});

t.test('URLs the router itself rejects still get the envelope', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);

  // Fastify answers these before any route or hook runs (bad percent-encoding, over-long path
  // parameter); docs/decisions.md §13: every error, Fastify's own included, has the envelope.
  const badEncoding = await inject(h.app, { method: 'GET', url: `${API_PREFIX}/clients/%zz`, headers: { 'x-api-key': key } });
  t.equal(badEncoding.status, 400);
  t.ok(isEnvelope(badEncoding.body), 'is the error envelope', { found: badEncoding.body });
  t.equal(badEncoding.body?.code, 'validation_error');
  t.equal(badEncoding.headers['x-request-id'], badEncoding.body?.request_id);

  const longParam = await inject(h.app, { method: 'GET', url: `${API_PREFIX}/clients/${'a'.repeat(300)}`, headers: { 'x-api-key': key } });
  t.equal(longParam.status, 400, 'an over-long id is a malformed id');
  t.ok(isEnvelope(longParam.body), 'is the error envelope', { found: longParam.body });
  t.equal(longParam.body?.code, 'validation_error');
  t.equal(longParam.headers['x-request-id'], longParam.body?.request_id);
});

t.test('malformed JSON is 400 validation_error', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['clients:create']);
  for (const raw of ['{"name": "Ana", "email": ', '{name: "Ana"}', "{'a':1}", '[1,2', 'nul']) {
    const res = await h.api('POST', '/clients?debug=1', { key, raw });
    t.equal(res.status, 400, `400 for ${raw}`);
    t.ok(isEnvelope(res.body));
    t.equal(res.body.code, 'validation_error');
    t.equal(res.body.retry, 'never');
    t.equal(res.body.path, `${API_PREFIX}/clients`);
    t.equal(res.headers['x-request-id'], res.body.request_id);
  }
  // A charset parameter is still JSON.
  const withCharset = await h.api('POST', '/clients', {
    key,
    raw: '{"name":"Ana","email":"ana@example.cl"}',
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
  t.equal(withCharset.status, 201);
  // Nothing was created by the malformed requests.
  const [row] = await h.sql`SELECT count(*)::int AS n FROM clients`;
  t.equal(row!.n, 1);
});

t.test('a lone UTF-16 surrogate in a string or a field name is 422 naming the field, never stored or a 500', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);
  for (const [raw, field] of [
    ['{"name":"Ana \\ud800","email":"ana@example.cl"}', 'name'],
    ['{"name":"Ana","email":"ana@example.cl","address":"\\udc00 Providencia"}', 'address'],
    ['{"name":"Ana","email":"ana@example.cl","\\ud83d":"x"}', 'lone surrogate'],
  ] as const) {
    const res = await h.api('POST', '/clients', { key, raw });
    t.equal(res.status, 422, `422 for ${raw}`);
    t.equal(res.body.code, 'validation_error');
    t.match(JSON.stringify(res.body.details), field, `the field is named: ${field}`);
  }
  const paired = await h.api('POST', '/clients', { key, raw: '{"name":"Ana \\ud83d\\ude00","email":"ana@example.cl"}' });
  t.equal(paired.status, 201, 'a surrogate pair (an emoji) is well-formed and accepted');
  const [row] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM clients`;
  t.equal(row!.n, 1, 'only the well-formed client was stored');
});

t.test('a body over 1 MiB is 413 payload_too_large; exactly 1 MiB is parsed', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['clients:create']);
  const build = (total: number) => {
    const head = '{"name":"';
    const tail = '","email":"big@example.cl"}';
    return head + 'x'.repeat(total - head.length - tail.length) + tail;
  };
  const atLimit = build(ONE_MIB);
  t.equal(Buffer.byteLength(atLimit), ONE_MIB);
  const ok = await h.api('POST', '/clients', { key, raw: atLimit });
  t.equal(ok.status, 422, 'exactly 1 MiB reaches validation (the name is too long)');
  t.equal(ok.body.details.errors[0].path, 'name');

  const over = await h.api('POST', '/clients?x=1', { key, raw: build(ONE_MIB + 1) });
  t.equal(over.status, 413);
  t.ok(isEnvelope(over.body));
  t.equal(over.body.code, 'payload_too_large');
  t.equal(over.body.retry, 'never');
  t.equal(over.body.path, `${API_PREFIX}/clients`);
  t.equal(over.headers['x-request-id'], over.body.request_id);

  const huge = await h.api('POST', '/clients', { key, raw: build(3 * ONE_MIB) });
  t.equal(huge.status, 413);
  t.equal(huge.body.code, 'payload_too_large');
});

t.test('a body that is not application/json is 415 validation_error', async (t) => {
  const h = await testApp(t);
  const { key, merchantId } = await h.key(['clients:create']);
  const { key: readKey } = await h.key(['clients:read'], { merchantId });
  const json = '{"name":"Ana","email":"ana@example.cl"}';
  for (const ct of ['text/plain', 'text/plain; charset=utf-8', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
    const res = await h.api('POST', '/clients?x=1', { key, raw: json, headers: { 'content-type': ct } });
    t.equal(res.status, 415, `415 for ${ct}`);
    t.ok(isEnvelope(res.body), 'is the error envelope', { found: res.body });
    t.equal(res.body?.code, 'validation_error');
    t.equal(res.body?.path, `${API_PREFIX}/clients`);
    t.equal(res.headers['x-request-id'], res.body?.request_id);
  }
  // Also on PATCH with a well-formed id.
  const created = await h.api('POST', '/clients', { key, body: { name: 'Ana', email: 'ana@example.cl' } });
  t.equal(created.status, 201);
  const patch = await h.api('PATCH', `/clients/${created.body.id}`, { key, raw: '{"name":"Other"}', headers: { 'content-type': 'text/plain' } });
  t.equal(patch.status, 415);
  t.equal(patch.body?.code, 'validation_error');
  const after = await h.api('GET', `/clients/${created.body.id}`, { key: readKey });
  t.equal(after.body.name, 'Ana', 'a rejected body changes nothing');
  const [row] = await h.sql`SELECT count(*)::int AS n FROM clients`;
  t.equal(row!.n, 1, 'no client created by the 415 requests');
});

t.test('validation errors are 422 with details.errors', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['clients:create']);
  const res = await h.api('POST', '/clients', { key, body: { name: '', email: 'nope', colour: 'red' } });
  t.equal(res.status, 422);
  t.ok(isEnvelope(res.body));
  t.equal(res.body.code, 'validation_error');
  t.equal(res.body.retry, 'never');
  const paths = res.body.details.errors.map((e: { path: string }) => e.path).sort();
  t.same(paths, ['colour', 'email', 'name']);
  for (const e of res.body.details.errors) t.type(e.message, 'string');
});

t.test('the database being unreachable is 503 service_unavailable, never 401', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);

  const deadUrl = 'postgres://postgres@127.0.0.1:1/x';
  const dead = createSql(deadUrl, { connectTimeout: 2 });
  t.teardown(() => dead.end({ timeout: 1 }));
  const down = await appWithoutDatabase(t, dead, deadUrl);

  const cases: Array<[string, string, Record<string, string>]> = [
    ['valid key', `${API_PREFIX}/clients?limit=5`, { 'x-api-key': key }],
    ['valid key, id route', `${API_PREFIX}/clients/${SOME_UUID}`, { 'x-api-key': key }],
    ['unknown key', `${API_PREFIX}/clients`, { 'x-api-key': `ik_live_${'Z'.repeat(32)}` }],
    ['no key', `${API_PREFIX}/clients`, {}],
  ];
  for (const [label, url, headers] of cases) {
    const started = Date.now();
    const res = await inject(down.app, { method: 'GET', url, headers });
    const took = Date.now() - started;
    assertError(t, res, 503, 'service_unavailable', { what: label, path: url.split('?')[0]! });
    t.equal(res.body?.retry, 'safe', `${label}: retry safe`);
    t.ok(took < 5000, `${label}: answered in ${took} ms`);
  }

  // A POST with a body, too.
  const post = await inject(down.app, {
    method: 'POST',
    url: `${API_PREFIX}/clients`,
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    payload: JSON.stringify({ name: 'Ana', email: 'ana@example.cl' }),
  });
  t.equal(post.status, 503);
  t.equal(post.body?.code, 'service_unavailable');

  const ready = await inject(down.app, { method: 'GET', url: '/readyz' });
  t.equal(ready.status, 503);
  t.equal(ready.body?.code, 'service_unavailable');
  t.ok(isEnvelope(ready.body));
  const healthy = await inject(down.app, { method: 'GET', url: '/healthz' });
  t.equal(healthy.status, 200, 'the process is up even when the database is not');
});

t.test('a database that accepts connections but never answers is 503 within 5 s', async (t) => {
  // A TCP server that swallows everything: the driver's connect timeout (the app's default pool
  // settings, 4 s) must turn it into a 503 before the 5 s the decisions allow.
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const port = (server.address() as net.AddressInfo).port;
  const url = `postgres://postgres@127.0.0.1:${port}/x`;
  const hung = createSql(url);
  t.teardown(() => hung.end({ timeout: 1 }));
  const down = await appWithoutDatabase(t, hung, url);

  const started = Date.now();
  const res = await inject(down.app, { method: 'GET', url: `${API_PREFIX}/clients`, headers: { 'x-api-key': `ik_live_${'A'.repeat(32)}` } });
  const took = Date.now() - started;
  t.equal(res.status, 503);
  t.equal(res.body?.code, 'service_unavailable');
  t.ok(took < 5000, `answered in ${took} ms`);
});

t.test('/healthz and /readyz', async (t) => {
  const h = await testApp(t);
  const health = await inject(h.app, { method: 'GET', url: '/healthz' });
  t.equal(health.status, 200);
  t.equal(health.body.status, 'ok');
  const ready = await inject(h.app, { method: 'GET', url: '/readyz' });
  t.equal(ready.status, 200);
  t.equal(ready.body.status, 'ready');

  // Readiness means migrations applied too: forget one and it is not ready.
  const [last] = await h.sql<{ name: string }[]>`SELECT name FROM schema_migrations ORDER BY name DESC LIMIT 1`;
  await h.sql`DELETE FROM schema_migrations WHERE name = ${last!.name}`;
  const notReady = await inject(h.app, { method: 'GET', url: '/readyz' });
  t.equal(notReady.status, 503);
  t.equal(notReady.body.code, 'service_unavailable');
});

t.test('X-Request-Id is echoed when valid, generated otherwise, and equals request_id', async (t) => {
  const h = await testApp(t);
  const given = 'req-2026.11:abc_DEF-123';
  const echoed = await inject(h.app, { method: 'GET', url: `${API_PREFIX}/clients`, headers: { 'x-request-id': given } });
  t.equal(echoed.status, 401);
  t.equal(echoed.headers['x-request-id'], given);
  t.equal(echoed.body.request_id, given);

  for (const bad of ['has spaces in it', 'x'.repeat(129), 'semi;colon', '']) {
    const res = await inject(h.app, { method: 'GET', url: '/nowhere', headers: { 'x-request-id': bad } });
    t.not(res.headers['x-request-id'], bad, `invalid id ${JSON.stringify(bad.slice(0, 20))} is replaced`);
    t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/);
    t.equal(res.body.request_id, res.headers['x-request-id']);
  }

  // Successful responses carry one too, and two requests never share one.
  const a = await inject(h.app, { method: 'GET', url: '/healthz' });
  const b = await inject(h.app, { method: 'GET', url: '/healthz' });
  t.type(a.headers['x-request-id'], 'string');
  t.not(a.headers['x-request-id'], b.headers['x-request-id']);
});
