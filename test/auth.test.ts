import t from 'tap';
import { randomUUID } from 'node:crypto';
import { inject, testApp, type ApiResponse } from './helpers/app.js';
import { assertError } from './helpers/assertions.js';
import { apiRoutes } from '../src/routes.js';
import { scopes, type Scope } from '../src/http/scopes.js';
import { API_PREFIX } from '../src/http/urls.js';
import { clock } from '../src/clock.js';
import { FLUSH_INTERVAL_MS } from '../src/http/rate-limit.js';
import * as merchants from '../src/merchants/service.js';

type Asserts = Pick<typeof t, 'equal' | 'ok' | 'same' | 'match'>;

const RATE_HEADERS = ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'] as const;

/** `/clients/:client_id` → `/clients/<uuid>` */
function fillPath(path: string, id: () => string = randomUUID): string {
  return path.replace(/:([A-Za-z_]+)/g, () => id());
}

function label(def: { method: string; path: string }): string {
  return `${def.method} ${def.path}`;
}

/** The three rate-limit headers are present and coherent. */
function assertRateHeaders(t: Asserts, res: { headers: ApiResponse['headers'] }, what: string, limit?: number): void {
  for (const h of RATE_HEADERS) t.match(String(res.headers[h]), /^\d+$/, `${what}: ${h} is an integer`);
  const l = Number(res.headers['x-ratelimit-limit']);
  const remaining = Number(res.headers['x-ratelimit-remaining']);
  const reset = Number(res.headers['x-ratelimit-reset']);
  if (limit !== undefined) t.equal(l, limit, `${what}: limit ${limit}`);
  t.ok(remaining >= 0 && remaining <= l, `${what}: 0 <= remaining <= limit`);
  const nowSec = clock.now().getTime() / 1000;
  t.ok(reset > nowSec - 1 && reset <= nowSec + 61, `${what}: reset is the end of the current window (Unix seconds)`, { reset, nowSec });
}

/** Moves business time to just after the start of a fresh rate-limit window, so a burst never straddles two windows. */
function freshWindow(t: { teardown(fn: () => unknown): void }): void {
  const now = clock.now().getTime();
  clock.advance(60_000 - (now % 60_000) + 250);
  t.teardown(() => clock.reset());
}

t.test('a missing key is 401 missing_api_key; an unknown one 401 invalid_api_key', async (t) => {
  const h = await testApp(t);
  await h.key(['*']);
  assertError(t, await h.api('GET', '/clients'), 401, 'missing_api_key', 'no header');
  assertError(t, await h.api('GET', '/clients', { headers: { 'x-api-key': '' } }), 401, 'missing_api_key', 'empty header');
  const missing = await h.api('POST', '/clients', { body: { name: 'Ana', email: 'ana@example.cl' } });
  assertError(t, missing, 401, 'missing_api_key', 'POST without key');
  t.equal(missing.body.retry, 'never');

  for (const bad of [`ik_live_${'A'.repeat(32)}`, 'nonsense', 'ik_live_', 'x'.repeat(500), ' '.repeat(3)]) {
    const res = await h.api('GET', '/clients', { key: bad });
    assertError(t, res, 401, 'invalid_api_key', `key ${JSON.stringify(bad.slice(0, 12))}`);
    t.equal(res.body.retry, 'never');
  }
  // A valid key with a character changed is no key at all.
  const { key } = await h.key(['clients:read']);
  const flipped = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
  assertError(t, await h.api('GET', '/clients', { key: flipped }), 401, 'invalid_api_key', 'altered key');
  t.equal((await h.api('GET', '/clients', { key })).status, 200, 'the real key works');
  // Keys are sent in X-API-Key, not as a bearer token.
  assertError(t, await h.api('GET', '/clients', { headers: { authorization: `Bearer ${key}` } }), 401, 'missing_api_key', 'bearer');
  // Nothing was created by the unauthenticated POST.
  const [row] = await h.sql`SELECT count(*)::int AS n FROM clients`;
  t.equal(row!.n, 0);
});

t.test('spellings of an API path that reach a route are authenticated like it', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['clients:read']);
  for (const url of [
    '/api/v1/%65xternal/clients',
    '/api/v1/external/cl%69ents',
    '/api/v1/external/clients/',
    '/api/v1/external/./clients',
    '/api/v1/external/x/../clients',
    `/api/%76%31/external/clients/${randomUUID()}`,
  ]) {
    const anonymous = await inject(h.app, { url });
    assertError(t, anonymous, 401, 'missing_api_key', `${url} without a key`);
    const keyed = await inject(h.app, { url, headers: { 'x-api-key': key } });
    t.ok([200, 404].includes(keyed.status), `${url} with a key: ${keyed.status}`, { found: keyed.body });
    if (keyed.status === 404) t.equal(keyed.body?.code, 'client_not_found');
  }
});

t.test('a revoked key is 401 invalid_api_key', async (t) => {
  const h = await testApp(t);
  const unused = await h.key(['clients:read']);
  await merchants.revokeApiKey(h.sql, unused.id);
  assertError(t, await h.api('GET', '/clients', { key: unused.key }), 401, 'invalid_api_key', 'revoked before first use');

  const used = await h.key(['clients:read']);
  t.equal((await h.api('GET', '/clients', { key: used.key })).status, 200, 'works before revocation');
  await merchants.revokeApiKey(h.sql, used.id);

  // Another process (no cache of its own yet) refuses it at once.
  const other = await testApp(t, {}, { sql: h.sql, dbUrl: h.dbUrl });
  assertError(t, await other.api('GET', '/clients', { key: used.key }), 401, 'invalid_api_key', 'fresh process');

  // The process that saw the key before may keep it for its documented 5 s cache, no longer.
  await new Promise((r) => setTimeout(r, 5_100));
  assertError(t, await h.api('GET', '/clients', { key: used.key }), 401, 'invalid_api_key', 'after the 5 s cache');
});

t.test('scope matrix: every route checks its scope', async (t) => {
  const h = await testApp(t);
  const { merchantId } = await h.key(['*']);
  const star = (await h.key(['*'], { merchantId })).key;
  const granted = scopes.filter((s): s is Exclude<Scope, '*'> => s !== '*');
  const keys = new Map<string, { only: string; allBut: string }>();
  for (const s of granted) {
    keys.set(s, {
      only: (await h.key([s], { merchantId })).key,
      allBut: (await h.key(granted.filter((g) => g !== s), { merchantId })).key,
    });
  }
  t.ok(apiRoutes.length >= 8, 'the route list is not empty');

  for (const def of apiRoutes) {
    const path = fillPath(def.path);
    const what = `${label(def)}`;
    if (def.scope === null) {
      // Any valid key: one with a single unrelated scope must pass the scope check.
      const res = await h.api(def.method, path, { key: keys.get('clients:read')!.only });
      t.not(res.status, 403, `${what} needs no scope`);
      t.not(res.status, 401, `${what} accepts any valid key`);
      continue;
    }
    t.ok((scopes as readonly string[]).includes(def.scope), `${what}: ${def.scope} is a known scope`);

    const lacking = await h.api(def.method, path, { key: keys.get(def.scope)!.allBut });
    assertError(t, lacking, 403, 'insufficient_scope', `${what} with every scope but ${def.scope}`);
    t.same(lacking.body?.details, { required_scope: def.scope }, `${what}: details.required_scope is ${def.scope}`);
    t.equal(lacking.body?.retry, 'never');
    assertRateHeaders(t, lacking, `${what} 403`);

    const exact = await h.api(def.method, path, { key: keys.get(def.scope)!.only });
    t.not(exact.status, 403, `${what} with exactly ${def.scope} is not 403`, { found: exact.body });
    t.not(exact.status, 401, `${what} with exactly ${def.scope} is not 401`);

    const all = await h.api(def.method, path, { key: star });
    t.not(all.status, 403, `${what} with * is not 403`, { found: all.body });
    t.not(all.status, 401, `${what} with * is not 401`);
    t.ok(all.status < 500, `${what} with * does not fail (${all.status})`, { found: all.body });
  }
});

t.test('a malformed path id: 400 (422 on webhook routes), after the scope check', async (t) => {
  const h = await testApp(t);
  const { merchantId, key: star } = await h.key(['*']);
  const withParams = apiRoutes.filter((def) => /:[A-Za-z_]+/.test(def.path));
  t.ok(withParams.length >= 4, 'there are routes with path ids');
  for (const def of withParams) {
    const expected = def.path.startsWith('/webhooks') ? 422 : 400;
    const res = await h.api(def.method, fillPath(def.path, () => 'not-a-uuid'), { key: star, ...(def.method === 'GET' ? {} : { body: {} }) });
    assertError(t, res, expected, 'validation_error', `${label(def)} malformed id`);
    const names = [...def.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]);
    t.same(res.body?.details?.errors?.map((e: { path: string }) => e.path), names, `${label(def)}: names ${names.join(', ')}`);
    if (def.scope) {
      const other = scopes.find((s) => s !== '*' && s !== def.scope)!;
      const lacking = await h.api(def.method, fillPath(def.path, () => 'not-a-uuid'), { key: (await h.key([other], { merchantId })).key });
      assertError(t, lacking, 403, 'insufficient_scope', `${label(def)} malformed id without the scope`);
    }
  }
});

t.test('address allow list', async (t) => {
  const h = await testApp(t);
  const { merchantId } = await h.key(['*']);
  const mk = (allowed_ips: string[]) => h.key(['clients:read'], { merchantId, allowed_ips }).then((k) => k.key);

  const tenNet = await mk(['10.0.0.0/8']);
  const denied = await h.api('GET', '/clients', { key: tenNet });
  assertError(t, denied, 403, 'ip_not_allowed', '10.0.0.0/8 from 127.0.0.1');
  t.equal(denied.body.retry, 'never');
  assertRateHeaders(t, denied, 'ip_not_allowed');

  t.equal((await h.api('GET', '/clients', { key: await mk(['127.0.0.1/32']) })).status, 200, '127.0.0.1/32');
  t.equal((await h.api('GET', '/clients', { key: await mk(['127.0.0.1']) })).status, 200, 'a bare address');
  t.equal((await h.api('GET', '/clients', { key: await mk(['10.0.0.0/8', '127.0.0.0/8']) })).status, 200, 'any range of several');
  t.equal((await h.api('GET', '/clients', { key: await mk(['127.0.0.2/32']) })).status, 403, 'a neighbour address');

  // IPv6 and IPv4-mapped IPv6 sockets.
  const v6 = await mk(['::1/128']);
  t.equal((await inject(h.app, { url: `${API_PREFIX}/clients`, headers: { 'x-api-key': v6 }, remoteAddress: '::1' })).status, 200, '::1 in ::1/128');
  assertError(t, await inject(h.app, { url: `${API_PREFIX}/clients`, headers: { 'x-api-key': v6 }, remoteAddress: '127.0.0.1' }), 403, 'ip_not_allowed', '127.0.0.1 not in ::1/128');
  const loop4 = await mk(['127.0.0.0/8']);
  t.equal((await inject(h.app, { url: `${API_PREFIX}/clients`, headers: { 'x-api-key': loop4 }, remoteAddress: '::ffff:127.0.0.1' })).status, 200, 'IPv4-mapped address');
  assertError(t, await inject(h.app, { url: `${API_PREFIX}/clients`, headers: { 'x-api-key': loop4 }, remoteAddress: '::1' }), 403, 'ip_not_allowed', '::1 not in 127.0.0.0/8');

  // X-Forwarded-For is ignored unless TRUST_PROXY is set...
  const spoof = await h.api('GET', '/clients', { key: tenNet, headers: { 'x-forwarded-for': '10.1.2.3' } });
  assertError(t, spoof, 403, 'ip_not_allowed', 'X-Forwarded-For without TRUST_PROXY');
  // ...and with it (one hop: Heroku's router), the entry the router appended is the client.
  const proxied = await testApp(t, { TRUST_PROXY: 'true' }, { sql: h.sql, dbUrl: h.dbUrl });
  t.equal((await proxied.api('GET', '/clients', { key: tenNet, headers: { 'x-forwarded-for': '192.168.0.1, 10.1.2.3' } })).status, 200, 'rightmost entry 10.1.2.3 allowed');
  assertError(
    t,
    await proxied.api('GET', '/clients', { key: tenNet, headers: { 'x-forwarded-for': '10.1.2.3, 192.168.0.1' } }),
    403,
    'ip_not_allowed',
    'a client-written leftmost entry is never trusted',
  );
  assertError(
    t,
    await proxied.api('GET', '/clients', { key: await mk(['127.0.0.1/32']), headers: { 'x-forwarded-for': '10.1.2.3' } }),
    403,
    'ip_not_allowed',
    'behind a proxy the socket address no longer counts',
  );
});

t.test('order of checks: key → address → rate limit → scope → path id → body → existence', async (t) => {
  const h = await testApp(t);
  freshWindow(t);
  const { merchantId } = await h.key(['*']);
  const clientsPath = `/clients/${randomUUID()}`;

  // 1. The key comes first: nothing about the request matters without one.
  assertError(t, await h.api('PATCH', '/clients/not-a-uuid', { raw: '{bad json', headers: { 'content-type': 'text/plain' } }), 401, 'missing_api_key', 'no key, bad everything');
  assertError(t, await h.api('PATCH', '/clients/not-a-uuid', { key: 'ik_live_nope', raw: '{bad' }), 401, 'invalid_api_key', 'bad key, bad everything');
  assertError(t, await h.api('POST', '/clients', { raw: 'x'.repeat(2 * 1024 * 1024) }), 401, 'missing_api_key', 'no key, huge body');

  // 2. The address before the rate limit and the scope.
  const walled = (await h.key(['invoices:read'], { merchantId, allowed_ips: ['10.0.0.0/8'], rate_limit: 1 })).key;
  for (let i = 0; i < 3; i++) {
    assertError(t, await h.api('PATCH', '/clients/not-a-uuid', { key: walled, body: {} }), 403, 'ip_not_allowed', `walled key, request ${i + 1}`);
  }

  // 3. The rate limit before the scope.
  const limited = (await h.key(['invoices:read'], { merchantId, rate_limit: 2 })).key;
  assertError(t, await h.api('GET', '/clients', { key: limited }), 403, 'insufficient_scope', 'first request');
  assertError(t, await h.api('GET', '/clients', { key: limited }), 403, 'insufficient_scope', 'second request');
  assertError(t, await h.api('GET', '/clients', { key: limited }), 429, 'rate_limited', 'third request');

  // 4. The scope before the path id.
  const reader = (await h.key(['clients:read'], { merchantId })).key;
  const scoped = await h.api('PATCH', '/clients/not-a-uuid', { key: reader, raw: '{bad' });
  assertError(t, scoped, 403, 'insufficient_scope', 'wrong scope, malformed id');
  t.same(scoped.body.details, { required_scope: 'clients:create' });

  // 5. The path id before the body, whatever is wrong with the body.
  const writer = (await h.key(['clients:create', 'clients:read'], { merchantId })).key;
  const idFirst: Array<[string, { body?: unknown; raw?: string; headers?: Record<string, string> }]> = [
    ['invalid fields', { body: { name: '', bogus: 1 } }],
    ['malformed JSON', { raw: '{"name":' }],
    ['text/plain', { raw: '{"name":"x"}', headers: { 'content-type': 'text/plain' } }],
    ['application/xml', { raw: '<name>x</name>', headers: { 'content-type': 'application/xml' } }],
  ];
  for (const [what, opts] of idFirst) {
    const res = await h.api('PATCH', '/clients/not-a-uuid', { key: writer, ...opts });
    assertError(t, res, 400, 'validation_error', `malformed id + ${what}`);
    t.same(res.body?.details?.errors?.map((e: { path: string }) => e.path), ['client_id'], `malformed id + ${what}: names client_id`);
  }

  // 6. The body before existence.
  const badBody = await h.api('PATCH', clientsPath, { key: writer, body: { name: '' } });
  assertError(t, badBody, 422, 'validation_error', 'missing id + invalid body');
  assertError(t, await h.api('PATCH', clientsPath, { key: writer, raw: '{"name":"x"}', headers: { 'content-type': 'text/plain' } }), 415, 'validation_error', 'missing id + text/plain');
  assertError(t, await h.api('PATCH', clientsPath, { key: writer, raw: '{"name":' }), 400, 'validation_error', 'missing id + malformed JSON');
  assertError(t, await h.api('GET', '/clients?limit=0', { key: writer }), 422, 'validation_error', 'bad query');

  // 7. Existence before conflicts: a missing client is 404 even with an e-mail that is taken.
  t.equal((await h.api('POST', '/clients', { key: writer, body: { name: 'Ana', email: 'ana@example.cl' } })).status, 201);
  assertError(t, await h.api('PATCH', clientsPath, { key: writer, body: { email: 'ana@example.cl' } }), 404, 'client_not_found', 'missing id + taken e-mail');
});

t.test('every API response carries the rate-limit headers', async (t) => {
  const h = await testApp(t);
  freshWindow(t);
  const { key, merchantId } = await h.key(['clients:create', 'clients:read']);
  const reader = (await h.key(['clients:read'], { merchantId })).key;
  const walled = (await h.key(['clients:read'], { merchantId, allowed_ips: ['10.0.0.0/8'] })).key;

  const created = await h.api('POST', '/clients', { key, body: { name: 'Ana', email: 'ana@example.cl' } });
  const cases: Array<[string, number, ApiResponse]> = [
    ['201 create', 201, created],
    ['200 list', 200, await h.api('GET', '/clients', { key })],
    ['200 get', 200, await h.api('GET', `/clients/${created.body.id}`, { key })],
    ['401 missing key', 401, await h.api('GET', '/clients')],
    ['401 invalid key', 401, await h.api('GET', '/clients', { key: 'ik_live_nope' })],
    ['403 scope', 403, await h.api('POST', '/clients', { key: reader, body: {} })],
    ['403 address', 403, await h.api('GET', '/clients', { key: walled })],
    ['404 route (no key)', 404, await h.api('GET', '/no-such-route')],
    ['404 route (key)', 404, await h.api('GET', '/no-such-route', { key })],
    ['404 route (wrong method)', 404, await h.api('DELETE', '/clients', { key })],
    ['404 route (under docs)', 404, await h.api('GET', '/docs/no-such-document')],
    ['404 client', 404, await h.api('GET', `/clients/${randomUUID()}`, { key })],
    ['409 conflict', 409, await h.api('POST', '/clients', { key, body: { name: 'Ana', email: 'ANA@example.cl' } })],
    ['400 malformed id', 400, await h.api('GET', '/clients/nope', { key })],
    ['400 malformed JSON', 400, await h.api('POST', '/clients', { key, raw: '{' })],
    ['415 text/plain', 415, await h.api('POST', '/clients', { key, raw: '{}', headers: { 'content-type': 'text/plain' } })],
    ['413 too large', 413, await h.api('POST', '/clients', { key, raw: JSON.stringify({ name: 'x'.repeat(1_100_000) }) })],
    ['422 invalid', 422, await h.api('POST', '/clients', { key, body: { name: '' } })],
  ];
  for (const [what, status, res] of cases) {
    t.equal(res.status, status, `${what}: status`, { found: res.body });
    assertRateHeaders(t, res, what);
  }
  // The key's counter went down by one per keyed request.
  const a = await h.api('GET', '/clients', { key });
  const b = await h.api('GET', '/clients', { key });
  t.equal(Number(b.headers['x-ratelimit-remaining']), Number(a.headers['x-ratelimit-remaining']) - 1, 'remaining counts down');
  t.equal(a.headers['x-ratelimit-limit'], '600', 'default limit 600 per minute');
});

t.test('a key over its limit gets 429 rate_limited with Retry-After', async (t) => {
  const h = await testApp(t);
  freshWindow(t);
  const { id, key, merchantId } = await h.key(['clients:read'], { rate_limit: 3 });
  const sibling = (await h.key(['clients:read'], { merchantId, rate_limit: 3 })).key;
  t.ok(id);

  for (const remaining of [2, 1, 0]) {
    const res = await h.api('GET', '/clients', { key });
    t.equal(res.status, 200);
    assertRateHeaders(t, res, `remaining ${remaining}`, 3);
    t.equal(res.headers['x-ratelimit-remaining'], String(remaining));
  }
  for (let i = 0; i < 2; i++) {
    const limited = await h.api('GET', '/clients', { key });
    assertError(t, limited, 429, 'rate_limited', `request ${4 + i}`);
    assertRateHeaders(t, limited, '429', 3);
    t.equal(limited.headers['x-ratelimit-remaining'], '0');
    const retryAfter = String(limited.headers['retry-after']);
    t.match(retryAfter, /^\d+$/, 'Retry-After in whole seconds');
    const n = Number(retryAfter);
    t.ok(n >= 1 && n <= 60, `1 <= Retry-After (${n}) <= 60`);
    t.equal(limited.body.retry, `after_seconds:${n}`, 'retry names the same N');
    const untilReset = Number(limited.headers['x-ratelimit-reset']) - clock.now().getTime() / 1000;
    t.ok(Math.abs(n - untilReset) <= 1, `Retry-After is the time left in the window (${n} vs ${untilReset.toFixed(1)})`);
  }
  // Other routes share the key's budget; other keys have their own.
  assertError(t, await h.api('GET', `/clients/${randomUUID()}`, { key }), 429, 'rate_limited', 'another route');
  t.equal((await h.api('GET', '/clients', { key: sibling })).status, 200, 'another key of the same merchant is not limited');

  // The next window starts afresh.
  clock.advance(60_000);
  const next = await h.api('GET', '/clients', { key });
  t.equal(next.status, 200, 'next window');
  t.equal(next.headers['x-ratelimit-remaining'], '2');
});

t.test('two processes on one database share one counter', async (t) => {
  const h1 = await testApp(t);
  freshWindow(t);
  const h2 = await testApp(t, {}, { sql: h1.sql, dbUrl: h1.dbUrl });
  const { key } = await h1.key(['clients:read'], { rate_limit: 3 });
  // Each process shares its counts every FLUSH_INTERVAL_MS; this is one such exchange, in both directions.
  const settle = async () => {
    await h1.app.rateLimiter.flush();
    await h2.app.rateLimiter.flush();
    await h1.app.rateLimiter.flush();
  };

  const seen: Array<[string, ApiResponse]> = [];
  seen.push(['1st on A', await h1.api('GET', '/clients', { key })]);
  await settle();
  seen.push(['2nd on B', await h2.api('GET', '/clients', { key })]);
  await settle();
  seen.push(['3rd on A', await h1.api('GET', '/clients', { key })]);
  await settle();
  seen.push(['4th on B', await h2.api('GET', '/clients', { key })]);
  t.same(seen.map(([, r]) => r.status), [200, 200, 200, 429]);
  t.same(seen.map(([, r]) => r.headers['x-ratelimit-remaining']), ['2', '1', '0', '0']);
  assertError(t, seen[3]![1], 429, 'rate_limited', '4th overall');
  await settle();
  assertError(t, await h1.api('GET', '/clients', { key }), 429, 'rate_limited', '5th overall, back on A');
});

t.test('a process shares its counts on its own within a flush interval, and the rest when it closes', async (t) => {
  const h = await testApp(t);
  freshWindow(t);
  const { id, key } = await h.key(['clients:read']);
  const other = await h.key(['clients:read']);
  const shared = async (keyId: string) =>
    (await h.sql<{ hits: number }[]>`SELECT coalesce(sum(hits), 0)::int AS hits FROM rate_limit_windows WHERE bucket = ${`key:${keyId}`}`)[0]!.hits;

  for (let i = 0; i < 5; i++) t.equal((await h.api('GET', '/clients', { key })).status, 200);
  await new Promise((r) => setTimeout(r, FLUSH_INTERVAL_MS * 3));
  t.equal(await shared(id), 5, 'every hit reached the shared counter');

  // A second instance on the same database: what the first has not shared yet is sent on close.
  const h2 = await testApp(t, {}, { sql: h.sql, dbUrl: h.dbUrl });
  for (let i = 0; i < 4; i++) t.equal((await h2.api('GET', '/clients', { key: other.key })).status, 200);
  await h2.app.close();
  t.equal(await shared(other.id), 4, 'closing flushed the unsent hits');
});

t.test('the limiter: hits of a window that closed before they were shared still count, in that window', async (t) => {
  const h = await testApp(t);
  freshWindow(t);
  const limiter = h.app.rateLimiter;
  const windowOf = () => Math.floor(clock.now().getTime() / 60_000) * 60;
  const rows = async () =>
    (await h.sql<{ window_start: string; hits: number }[]>`
      SELECT window_start::text, hits FROM rate_limit_windows WHERE bucket = 'test:rollover' ORDER BY window_start`).map((r) => [Number(r.window_start), r.hits]);
  const first = windowOf();
  t.match(await limiter.hit('test:rollover', 10), { remaining: 9, exceeded: false }, 'the first hit of a window is shared at once');
  t.match(await limiter.hit('test:rollover', 10), { remaining: 8 });
  t.match(await limiter.hit('test:rollover', 10), { remaining: 7 });
  clock.advance(60_000);
  t.match(await limiter.hit('test:rollover', 10), { remaining: 9, reset: first + 120 }, 'a new window starts afresh');
  await limiter.flush();
  t.same(await rows(), [
    [first, 3],
    [first + 60, 1],
  ]);
});

t.test('requests with no valid key are limited per client address', async (t) => {
  const h = await testApp(t, { RATE_LIMIT_PER_MINUTE: '3' });
  freshWindow(t);
  const { key } = await h.key(['clients:read'], { rate_limit: 50 });

  const first = await h.api('GET', '/clients');
  assertError(t, first, 401, 'missing_api_key', '1st');
  assertRateHeaders(t, first, 'unauthenticated', 3);
  t.equal(first.headers['x-ratelimit-remaining'], '2');
  assertError(t, await h.api('GET', '/clients', { key: 'ik_live_wrong' }), 401, 'invalid_api_key', '2nd');
  assertError(t, await h.api('GET', '/nowhere'), 404, 'route_not_found', '3rd');
  const limited = await h.api('GET', '/clients');
  assertError(t, limited, 429, 'rate_limited', '4th without a key');
  t.equal(limited.body.retry, `after_seconds:${limited.headers['retry-after']}`);
  assertError(t, await h.api('GET', '/clients', { key: 'ik_live_guess' }), 429, 'rate_limited', 'guessing keys is limited too');

  // Another address has its own budget, and a valid key its own.
  const elsewhere = await inject(h.app, { url: `${API_PREFIX}/clients`, remoteAddress: '192.0.2.7' });
  assertError(t, elsewhere, 401, 'missing_api_key', 'another address');
  const keyed = await h.api('GET', '/clients', { key });
  t.equal(keyed.status, 200, 'a valid key from the same address');
  t.equal(keyed.headers['x-ratelimit-limit'], '50');
});

t.test('a key never sees another merchant\'s data', async (t) => {
  const h = await testApp(t);
  const a = await h.key(['*']);
  const b = await h.key(['*']);
  t.not(a.merchantId, b.merchantId);

  const client = await h.api('POST', '/clients', { key: a.key, body: { name: 'Cliente de A', email: 'cliente@a.cl' } });
  t.equal(client.status, 201);
  const invoice = await h.api('POST', '/invoices', {
    key: a.key,
    body: { client: { name: 'Cliente de A', email: 'cliente@a.cl' }, due_date: '2099-12-31', items: [{ description: 'Servicio', unit_price: 1000 }] },
  });
  t.equal(invoice.status, 201, 'A creates an invoice', { found: invoice.body });
  const invoiceId: string = invoice.body.invoice_id;
  const clientId: string = client.body.id;
  t.equal(invoice.body.client_id, clientId, 'A reuses its own client');

  assertError(t, await h.api('GET', `/clients/${clientId}`, { key: b.key }), 404, 'client_not_found', 'B GET client');
  assertError(t, await h.api('PATCH', `/clients/${clientId}`, { key: b.key, body: { name: 'Hijacked' } }), 404, 'client_not_found', 'B PATCH client');
  assertError(t, await h.api('GET', `/invoices/${invoiceId}`, { key: b.key }), 404, 'invoice_not_found', 'B GET invoice');
  assertError(t, await h.api('GET', `/invoices/${invoiceId}/status`, { key: b.key }), 404, 'invoice_not_found', 'B GET invoice status');

  // Every route about one invoice or one client, whatever it does, with a body it takes (a
  // body it refuses is answered 422 before the invoice is looked up).
  for (const def of apiRoutes) {
    const param = /:(invoice_id|client_id)\b/.exec(def.path)?.[1];
    if (!param) continue;
    const path = def.path.replace(/:[A-Za-z_]+/g, param === 'invoice_id' ? invoiceId : clientId);
    const res = await h.api(def.method, path, { key: b.key, ...(def.method === 'GET' ? {} : { body: def.example?.body ?? {} }) });
    assertError(t, res, 404, param === 'invoice_id' ? 'invoice_not_found' : 'client_not_found', `B ${label(def)}`);
  }

  // B's lists hold nothing of A's; its own client with the same e-mail is a different one.
  t.same((await h.api('GET', '/clients', { key: b.key })).body.data, []);
  t.same((await h.api('GET', '/invoices', { key: b.key })).body.data, []);
  t.same((await h.api('GET', `/invoices?client_id=${clientId}`, { key: b.key })).body.data, []);
  const bInvoice = await h.api('POST', '/invoices', {
    key: b.key,
    body: { client: { name: 'Cliente de B', email: 'CLIENTE@a.cl' }, due_date: '2099-12-31', items: [{ description: 'Otro', unit_price: 500 }] },
  });
  t.equal(bInvoice.status, 201);
  t.not(bInvoice.body.client_id, clientId, "B's invoice does not reuse A's client");

  // A's data is untouched.
  const aClient = await h.api('GET', `/clients/${clientId}`, { key: a.key });
  t.equal(aClient.body.name, 'Cliente de A');
  const aInvoice = await h.api('GET', `/invoices/${invoiceId}`, { key: a.key });
  t.equal(aInvoice.status, 200);
  t.equal(aInvoice.body.status, 'draft');
  t.equal((await h.api('GET', '/clients', { key: a.key })).body.data.length, 1);
});

t.test('X-Request-Id on authentication errors', async (t) => {
  const h = await testApp(t);
  const reader = (await h.key(['clients:read'])).key;
  const given = 'trace-0001';
  const res = await h.api('POST', '/clients', { key: reader, body: {}, headers: { 'x-request-id': given } });
  assertError(t, res, 403, 'insufficient_scope');
  t.equal(res.headers['x-request-id'], given, 'echoed');
  t.equal(res.body.request_id, given);
  const generated = await h.api('GET', '/clients');
  t.match(generated.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  t.equal(generated.body.request_id, generated.headers['x-request-id']);
  const ok = await h.api('GET', '/clients', { key: reader, headers: { 'x-request-id': 'ok-123' } });
  t.equal(ok.status, 200);
  t.equal(ok.headers['x-request-id'], 'ok-123', 'echoed on success too');
});
