// Webhook limits (docs/decisions.md §10): a test delivery calls out with no connection nor transaction
// held, gives up after 10 s, and a merchant has at most 2 in flight (counted in Postgres);
// 16 endpoints per merchant, one URL once (race-free, and a migration that survives the
// duplicates an older database holds), ports 443 and 8443; `last_error` is a category, the raw
// error is for the admin router only.
import t, { type Test } from 'tap';
import { readFile } from 'node:fs/promises';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import postgres from 'postgres';
import { isEnvelope, testApp, type TestApp } from './helpers/app.js';
import { createTestDatabase, serverUrl } from './helpers/db.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { createCaller } from '../src/admin/router.js';
import { createSql } from '../src/db/client.js';
import { freePort } from '../src/db/embedded.js';
import { migrationFiles } from '../src/migrate.js';
import { newId } from '../src/ids.js';
import * as merchants from '../src/merchants/service.js';
import { sqlDir } from '../src/paths.js';
import { transportErrorCategory } from '../src/webhooks/http-post.js';
import * as eq from '../src/webhooks/endpoint-queries.js';
import { selfSignedCertificate } from './helpers/self-signed.js';

const ADMIN_TOKEN = 'adm_limits_0123456789abcdefghijklmnopqrstuvwxyz';

async function createEndpoint(h: TestApp, key: string, body: Record<string, unknown>) {
  const res = await h.api('POST', '/webhooks/endpoints', { key, body });
  if (res.status !== 201) throw new Error(`endpoint create: ${res.status} ${res.raw}`);
  return res.body as { id: string; secret: string; url: string };
}

function refusedNamingUrl(t: Test, res: { status: number; body: any }, message: RegExp, what: string) {
  t.equal(res.status, 400, `${what}: 400`);
  t.equal(res.body?.code, 'webhook_endpoint_invalid', `${what}: webhook_endpoint_invalid`);
  t.equal(res.body?.details?.errors?.[0]?.path, 'url', `${what}: names url`);
  t.match(res.body?.details?.errors?.[0]?.message, message, `${what}: says why`);
  t.ok(isEnvelope(res.body), `${what}: the one envelope`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('a test delivery holds no connection nor transaction while it waits; 2 per merchant in flight, a third is 429', async (t) => {
  // A pool of 2 connections: two tests that kept theirs while waiting on the receiver would
  // leave nothing for anyone else.
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  const pool = createSql(db.url, { max: 2, application: 'invoicing-test' });
  t.teardown(() => pool.end({ timeout: 5 }));
  const h = await testApp(t, {}, { sql: pool, dbUrl: db.url });
  const observer = createSql(db.url, { max: 1, application: 'invoicing-test-observer' });
  t.teardown(() => observer.end({ timeout: 5 }));
  const receiver = await startHttpsReceiver(t);
  receiver.reply((req) => (req.path === '/hang' ? { status: 200, body: 'too late', delayMs: 120_000 } : { status: 200, body: 'ok' }));
  const { key } = await h.key(['webhooks:manage']);
  const hanging = await createEndpoint(h, key, { url: receiver.url('/hang') });
  const quick = await createEndpoint(h, key, { url: receiver.url('/quick') });
  const other = await h.key(['*']);

  const started = Date.now();
  const calls = [0, 1, 2].map(() =>
    h.api('POST', `/webhooks/endpoints/${hanging.id}/test`, { key }).then((res) => ({ res, ms: Date.now() - started })),
  );
  const first = await Promise.race(calls);
  t.equal(first.res.status, 429, 'the first answer is the third test, refused');
  t.ok(first.ms < 2000, `refused at once (${first.ms} ms), not after the others`);
  t.equal(first.res.body.code, 'rate_limited');
  t.equal(first.res.body.retry, 'after_seconds:1');
  t.equal(first.res.headers['retry-after'], '1');
  t.ok(isEnvelope(first.res.body));

  await receiver.waitFor(2);
  await sleep(1500);
  // Sampled a few times: a transaction that only passes by is not what is looked for, one that
  // has waited more than a second is.
  for (let i = 0; i < 3; i++) {
    const held = await observer<{ state: string; query: string }[]>`
      SELECT state, query FROM pg_stat_activity
       WHERE datname = current_database() AND state LIKE 'idle in transaction%' AND xact_start < now() - interval '1 second'`;
    t.same(held, [], `sample ${i + 1}: no connection sits idle in a transaction while the attempts wait`);
    await sleep(300);
  }
  const timer = sleep(3000).then(() => null);
  const invoices = await Promise.race([h.api('GET', '/invoices?limit=1', { key: other.key }), timer]);
  t.equal(invoices?.status, 200, "another merchant's request is answered on the pool of 2 while both tests hang");
  const mine = await Promise.race([h.api('POST', `/webhooks/endpoints/${quick.id}/test`, { key }), timer]);
  t.equal(mine?.status, 429, 'the same merchant, another endpoint: still 2 in flight');

  const settled = await Promise.all(calls);
  const answered = settled.filter((c) => c.res.status === 200);
  t.equal(answered.length, 2, 'the two others were answered');
  for (const { res, ms } of answered) {
    t.match(res.body, { status: 'failed', attempts: 1, max_attempts: 1, is_test: true, last_response_status: null, last_error: 'timeout', next_retry_at: null });
    t.ok(ms >= 9_500 && ms < 14_000, `gave up after the test timeout of 10 s (${ms} ms)`);
  }
  const attempts = await h.sql<{ error: string; error_category: string; duration_ms: number }[]>`
    SELECT error, error_category, duration_ms FROM webhook_attempts WHERE delivery_id = ANY(${answered.map((a) => a.res.body.id)}::uuid[])`;
  t.same(attempts.map((a) => [a.error, a.error_category]), [['no answer within 10 s', 'timeout'], ['no answer within 10 s', 'timeout']]);

  const again = await h.api('POST', `/webhooks/endpoints/${quick.id}/test`, { key });
  t.match(again, { status: 200, body: { status: 'success', last_error: null } }, 'once they ended, the merchant may test again');
});

t.test('in flight is what Postgres holds: another process’s tests count, a dead one’s stop counting', async (t) => {
  const h = await testApp(t);
  const receiver = await startHttpsReceiver(t);
  const { key, merchantId } = await h.key(['webhooks:manage']);
  const ep = await createEndpoint(h, key, { url: receiver.url('/a') });
  const sandbox = await createEndpoint(h, key, { url: receiver.url('/sandbox'), is_sandbox: true });
  // What a test delivery looks like in the middle of its attempt, made by another web process.
  const inFlight = async (endpointId: string, ageSeconds: number, fromTestRoute = true) =>
    h.sql`
      INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, event_type, payload, max_attempts, is_test, from_test_route, created_at, updated_at)
      VALUES (${newId()}, ${merchantId}, ${endpointId}, ${newId()}, 'invoice.paid', '{}', 1, true, ${fromTestRoute},
              now() - ${ageSeconds} * interval '1 second', now())`;
  await inFlight(sandbox.id, 1, false);
  await inFlight(sandbox.id, 1, false);
  t.equal((await h.api('POST', `/webhooks/endpoints/${ep.id}/test`, { key })).status, 200, "a sandbox endpoint's pending deliveries are not test calls");

  await inFlight(ep.id, 1);
  await inFlight(ep.id, 2);
  const refused = await h.api('POST', `/webhooks/endpoints/${ep.id}/test`, { key });
  t.equal(refused.status, 429, "two tests in flight in another process: this one's third is refused");
  t.equal(refused.headers['retry-after'], '1');
  const stranger = await h.key(['webhooks:manage']);
  const theirs = await createEndpoint(h, stranger.key, { url: receiver.url('/a') });
  t.equal((await h.api('POST', `/webhooks/endpoints/${theirs.id}/test`, { key: stranger.key })).status, 200, 'another merchant is not limited by them');

  // The process making them died 30 s ago: they will never end on their own.
  await h.sql`UPDATE webhook_deliveries SET created_at = now() - interval '30 seconds' WHERE endpoint_id = ${ep.id} AND status = 'pending'`;
  const after = await h.api('POST', `/webhooks/endpoints/${ep.id}/test`, { key });
  t.match(after, { status: 200, body: { status: 'success' } }, 'tests older than the timeout and a margin no longer block');
  const abandoned = await h.sql<{ status: string; last_error: string; last_error_category: string | null }[]>`
    SELECT status, last_error, last_error_category FROM webhook_deliveries WHERE endpoint_id = ${ep.id} AND status <> 'success'`;
  t.equal(abandoned.length, 2);
  for (const d of abandoned) t.match(d, { status: 'failed', last_error: /abandoned/, last_error_category: null }, 'ended, with no category: no attempt was recorded');
});

t.test('16 endpoints per merchant, counted under a per-merchant lock', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['webhooks:manage']);
  for (let i = 0; i < 10; i++) await createEndpoint(h, key, { url: `https://localhost/ep/${i}` });
  // Eight at once (the per-key limit of requests in flight is 10): only six fit.
  const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => h.api('POST', '/webhooks/endpoints', { key, body: { url: `https://localhost/burst/${i}` } })));
  t.equal(burst.filter((r) => r.status === 201).length, 6, 'six of the burst created');
  for (const res of burst.filter((r) => r.status !== 201)) refusedNamingUrl(t, res, /16 endpoints/, 'over the cap in the burst');
  t.equal((await h.api('GET', '/webhooks/endpoints', { key })).body.data.length, 16);

  const seventeenth = await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://localhost/seventeenth' } });
  refusedNamingUrl(t, seventeenth, /16 endpoints/, 'the 17th');
  t.match(seventeenth.body.message, /At most 16/);

  const [someone] = (await h.api('GET', '/webhooks/endpoints', { key })).body.data;
  t.equal((await h.api('DELETE', `/webhooks/endpoints/${someone.id}`, { key })).status, 204);
  t.equal((await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://localhost/seventeenth' } })).status, 201, 'a deleted endpoint frees its place');
  const other = await h.key(['webhooks:manage']);
  t.equal((await h.api('POST', '/webhooks/endpoints', { key: other.key, body: { url: 'https://localhost/ep/0' } })).status, 201, 'the cap is per merchant');
});

t.test('one URL once per merchant: create, PATCH, races, spellings', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['webhooks:manage']);
  const a = await createEndpoint(h, key, { url: 'https://localhost/dup' });
  refusedNamingUrl(t, await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://localhost/dup' } }), /already the URL of another endpoint/, 'the same URL');
  refusedNamingUrl(t, await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://LOCALHOST:443/dup' } }), /already/, 'the same URL spelt otherwise');
  t.equal((await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://localhost/dup?v=2' } })).status, 201, 'another URL of the same host');

  const race = await Promise.all(Array.from({ length: 6 }, () => h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://localhost/race' } })));
  t.equal(race.filter((r) => r.status === 201).length, 1, 'six at once: one registered');
  for (const res of race.filter((r) => r.status !== 201)) refusedNamingUrl(t, res, /already/, 'the racing copies');

  const b = await createEndpoint(h, key, { url: 'https://localhost/b' });
  refusedNamingUrl(t, await h.api('PATCH', `/webhooks/endpoints/${b.id}`, { key, body: { url: a.url } }), /already/, 'PATCH to the URL of another');
  t.equal((await h.api('GET', `/webhooks/endpoints/${b.id}`, { key })).body.url, 'https://localhost/b', 'unchanged');
  t.equal((await h.api('PATCH', `/webhooks/endpoints/${a.id}`, { key, body: { url: a.url, description: 'same URL' } })).status, 200, 'PATCH to its own URL');

  const c = await createEndpoint(h, key, { url: 'https://localhost/c' });
  const patches = await Promise.all([b, c].map((e) => h.api('PATCH', `/webhooks/endpoints/${e.id}`, { key, body: { url: 'https://localhost/contested' } })));
  t.same(patches.map((r) => r.status).sort(), [200, 400], 'two PATCHes to one new URL at once: one wins');

  const other = await h.key(['webhooks:manage']);
  t.equal((await h.api('POST', '/webhooks/endpoints', { key: other.key, body: { url: a.url } })).status, 201, 'another merchant may register it');
  t.equal((await h.api('DELETE', `/webhooks/endpoints/${a.id}`, { key })).status, 204);
  t.equal((await h.api('POST', '/webhooks/endpoints', { key, body: { url: a.url } })).status, 201, 'deleting frees the URL');
});

t.test('the migration keeps the duplicates an older database holds, and lets no new one in', async (t) => {
  const admin = postgres(serverUrl(), { max: 1, onnotice: () => {} });
  const name = `invoicing_test_${process.pid}_migration007`;
  await admin.unsafe(`DROP DATABASE IF EXISTS "${name}"`);
  await admin.unsafe(`CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl());
  url.pathname = `/${name}`;
  const sql = createSql(url.toString(), { max: 2 });
  t.teardown(async () => {
    await sql.end({ timeout: 5 });
    await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  });
  const apply = (file: string) => sql.begin(async (tx) => tx.unsafe(await readFile(path.join(sqlDir, file), 'utf8')));
  const files = await migrationFiles();
  t.ok(files.includes('007_webhook_limits.sql'));
  for (const f of files.filter((f) => f < '007')) await apply(f);

  const merchant = await sql.begin((tx) => merchants.createMerchant(tx, { name: 'Antigua SpA', email: 'a@example.cl', base_currency: 'CLP', payment_provider: null }));
  const endpoint = (url: string, minutesAgo: number) =>
    sql<{ id: string }[]>`
      INSERT INTO webhook_endpoints (id, merchant_id, url, secret_encrypted, secret_prefix, created_at, updated_at)
      VALUES (${newId()}, ${merchant.id}, ${url}, '\\x00', 'whsec_000000', now() - ${minutesAgo} * interval '1 minute', now())
      RETURNING id`.then((r) => r[0]!.id);
  const oldest = await endpoint('https://localhost/shared', 30);
  const copy1 = await endpoint('https://localhost/shared', 20);
  const copy2 = await endpoint('https://localhost/shared', 10);
  const single = await endpoint('https://localhost/single', 5);

  await apply('007_webhook_limits.sql');
  const rows = await sql<{ id: string; duplicate_url: boolean }[]>`SELECT id, duplicate_url FROM webhook_endpoints ORDER BY created_at`;
  t.same(rows, [
    { id: oldest, duplicate_url: false },
    { id: copy1, duplicate_url: true },
    { id: copy2, duplicate_url: true },
    { id: single, duplicate_url: false },
  ], 'every endpoint kept; the later copies marked');

  const err = await endpoint('https://localhost/shared', 0).catch((e: unknown) => e);
  t.ok(eq.isDuplicateUrl(err), 'a new endpoint with the URL is refused');
  const moved = await eq.updateEndpoint(sql, merchant.id, copy1, { url: 'https://localhost/moved' }, new Date());
  t.equal(moved?.duplicate_url, false, 'a copy given a URL of its own is unique like any other');
  const err2 = await eq.updateEndpoint(sql, merchant.id, copy2, { url: 'https://localhost/moved' }, new Date()).catch((e: unknown) => e);
  t.ok(eq.isDuplicateUrl(err2), 'and no other may take it');
  t.equal((await eq.updateEndpoint(sql, merchant.id, copy2, { description: 'still here' }, new Date()))?.duplicate_url, true, 'a copy left alone stays marked');
});

t.test('ports 443 and 8443 only, judged before any lookup, unless private targets are allowed', async (t) => {
  const h = await testApp(t, { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' });
  const { key, merchantId } = await h.key(['webhooks:manage']);
  for (const url of ['https://93.184.215.14:8080/h', 'https://93.184.215.14:22/h', 'https://93.184.215.14:80/h']) {
    const res = await h.api('POST', '/webhooks/endpoints', { key, body: { url } });
    refusedNamingUrl(t, res, new RegExp(`port ${new URL(url).port} is not allowed`), url);
  }
  // A name that cannot resolve: were it looked up first, the answer would be about DNS.
  refusedNamingUrl(t, await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://hooks.example.invalid:9000/h' } }), /port 9000/, 'a bad port on a name');
  const viaDefault = await createEndpoint(h, key, { url: 'https://93.184.215.14/h' });
  t.equal(viaDefault.url, 'https://93.184.215.14/h', 'no port is 443');
  t.equal((await createEndpoint(h, key, { url: 'https://93.184.215.14:8443/h' })).url, 'https://93.184.215.14:8443/h');
  t.equal((await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://93.184.215.14:443/other' } })).status, 201, 'an explicit 443');
  refusedNamingUrl(t, await h.api('PATCH', `/webhooks/endpoints/${viaDefault.id}`, { key, body: { url: 'https://93.184.215.14:8080/h' } }), /port 8080/, 'PATCH to a bad port');

  // Created while any port was allowed: a delivery under the guard does not even connect.
  const open = await testApp(t, {}, { sql: h.sql, dbUrl: h.dbUrl });
  const { key: openKey } = await open.key(['webhooks:manage'], { merchantId });
  const odd = await createEndpoint(open, openKey, { url: 'https://93.184.215.14:9/h' });
  const started = Date.now();
  const res = await h.api('POST', `/webhooks/endpoints/${odd.id}/test`, { key });
  t.match(res.body, { status: 'failed', last_error: 'address_not_allowed' });
  t.ok(Date.now() - started < 2000, 'refused before connecting');
  const [attempt] = await h.sql<{ error: string; duration_ms: number }[]>`SELECT error, duration_ms FROM webhook_attempts WHERE delivery_id = ${res.body.id}`;
  t.match(attempt?.error, /port 9 is not allowed/);

  const withAnyPort = await open.api('POST', '/webhooks/endpoints', { key: openKey, body: { url: 'https://93.184.215.14:8080/h' } });
  t.equal(withAnyPort.status, 201, 'WEBHOOK_ALLOW_PRIVATE_TARGETS=true allows any port');
});

/** An HTTPS server with a certificate nobody trusts. */
async function selfSignedServer(t: Test): Promise<number> {
  const server = https.createServer(selfSignedCertificate(), (_req, res) => res.end('ok'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

/** A TCP server that drops every connection as soon as it is made. */
async function resettingServer(t: Test): Promise<number> {
  const server = net.createServer((socket) => socket.resetAndDestroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

t.test('last_error is a category through the API; the admin router keeps the raw error', async (t) => {
  const h = await testApp(t, { ADMIN_TOKEN });
  const admin = createCaller({ app: h.ctx, authorization: `Bearer ${ADMIN_TOKEN}` });
  const receiver = await startHttpsReceiver(t);
  receiver.reply((req) => {
    if (req.path === '/500') return { status: 500, body: 'boom' };
    if (req.path === '/302') return { status: 302, headers: { location: 'https://localhost/elsewhere' } };
    if (req.path === '/410') return { status: 410, body: 'gone' };
    return { status: 200, body: 'ok' };
  });
  const { key } = await h.key(['webhooks:manage']);
  const test = async (url: string) => {
    const ep = await createEndpoint(h, key, { url });
    const res = await h.api('POST', `/webhooks/endpoints/${ep.id}/test`, { key });
    t.equal(res.status, 200, url);
    return res.body as { id: string; status: string; last_error: string | null; last_response_status: number | null };
  };

  const refused = await test(`https://127.0.0.1:${await freePort()}/h`);
  t.match(refused, { status: 'failed', last_error: 'connection_refused', last_response_status: null });
  const seen = await admin.deliveries.get({ delivery_id: refused.id });
  t.match(seen, { last_error: /ECONNREFUSED 127\.0\.0\.1:\d+/, last_error_category: 'connection_refused' }, 'support sees the socket error');
  t.match(seen.attempt_log[0], { error: /ECONNREFUSED/, error_category: 'connection_refused' });
  const listed = (await admin.deliveries.list({ limit: 200 })).data.find((d) => d.id === refused.id);
  t.match(listed, { last_error: /ECONNREFUSED/, last_error_category: 'connection_refused' });

  t.match(await test(receiver.url('/500')), { last_error: 'http_error', last_response_status: 500 });
  t.match(await test(receiver.url('/302')), { last_error: 'redirect', last_response_status: 302 });
  t.match(await test(receiver.url('/410')), { last_error: 'http_error', last_response_status: 410 });
  t.match(await test(`https://localhost:${await selfSignedServer(t)}/h`), { last_error: 'tls_error' });
  t.match(await test(`https://127.0.0.1:${await resettingServer(t)}/h`), { last_error: 'connection_reset' });
  t.match(await test('https://hooks.example.invalid/h'), { last_error: 'dns_error' });
  const ok = await test(receiver.url('/fine'));
  t.match(ok, { status: 'success', last_error: null });
  t.match((await admin.deliveries.get({ delivery_id: ok.id })).attempt_log[0], { error: null, error_category: null });

  const doc = (await h.api('GET', '/docs/openapi.json')).body;
  const lastError = JSON.stringify(doc.components.schemas.WebhookDelivery.properties.last_error);
  for (const c of ['timeout', 'connection_refused', 'connection_reset', 'tls_error', 'dns_error', 'address_not_allowed', 'redirect', 'http_error']) {
    t.ok(lastError.includes(`"${c}"`), `the OpenAPI document lists ${c}`);
  }
});

t.test('transport errors by node error code', async (t) => {
  const cases: [string | undefined, string][] = [
    ['ETIMEDOUT', 'timeout'],
    ['ECONNREFUSED', 'connection_refused'],
    ['EHOSTUNREACH', 'connection_refused'],
    ['ENETUNREACH', 'connection_refused'],
    ['ECONNRESET', 'connection_reset'],
    ['EPIPE', 'connection_reset'],
    [undefined, 'connection_reset'],
    ['ENOTFOUND', 'dns_error'],
    ['EAI_AGAIN', 'dns_error'],
    ['EADDRNOTALLOWED', 'address_not_allowed'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'tls_error'],
    ['SELF_SIGNED_CERT_IN_CHAIN', 'tls_error'],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'tls_error'],
    ['CERT_HAS_EXPIRED', 'tls_error'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls_error'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'tls_error'],
    ['EPROTO', 'tls_error'],
  ];
  for (const [code, category] of cases) t.equal(transportErrorCategory(Object.assign(new Error('x'), code ? { code } : {})), category, String(code));
});
