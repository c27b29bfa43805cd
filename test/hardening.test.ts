// Issue 14's attacks on a running server, each against the rule of docs/decisions.md §8, §9, §13 or
// §14 that now stops it: the proxy hop a client cannot forge, the per-key concurrency limiter,
// the slow-body timeout, tokens kept out of the logs, the hosted pages' own limit, no-store and
// HSTS, and the draft PDF rendered once while unchanged.
import t from 'tap';
import net from 'node:net';
import { randomBytes } from 'node:crypto';
import { testApp, isEnvelope, toApiResponse, type TestApp } from './helpers/app.js';
import { loggedApp, rawRequest } from './helpers/logged-app.js';
import { until } from './helpers/until.js';
import { API_PREFIX } from '../src/http/urls.js';
import { buildApp, REQUEST_TIMEOUT_MS } from '../src/app.js';
import { clock } from '../src/clock.js';
import { draftPdfs } from '../src/pdf/draft-cache.js';
import { HOSTED_PAGES_PER_MINUTE } from '../src/public/page-limit.js';

/** Starts the test at the beginning of a rate-limit window, so no window ends halfway through. */
function freshWindow(t: { teardown(fn: () => unknown): void }): void {
  const now = clock.now().getTime();
  clock.advance(60_000 - (now % 60_000) + 250);
  t.teardown(() => clock.reset());
}

const invoiceBody = (n = 1) => ({
  client: { name: 'Comercial Los Andes', email: 'pagos@losandes.cl' },
  due_date: '2027-01-31',
  items: Array.from({ length: n }, (_, i) => ({ description: `Servicio ${i + 1}`, quantity: 1, unit_price: 10000 })),
});

async function get(h: TestApp, path: string, headers: Record<string, string>, remoteAddress?: string) {
  return toApiResponse(await h.app.inject({ method: 'GET', url: API_PREFIX + path, headers, ...(remoteAddress ? { remoteAddress } : {}) }));
}

t.test('TRUST_PROXY counts hops from the right of X-Forwarded-For', async (t) => {
  const base = await testApp(t);
  freshWindow(t);
  const { key, merchantId } = await base.key(['*'], { allowed_ips: ['203.0.113.0/24'] });

  t.test('one hop (true): the entry the router appended is the client', async (t) => {
    const h = await testApp(t, { TRUST_PROXY: 'true' }, { sql: base.sql, dbUrl: base.dbUrl });
    const forged = await get(h, '/me', { 'x-api-key': key, 'x-forwarded-for': '203.0.113.5, 10.1.2.3' });
    t.equal(forged.status, 403, 'an allowed address written leftmost by the client does not pass');
    t.equal(forged.body.code, 'ip_not_allowed');
    t.match(forged.body.message, /10\.1\.2\.3/, 'the address judged is the one the router saw');
    t.equal((await get(h, '/me', { 'x-api-key': key, 'x-forwarded-for': '10.1.2.3, 203.0.113.5' })).status, 200, 'the router-appended entry is allowed');
    t.equal((await get(h, '/me', { 'x-api-key': key, 'x-forwarded-for': '203.0.113.5' })).status, 200, 'a single entry');
  });

  t.test('two hops: the second entry from the right', async (t) => {
    const h = await testApp(t, { TRUST_PROXY: '2' }, { sql: base.sql, dbUrl: base.dbUrl });
    t.equal((await get(h, '/me', { 'x-api-key': key, 'x-forwarded-for': '1.1.1.1, 203.0.113.9, 10.0.0.7' })).status, 200);
    t.equal((await get(h, '/me', { 'x-api-key': key, 'x-forwarded-for': '203.0.113.9, 1.1.1.1, 10.0.0.7' })).status, 403);
  });

  t.test('rotating the leftmost entry does not escape the per-address limit', async (t) => {
    const h = await testApp(t, { TRUST_PROXY: '1', RATE_LIMIT_PER_MINUTE: '3' }, { sql: base.sql, dbUrl: base.dbUrl });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await get(h, '/me', { 'x-forwarded-for': `198.51.100.${i}, 192.0.2.44` });
      statuses.push(res.status);
    }
    t.same(statuses, [401, 401, 401, 429, 429], 'one address, however the client writes the left of the header');
    t.equal((await get(h, '/me', { 'x-forwarded-for': '192.0.2.45' })).status, 401, 'another client address has its own window');
  });
  t.ok(merchantId);
});

t.test('at most API_CONCURRENCY_PER_KEY requests of one key in flight', async (t) => {
  const h = await testApp(t, { API_CONCURRENCY_PER_KEY: '2' });
  freshWindow(t);
  const { key, merchantId } = await h.key(['*']);
  const other = await h.key(['*'], { merchantId });
  const ids: string[] = [];
  for (let i = 0; i < 2; i++) {
    const created = await h.api('POST', '/invoices', { key, body: invoiceBody() });
    t.equal(created.status, 201);
    ids.push(created.body.invoice_id);
  }

  // Each send waits on the row lock the test holds: two of the key's requests stay in flight.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const lockTaken = new Promise<void>((r) => (locked = r));
  const holder = h.sql.begin(async (tx) => {
    await tx`SELECT id FROM invoices WHERE id = ANY(${ids}::uuid[]) FOR UPDATE`;
    locked();
    await held;
  });
  await lockTaken;
  const sends = ids.map((id) => h.api('POST', `/invoices/${id}/send`, { key }));
  await until('both sends waiting on the lock', async () => {
    const [row] = await h.sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
    return row!.n >= 2;
  });

  const third = await h.api('GET', '/me', { key });
  t.equal(third.status, 429, 'a third request of the key while two are in flight');
  t.ok(isEnvelope(third.body));
  t.equal(third.body.code, 'rate_limited');
  t.equal(third.body.retry, 'after_seconds:1');
  t.equal(third.headers['retry-after'], '1');
  t.equal((await h.api('GET', '/me', { key: other.key })).status, 200, "another key of the same merchant has its own room");

  release();
  await holder;
  const done = await Promise.all(sends);
  t.same(
    done.map((r) => r.status),
    [200, 200],
    'the requests in flight finish',
  );
  t.equal((await h.api('GET', '/me', { key })).status, 200, 'their slots are free again');
});

t.test('a body that has not arrived within the request timeout is 408 request_timeout', async (t) => {
  const h = await testApp(t);
  const standard = await buildApp(h.ctx, { logger: false });
  t.teardown(() => standard.close());
  t.equal(REQUEST_TIMEOUT_MS, 30_000, 'docs/decisions.md §8: 30 s');
  t.equal(standard.server.requestTimeout, 30_000, 'the server enforces it');

  const app = await buildApp(h.ctx, { logger: false, requestTimeoutMs: 1_000 });
  t.teardown(() => app.close());
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as net.AddressInfo).port;
  const { key } = await h.key(['*']);
  const body = JSON.stringify(invoiceBody());
  // Headers and the first bytes of the body, then nothing: a body dripped or stalled.
  const answer = await rawRequest(
    port,
    `POST ${API_PREFIX}/invoices HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
  );
  t.equal(answer.status, 408);
  t.equal(answer.headers.connection, 'close', 'the connection is closed');
  t.equal(answer.headers['cache-control'], 'no-store');
  const envelope = JSON.parse(answer.body);
  t.ok(isEnvelope(envelope), 'the one envelope');
  t.equal(envelope.code, 'request_timeout');
  t.equal(envelope.retry, 'safe');
  t.equal(envelope.request_id, answer.headers['x-request-id']);
  const [count] = await h.sql`SELECT count(*)::int AS n FROM invoices`;
  t.equal(count!.n, 0, 'nothing was created');
});

t.test('hosted-page and checkout tokens never reach the logs', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);
  const { app, port, logs } = await loggedApp(h, { LOG_LEVEL: 'info' });
  t.teardown(() => app.close());
  const sent = await h.api('POST', '/invoices', { key, body: { ...invoiceBody(), send_immediately: true } });
  t.equal(sent.status, 201);
  const token = sent.body.public_url.split('/i/')[1] as string;
  const checkoutToken = randomBytes(24).toString('base64url');
  for (const path of [`/i/${token}`, `/i/${token}/pdf`, `/checkout/${checkoutToken}`, `/checkout/${checkoutToken}/pay?x=1`]) {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { redirect: 'manual' });
    await res.arrayBuffer();
  }
  await until('the four requests logged', () => logs.lines().filter((l) => l.includes('/i/[token]') || l.includes('/checkout/[token]')).length >= 4);
  const text = logs.readable();
  t.notOk(text.includes(token), 'the invoice token is not logged');
  t.notOk(text.includes(checkoutToken), 'the checkout token is not logged');
  t.match(text, /"url":"\/i\/\[token\]\/pdf"/, 'the URL is logged masked');
  t.match(text, /"url":"\/checkout\/\[token\]\/pay\?x=1"/);
});

t.test('hosted pages are limited per client address with a plain 429 page', async (t) => {
  const h = await testApp(t);
  freshWindow(t);
  const token = randomBytes(24).toString('base64url');
  const open = (path: string, remoteAddress: string) => h.app.inject({ method: 'GET', url: path, remoteAddress, headers: { 'accept-language': 'en' } });
  for (let i = 0; i < HOSTED_PAGES_PER_MINUTE; i++) {
    const res = await open(i % 2 ? `/i/${token}` : `/checkout/${token}`, '198.51.100.7');
    if (res.statusCode !== 404) t.fail(`request ${i + 1} answered ${res.statusCode}`);
  }
  t.equal(HOSTED_PAGES_PER_MINUTE, 120, 'docs/decisions.md §8: 120 a minute');
  const over = await open(`/i/${token}`, '198.51.100.7');
  t.equal(over.statusCode, 429);
  t.match(over.headers['content-type'], /^text\/html/, 'a page, not JSON');
  t.match(over.body, /Too many requests/);
  t.ok(Number(over.headers['retry-after']) >= 1 && Number(over.headers['retry-after']) <= 60, 'Retry-After');
  t.equal((await open(`/checkout/${token}`, '198.51.100.7')).statusCode, 429, 'the checkout pages share the limit');
  t.equal((await open(`/i/${token}`, '198.51.100.8')).statusCode, 404, 'another address is not limited');
});

t.test('Cache-Control: no-store on every API answer; HSTS on HTML pages over https', async (t) => {
  const h = await testApp(t, { PUBLIC_BASE_URL: 'https://facturas.example.cl' });
  const { key } = await h.key(['*']);
  const answers = {
    me: await h.api('GET', '/me', { key }),
    created: await h.api('POST', '/invoices', { key, body: invoiceBody() }),
    endpoint: await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://127.0.0.1:8443/hook' } }),
    unauthorised: await h.api('GET', '/invoices'),
    unknownRoute: await h.api('GET', '/nothing-here', { key }),
    invalid: await h.api('POST', '/invoices', { key, body: {} }),
  };
  t.equal(answers.endpoint.status, 201, 'the answer that carries a secret');
  for (const [name, res] of Object.entries(answers)) t.equal(res.headers['cache-control'], 'no-store', name);

  const page = await h.app.inject({ method: 'GET', url: `/i/${randomBytes(24).toString('base64url')}` });
  t.equal(page.statusCode, 404);
  t.match(page.headers['strict-transport-security'], /^max-age=\d{8,}/, 'an HTML page over https');
  const docs = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/docs` });
  t.match(docs.headers['strict-transport-security'], /^max-age=/, 'the docs page too');

  const plain = await testApp(t, {}, { sql: h.sql, dbUrl: h.dbUrl });
  const httpPage = await plain.app.inject({ method: 'GET', url: `/i/${randomBytes(24).toString('base64url')}` });
  t.notOk(httpPage.headers['strict-transport-security'], 'no HSTS when the public URL is http');
});

t.test("a draft's PDF is rendered once while it is unchanged", async (t) => {
  const h = await testApp(t);
  const { key, merchantId } = await h.key(['*']);
  const created = await h.api('POST', '/invoices', { key, body: invoiceBody(200) });
  t.equal(created.status, 201);
  const id = created.body.invoice_id as string;
  const pdf = () => h.app.inject({ method: 'GET', url: `${API_PREFIX}/invoices/${id}/pdf`, headers: { 'x-api-key': key } });

  const misses = draftPdfs.misses;
  const hits = draftPdfs.hits;
  const first = await pdf();
  t.equal(first.statusCode, 200);
  const again = await Promise.all([pdf(), pdf(), pdf()]);
  t.equal(draftPdfs.misses - misses, 1, 'rendered once');
  t.equal(draftPdfs.hits - hits, 3, 'served three times from the cache');
  for (const res of again) t.equal(res.headers['x-content-sha256'], first.headers['x-content-sha256'], 'the same document');

  // Anything the document shows changes its key: the merchant's name here.
  await h.sql`UPDATE merchants SET name = 'Nombre Nuevo SpA' WHERE id = ${merchantId}`;
  const renamed = await pdf();
  t.equal(draftPdfs.misses - misses, 2, 'a changed draft is rendered anew');
  t.not(renamed.headers['x-content-sha256'], first.headers['x-content-sha256'], 'and shows the change');
});
