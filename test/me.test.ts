import t from 'tap';
import { testApp, isEnvelope } from './helpers/app.js';
import { clock } from '../src/clock.js';
import { API_PREFIX } from '../src/http/urls.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * Moves business time to the first second of a fresh one-minute rate-limit window, so a few
 * requests in a row are counted in the same window whatever the wall clock says.
 */
function startOfFreshWindow(t: { teardown(fn: () => unknown): void }): void {
  const nowMs = clock.now().getTime();
  const next = Math.ceil((nowMs + 1) / 60_000) * 60_000;
  clock.advance(next - nowMs + 1_000);
  t.teardown(() => clock.reset());
}

t.test('GET /me describes the key, its merchant and its rate limit', async (t) => {
  startOfFreshWindow(t);
  const h = await testApp(t);
  const m = await h.merchant({ name: 'Exportadora Sur Ltda', base_currency: 'USD' });
  const { key, id } = await h.key(['invoices:read', 'clients:create'], { merchantId: m.id, rate_limit: 50 });

  const first = await h.api('GET', '/me', { key });
  t.equal(first.status, 200);
  t.match(first.headers['content-type'], /^application\/json/);
  t.same(Object.keys(first.body).sort(), ['can_charge', 'dte', 'key', 'merchant', 'rate_limit']);
  t.same(first.body.merchant, { id: m.id, name: 'Exportadora Sur Ltda', base_currency: 'USD' });
  t.same(Object.keys(first.body.key).sort(), ['created_at', 'id', 'prefix', 'scopes']);
  t.equal(first.body.key.id, id);
  t.equal(first.body.key.prefix, key.slice(0, 12), 'prefix is the first 12 characters of the key');
  t.equal(first.body.key.prefix.length, 12);
  t.match(first.body.key.prefix, /^ik_live_/);
  t.same(first.body.key.scopes, ['invoices:read', 'clients:create']);
  t.match(first.body.key.created_at, ISO_MS);
  const [row] = await h.sql<{ created_at: Date }[]>`SELECT created_at FROM api_keys WHERE id = ${id}`;
  t.equal(first.body.key.created_at, row!.created_at.toISOString());
  t.equal(first.body.can_charge, false, 'no payment provider by default');
  t.notOk(JSON.stringify(first.body).includes(key), 'the full key is never echoed');

  // rate_limit is this key's window with this request counted, the same as the headers.
  t.same(Object.keys(first.body.rate_limit).sort(), ['limit', 'remaining', 'reset']);
  t.equal(first.body.rate_limit.limit, 50);
  t.equal(first.body.rate_limit.remaining, 49);
  t.equal(String(first.body.rate_limit.limit), first.headers['x-ratelimit-limit']);
  t.equal(String(first.body.rate_limit.remaining), first.headers['x-ratelimit-remaining']);
  t.equal(String(first.body.rate_limit.reset), first.headers['x-ratelimit-reset']);
  const nowSec = Math.floor(clock.now().getTime() / 1000);
  t.ok(first.body.rate_limit.reset > nowSec && first.body.rate_limit.reset <= nowSec + 60, 'reset is the end of the current window');
  t.equal(first.body.rate_limit.reset % 60, 0, 'windows are aligned to the minute');

  const second = await h.api('GET', '/me', { key });
  t.equal(second.status, 200);
  t.equal(second.body.rate_limit.remaining, 48, 'remaining decreases with each request');
  t.equal(second.body.rate_limit.reset, first.body.rate_limit.reset);
  t.equal(String(second.body.rate_limit.remaining), second.headers['x-ratelimit-remaining']);

  // Any other route counts in the same window.
  await h.api('GET', '/clients', { key });
  const third = await h.api('GET', '/me', { key });
  t.equal(third.body.rate_limit.remaining, 46);
});

t.test('GET /me uses the default limit for a key without its own', async (t) => {
  startOfFreshWindow(t);
  const h = await testApp(t, { RATE_LIMIT_PER_MINUTE: '7' });
  const { key } = await h.key(['*']);
  const res = await h.api('GET', '/me', { key });
  t.equal(res.status, 200);
  t.same(res.body.rate_limit.limit, 7);
  t.same(res.body.rate_limit.remaining, 6);
  t.same(res.body.key.scopes, ['*']);
});

t.test('remaining reaches 0 and the next request is rate limited', async (t) => {
  startOfFreshWindow(t);
  const h = await testApp(t);
  const { key } = await h.key(['clients:read'], { rate_limit: 2 });
  const a = await h.api('GET', '/me', { key });
  const b = await h.api('GET', '/me', { key });
  t.equal(a.body.rate_limit.remaining, 1);
  t.equal(b.body.rate_limit.remaining, 0);
  const c = await h.api('GET', '/me', { key });
  t.equal(c.status, 429);
  t.equal(c.body.code, 'rate_limited');
});

t.test('can_charge follows the merchant payment provider', async (t) => {
  const h = await testApp(t);
  const { key, merchantId } = await h.key(['clients:read']);
  const before = await h.api('GET', '/me', { key });
  t.equal(before.body.can_charge, false);

  await h.sql`UPDATE merchants SET payment_provider = 'sandbox' WHERE id = ${merchantId}`;
  const after = await h.api('GET', '/me', { key });
  t.equal(after.status, 200);
  t.equal(after.body.can_charge, true, 'seen at once, not after the key cache expires');

  await h.sql`UPDATE merchants SET payment_provider = NULL WHERE id = ${merchantId}`;
  t.equal((await h.api('GET', '/me', { key })).body.can_charge, false);

  const sandbox = await h.merchant({ payment_provider: 'sandbox' });
  const other = await h.key(['payments:read'], { merchantId: sandbox.id });
  const res = await h.api('GET', '/me', { key: other.key });
  t.equal(res.body.can_charge, true);
  t.equal(res.body.merchant.id, sandbox.id, 'each key sees its own merchant');
});

t.test('GET /me needs a valid key and no scope', async (t) => {
  const h = await testApp(t);
  // Scopes unrelated to anything /me shows still reach it.
  for (const scopes of [['webhooks:manage'], ['checkout:create'], ['payments:write', 'invoices:send']] as const) {
    const { key } = await h.key([...scopes]);
    const res = await h.api('GET', '/me', { key });
    t.equal(res.status, 200, `reachable with ${scopes.join(',')}`);
    t.same(res.body.key.scopes, scopes);
  }

  const missing = await h.api('GET', '/me');
  t.equal(missing.status, 401);
  t.ok(isEnvelope(missing.body));
  t.equal(missing.body.code, 'missing_api_key');
  t.equal(missing.body.path, `${API_PREFIX}/me`);
  t.type(missing.headers['x-ratelimit-remaining'], 'string', 'limited per address even without a key');

  const invalid = await h.api('GET', '/me', { key: `ik_live_${'x'.repeat(32)}` });
  t.equal(invalid.status, 401);
  t.equal(invalid.body.code, 'invalid_api_key');

  const { key, id } = await h.key(['clients:read']);
  await h.sql`UPDATE api_keys SET revoked_at = now() WHERE id = ${id}`;
  const revoked = await h.api('GET', '/me', { key });
  t.equal(revoked.status, 401);
  t.equal(revoked.body.code, 'invalid_api_key');

  const query = await h.api('GET', '/me?anything=1', { key: (await h.key(['clients:read'])).key });
  t.equal(query.status, 200, 'the route takes no query and ignores one');
});

t.test('GET /me counts its own request once, like any other', async (t) => {
  startOfFreshWindow(t);
  const h = await testApp(t);
  const { key, id } = await h.key(['*'], { rate_limit: 10 });
  t.equal((await h.api('GET', '/me', { key })).body.rate_limit.remaining, 9);
  t.equal((await h.api('GET', '/me', { key })).body.rate_limit.remaining, 8);
  await h.app.rateLimiter.flush();
  const [row] = await h.sql<{ hits: number }[]>`SELECT hits FROM rate_limit_windows WHERE bucket = ${`key:${id}`}`;
  t.equal(row?.hits, 2, 'the shared counter holds the two requests');
});

t.test('GET /me is in the OpenAPI document without a scope', async (t) => {
  const h = await testApp(t);
  const res = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/docs/openapi.json` });
  t.equal(res.statusCode, 200);
  const doc = JSON.parse(res.body);
  const op = doc.paths?.[`${API_PREFIX}/me`]?.get ?? doc.paths?.['/me']?.get;
  t.ok(op, 'GET /me is documented');
  t.equal(op?.operationId, 'getMe');
  t.notMatch(JSON.stringify(op?.responses ?? {}), /insufficient_scope/, 'no insufficient_scope answer documented');
});
