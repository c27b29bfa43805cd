// The admin tRPC router (docs/decisions.md §1, §9, §10), through createCallerFactory and over HTTP at
// /admin/trpc: the bearer token (absent config = no admin at all), the error catalogue as tRPC
// codes, every procedure, replays really delivered again to an HTTPS receiver, the bound of
// replayFailed, the filters and pages of the lists, and the console's headers.
import t from 'tap';
import Fastify from 'fastify';
import { TRPCError } from '@trpc/server';
import { testApp, isEnvelope, type TestApp } from './helpers/app.js';
import { TS, UUID } from './helpers/fixtures.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { createCaller } from '../src/admin/router.js';
import { registerAdmin } from '../src/admin/routes.js';
import { createSql, type Sql } from '../src/db/client.js';
import { newId } from '../src/ids.js';
import { until } from './helpers/until.js';

const TOKEN = 'adm_test_0123456789abcdefghijklmnopqrstuvwxyz';
const ADMIN_ENV = { ADMIN_TOKEN: TOKEN };

interface TrpcAnswer {
  status: number;
  headers: Record<string, unknown>;
  body: any;
}

/** One tRPC call over HTTP as @trpc/client's httpLink makes it: GET for queries, POST for mutations. */
async function http(h: TestApp, kind: 'query' | 'mutation', procedure: string, input?: unknown, authorization: string | null = `Bearer ${TOKEN}`): Promise<TrpcAnswer> {
  const headers: Record<string, string> = authorization === null ? {} : { authorization };
  const res =
    kind === 'query'
      ? await h.app.inject({
          method: 'GET',
          url: `/admin/trpc/${procedure}${input === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify(input))}`}`,
          headers,
        })
      : await h.app.inject({
          method: 'POST',
          url: `/admin/trpc/${procedure}`,
          headers: { ...headers, 'content-type': 'application/json' },
          payload: JSON.stringify(input ?? null),
        });
  return { status: res.statusCode, headers: res.headers, body: res.body ? JSON.parse(res.body) : null };
}

function admin(h: TestApp, token = TOKEN) {
  return createCaller({ app: h.ctx, authorization: `Bearer ${token}` });
}

/** The TRPCError a caller promise rejects with. */
async function rejection(p: Promise<unknown>): Promise<TRPCError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof TRPCError) return err;
    throw err;
  }
  throw new Error('expected the call to fail');
}

async function createEndpoint(h: TestApp, key: string, body: Record<string, unknown>) {
  const res = await h.api('POST', '/webhooks/endpoints', { key, body });
  if (res.status !== 201) throw new Error(`endpoint create: ${res.status} ${res.raw}`);
  return res.body as { id: string; secret: string; url: string };
}

async function newClient(h: TestApp, key: string, name: string) {
  const res = await h.api('POST', '/clients', { key, body: { name, email: `${name.toLowerCase().replace(/\W+/g, '.')}@example.cl` } });
  if (res.status !== 201) throw new Error(`client create: ${res.status} ${res.raw}`);
  return res.body as { id: string };
}

t.test('with no ADMIN_TOKEN the admin router and console do not exist', async (t) => {
  const h = await testApp(t);
  for (const url of ['/admin', '/admin/', '/admin/console.js', '/admin/console.css', '/admin/trpc/merchants.list']) {
    const res = await h.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${TOKEN}` } });
    t.equal(res.statusCode, 404, url);
    const body = JSON.parse(res.body);
    t.equal(body.code, 'route_not_found', url);
    t.ok(isEnvelope(body), `${url}: the app's ordinary 404`);
  }
  const post = await h.app.inject({ method: 'POST', url: '/admin/trpc/merchants.create', headers: { 'content-type': 'application/json' }, payload: '{}' });
  t.equal(post.statusCode, 404);
  const err = await rejection(admin(h).merchants.list());
  t.equal(err.code, 'NOT_FOUND', 'a caller built anyway finds nothing either');
});

t.test('the admin token', async (t) => {
  const h = await testApp(t, ADMIN_ENV);

  t.test('over HTTP: missing or wrong is 401 UNAUTHORIZED with our code; right works', async (t) => {
    const missing = await http(h, 'query', 'merchants.list', undefined, null);
    t.equal(missing.status, 401);
    t.match(missing.body.error, { message: /Bearer/, data: { code: 'UNAUTHORIZED', httpStatus: 401, appCode: 'missing_api_key', retry: 'never' } });
    for (const authorization of [`Bearer ${TOKEN}x`, 'Bearer short', `Bearer ${TOKEN.slice(0, -1)}Z`, `Basic ${TOKEN}`, TOKEN]) {
      const res = await http(h, 'query', 'merchants.list', undefined, authorization);
      t.equal(res.status, 401, authorization);
      t.equal(res.body.error.data.code, 'UNAUTHORIZED', authorization);
      t.ok(['invalid_api_key', 'missing_api_key'].includes(res.body.error.data.appCode), authorization);
    }
    const wrongMutation = await http(h, 'mutation', 'merchants.create', { name: 'X', email: 'x@example.cl' }, 'Bearer nope');
    t.equal(wrongMutation.status, 401);
    t.equal((await admin(h).merchants.list()).length, 0, 'the refused create wrote nothing');
    const ok = await http(h, 'query', 'merchants.list');
    t.equal(ok.status, 200);
    t.same(ok.body, { result: { data: [] } });
    const lower = await http(h, 'query', 'merchants.list', undefined, `bearer ${TOKEN}`);
    t.equal(lower.status, 200, 'the scheme is case-insensitive');
  });

  t.test('through createCaller: the same middleware', async (t) => {
    const err = await rejection(admin(h, 'wrong-token').merchants.list());
    t.equal(err.code, 'UNAUTHORIZED');
    const none = await rejection(createCaller({ app: h.ctx, authorization: undefined }).merchants.list());
    t.equal(none.code, 'UNAUTHORIZED');
    t.same(await admin(h).merchants.list(), []);
  });

  t.test('the error catalogue as tRPC codes, with our code in data and no stack', async (t) => {
    const notUuid = await http(h, 'query', 'deliveries.get', { delivery_id: 'nope' });
    t.equal(notUuid.status, 400);
    t.match(notUuid.body.error.data, { code: 'BAD_REQUEST', appCode: 'validation_error', details: { errors: [{ path: 'delivery_id' }] } });
    t.notOk('stack' in notUuid.body.error.data);
    const unknownField = await http(h, 'query', 'deliveries.list', { merchant: 'x' });
    t.equal(unknownField.body.error.data.details.errors[0].path, 'merchant');
    const missingDelivery = await http(h, 'query', 'deliveries.get', { delivery_id: newId() });
    t.equal(missingDelivery.status, 404);
    t.match(missingDelivery.body.error.data, { code: 'NOT_FOUND', appCode: 'webhook_delivery_not_found' });
    const missingEndpoint = await http(h, 'mutation', 'endpoints.enable', { endpoint_id: newId() });
    t.equal(missingEndpoint.status, 404);
    t.match(missingEndpoint.body.error.data, { code: 'NOT_FOUND', appCode: 'webhook_endpoint_not_found' });
    const noProcedure = await http(h, 'query', 'deliveries.explode');
    t.equal(noProcedure.status, 404);
    t.equal(noProcedure.body.error.data.appCode, 'route_not_found');
    const viaCaller = await rejection(admin(h).events.get({ event_id: newId() }));
    t.equal(viaCaller.code, 'NOT_FOUND');
    const missingEvent = await http(h, 'query', 'events.get', { event_id: newId() });
    t.equal(missingEvent.status, 404);
    t.match(missingEvent.body.error, { message: /^No event /, data: { code: 'NOT_FOUND', appCode: 'event_not_found' } });
    const badInput = await rejection(admin(h).deliveries.list({ limit: 0 }));
    t.equal(badInput.code, 'BAD_REQUEST');
  });
});

t.test('failures inside a procedure: the database away, anything unexpected', async (t) => {
  const h = await testApp(t, ADMIN_ENV);
  const away = createSql('postgres://postgres@127.0.0.1:1/none', { connectTimeout: 1 });
  t.teardown(() => away.end({ timeout: 0 }));
  // A "driver" that fails the way a bug would, with internals in its message.
  const broken = Object.assign(() => {
    throw new Error('relation "secret_internal_table" does not exist');
  }, { begin: () => Promise.reject(new Error('relation "secret_internal_table" does not exist')) }) as unknown as Sql;

  for (const [sql, trpcCode, status, appCode] of [
    [away, 'SERVICE_UNAVAILABLE', 503, 'service_unavailable'],
    [broken, 'INTERNAL_SERVER_ERROR', 500, 'internal_error'],
  ] as const) {
    const ctx = { ...h.ctx, sql };
    const err = await rejection(createCaller({ app: ctx, authorization: `Bearer ${TOKEN}` }).merchants.list());
    t.equal(err.code, trpcCode);
    const app = Fastify({ logger: false });
    registerAdmin(app, ctx);
    t.teardown(() => app.close());
    const res = await app.inject({ method: 'GET', url: '/admin/trpc/merchants.list', headers: { authorization: `Bearer ${TOKEN}` } });
    t.equal(res.statusCode, status, appCode);
    const body = JSON.parse(res.body);
    t.match(body.error.data, { code: trpcCode, appCode });
    t.notMatch(res.body, /secret_internal_table|ECONNREFUSED|at .*\.ts/, 'no internals in the answer');
  }
});

t.test('merchants, keys and rates, as the CLI does them', async (t) => {
  const h = await testApp(t, ADMIN_ENV);
  const a = admin(h);

  const merchant = await a.merchants.create({ name: 'Comercial Andes SpA', email: 'facturacion@andes.cl' });
  t.match(merchant, { id: UUID, name: 'Comercial Andes SpA', base_currency: 'CLP', payment_provider: null, created_at: TS });
  const overHttp = await http(h, 'mutation', 'merchants.create', { name: 'Pacífico Ltda', email: 'pagos@pacifico.cl', base_currency: 'USD', payment_provider: 'sandbox' });
  t.equal(overHttp.status, 200);
  t.match(overHttp.body.result.data, { name: 'Pacífico Ltda', base_currency: 'USD', payment_provider: 'sandbox' });
  t.same((await a.merchants.list()).map((m) => m.name), ['Comercial Andes SpA', 'Pacífico Ltda']);
  const badEmail = await rejection(a.merchants.create({ name: 'X', email: 'not-an-email' }));
  t.equal(badEmail.code, 'BAD_REQUEST');
  t.equal((await http(h, 'mutation', 'merchants.create', { name: 'X', email: 'nope' })).body.error.data.details.errors[0].path, 'email');
  t.match(await a.merchants.setPaymentProvider({ merchant_id: merchant.id, payment_provider: 'sandbox' }), { payment_provider: 'sandbox' });

  t.test('a key is shown once, works against the API, and stops when revoked', async (t) => {
    const created = await a.keys.create({ merchant_id: merchant.id, scopes: ['invoices:read'], allowed_ips: ['127.0.0.1'], rate_limit: 120 });
    t.match(created, { id: UUID, merchant_id: merchant.id, scopes: ['invoices:read'], rate_limit: 120, revoked_at: null });
    t.match(created.key, /^ik_live_[0-9A-Za-z]{32}$/);
    const listed = await http(h, 'query', 'keys.list', { merchant_id: merchant.id });
    t.equal(listed.body.result.data.length, 1);
    t.notOk(JSON.stringify(listed.body).includes(created.key.slice(12)), 'the key is never listed');
    t.notOk('key' in listed.body.result.data[0]);
    t.equal((await a.keys.list({})).length, 1, 'every merchant when none is named');
    t.equal((await h.api('GET', '/me', { key: created.key })).status, 200);
    const revoked = await a.keys.revoke({ key_id: created.id });
    t.match(revoked.revoked_at, TS);
    // The key cache lets a revoked key live for up to 5 s (src/http/auth.ts).
    const after = await until('the revoked key to be refused', async () => {
      const res = await h.api('GET', '/me', { key: created.key });
      return res.status === 401 ? res : null;
    });
    t.equal(after.body.code, 'invalid_api_key');
    const noMerchant = await rejection(a.keys.create({ merchant_id: newId(), scopes: ['*'] }));
    t.equal(noMerchant.code, 'BAD_REQUEST');
  });

  t.test('rates: set (today in the merchant zone by default) and list, newest first', async (t) => {
    const today = await a.rates.set({ merchant_id: merchant.id, currency: 'usd', rate: '950.25' });
    t.match(today, { merchant_id: merchant.id, currency: 'USD', rate: '950.25', date: /^\d{4}-\d{2}-\d{2}$/ });
    await a.rates.set({ merchant_id: merchant.id, currency: 'USD', rate: 948, date: '2020-01-02' });
    await a.rates.set({ merchant_id: merchant.id, currency: 'EUR', rate: '1020.5', date: '2020-01-02' });
    await a.rates.set({ merchant_id: merchant.id, currency: 'USD', rate: '949', date: '2020-01-02' });
    const usd = await a.rates.list({ merchant_id: merchant.id, currency: 'USD' });
    t.same(usd.data.map((r) => [r.date, r.rate]), [[today.date, '950.25'], ['2020-01-02', '949']], 'setting a date again replaces its rate');
    t.equal((await a.rates.list({ merchant_id: merchant.id })).data.length, 3);
    const paged = await a.rates.list({ merchant_id: merchant.id, limit: 2 });
    t.equal(paged.has_more, true);
    for (const [input, path] of [
      [{ merchant_id: merchant.id, currency: 'XYZ', rate: '1' }, 'currency'],
      [{ merchant_id: merchant.id, currency: 'USD', rate: '-1' }, 'rate'],
      [{ merchant_id: merchant.id, currency: 'USD', rate: 0 }, 'rate'],
      [{ merchant_id: merchant.id, currency: 'USD', rate: '1', date: '2020-02-30' }, 'date'],
      [{ merchant_id: newId(), currency: 'USD', rate: '1' }, 'merchant_id'],
    ] as const) {
      const res = await http(h, 'mutation', 'rates.set', input);
      t.equal(res.status, 400, path);
      t.equal(res.body.error.data.details.errors[0].path, path);
    }
  });
});

t.test('deliveries, endpoints and events', async (t) => {
  const h = await testApp(t, { ...ADMIN_ENV, WEBHOOK_RETRY_SCHEDULE: '1', WEBHOOK_DISABLE_AFTER_FAILURES: '1000' });
  await h.startWorker();
  const receiver = await startHttpsReceiver(t);
  let aFails = true;
  receiver.reply((req) => (req.path === '/a' && aFails ? { status: 500, body: 'down for maintenance' } : { status: 200, body: 'ok' }));
  const a = admin(h);
  const ma = await h.key(['*'], { merchantId: (await h.merchant({ name: 'Andes SpA' })).id });
  const mb = await h.key(['*'], { merchantId: (await h.merchant({ name: 'Bío Bío Ltda' })).id });
  const epA = await createEndpoint(h, ma.key, { url: receiver.url('/a'), events: ['client.created'] });
  const epB = await createEndpoint(h, mb.key, { url: receiver.url('/b') });

  const startedAt = new Date();
  await newClient(h, ma.key, 'Cliente Uno');
  await newClient(h, ma.key, 'Cliente Dos');
  const bClient = await newClient(h, mb.key, 'Cliente Tres');
  await h.api('PATCH', `/clients/${bClient.id}`, { key: mb.key, body: { phone: '+56 2 2345 6789' } });

  const failed = await until('both deliveries to endpoint A to fail', async () => {
    const page = await a.deliveries.list({ endpoint_id: epA.id, status: 'failed' });
    return page.data.length === 2 ? page.data : null;
  });
  await until('endpoint B to get both', async () => (await a.deliveries.list({ endpoint_id: epB.id, status: 'success' })).data.length === 2);

  t.test('deliveries.list: filters, newest first, cursor pages', async (t) => {
    t.match(failed[0], { merchant_id: ma.merchantId, merchant_name: 'Andes SpA', endpoint_id: epA.id, endpoint_url: epA.url, event_type: 'client.created', status: 'failed', attempts: 2, max_attempts: 2, last_response_status: 500, last_error: 'HTTP 500', replay_of: null, is_test: false });
    t.ok(failed[0]!.created_at >= failed[1]!.created_at, 'newest first');
    t.notOk('payload' in failed[0]!, 'lists carry no bodies');

    const all = await a.deliveries.list({});
    t.equal(all.data.length, 4);
    t.equal(all.next_cursor, null);
    t.same((await a.deliveries.list({ merchant_id: mb.merchantId })).data.map((d) => d.event_type).sort(), ['client.created', 'client.updated']);
    t.same((await a.deliveries.list({ event_type: 'client.updated' })).data.map((d) => d.endpoint_id), [epB.id]);
    t.equal((await a.deliveries.list({ merchant_id: ma.merchantId, status: 'success' })).data.length, 0);
    // Several statuses at once: the console's "not delivered" is pending, retrying and failed.
    t.same((await a.deliveries.list({ status: ['pending', 'retrying', 'failed'] })).data.map((d) => d.id), failed.map((d) => d.id));
    t.equal((await a.deliveries.list({ status: ['failed', 'success'] })).data.length, 4);
    t.equal((await a.deliveries.list({ from: startedAt.toISOString() })).data.length, 4);
    t.equal((await a.deliveries.list({ to: startedAt.toISOString() })).data.length, 0);
    t.equal((await a.deliveries.list({ from: new Date(Date.now() + 60_000).toISOString() })).data.length, 0);

    const seen: string[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await a.deliveries.list({ limit: 1, ...(cursor ? { cursor } : {}) });
      seen.push(...page.data.map((d) => d.id));
      if (!page.next_cursor) break;
      cursor = page.next_cursor;
    }
    t.same(seen, all.data.map((d) => d.id), 'pages of one walk the whole list once, in order');

    const overHttp = await http(h, 'query', 'deliveries.list', { merchant_id: ma.merchantId, status: 'failed', event_type: 'client.created' });
    t.equal(overHttp.status, 200);
    t.equal(overHttp.body.result.data.data.length, 2);
    const badCursor = await http(h, 'query', 'deliveries.list', { cursor: 'bm90LWEtY3Vyc29y' });
    t.equal(badCursor.status, 400);
    t.equal(badCursor.body.error.data.details.errors[0].path, 'cursor');
    t.equal((await http(h, 'query', 'deliveries.list', { status: 'lost' })).status, 400);
    t.equal((await http(h, 'query', 'deliveries.list', { status: ['failed', 'lost'] })).status, 400);
    t.equal((await http(h, 'query', 'deliveries.list', { status: [] })).status, 400);
    t.equal((await http(h, 'query', 'deliveries.list', { status: ['failed', 'retrying'] })).body.result.data.data.length, 2);
    t.equal((await http(h, 'query', 'deliveries.list', { from: 'yesterday' })).body.error.data.details.errors[0].path, 'from');
  });

  t.test('deliveries.get: the attempt log and the exact body', async (t) => {
    const d = await a.deliveries.get({ delivery_id: failed[1]!.id });
    t.equal(d.attempts, 2);
    t.equal(d.attempt_log.length, 2);
    t.match(d.attempt_log[0], { attempt_number: 1, started_at: TS, response_status: 500, response_body: 'down for maintenance', error: 'HTTP 500', request_url: epA.url });
    t.ok(d.attempt_log[0]!.duration_ms >= 0);
    t.match(d.attempt_log[0]!.request_headers, { 'Content-Type': 'application/json', 'X-Webhook-Event': 'client.created', 'X-Webhook-Signature': /^t=\d+,v1=[0-9a-f]{64}$/ });
    t.equal(d.payload, receiver.received.find((r) => r.path === '/a' && r.headers['x-webhook-id'] === d.event_id)!.body, 'the bytes that were sent');
    t.match(d.endpoint, { id: epA.id, enabled: true, merchant_id: ma.merchantId, merchant_name: 'Andes SpA' });
    t.notOk(JSON.stringify(d).includes(epA.secret), 'no secret');
    t.same(d.replays, []);
  });

  t.test('deliveries.replay: a new linked delivery, delivered again with the same event and bytes', async (t) => {
    aFails = false;
    const original = failed[1]!;
    const before = receiver.received.filter((r) => r.path === '/a' && r.headers['x-webhook-id'] === original.event_id);
    const res = await http(h, 'mutation', 'deliveries.replay', { delivery_id: original.id });
    t.equal(res.status, 200);
    const replay = res.body.result.data;
    t.match(replay, { id: UUID, replay_of: original.id, event_id: original.event_id, endpoint_id: epA.id, event_type: 'client.created', max_attempts: 2, is_test: false });
    t.not(replay.id, original.id);
    const done = await until('the replay to succeed', async () => {
      const d = await a.deliveries.get({ delivery_id: replay.id });
      return d.status === 'success' ? d : null;
    });
    t.match(done.attempt_log, [{ attempt_number: 1, response_status: 200, response_body: 'ok' }]);
    const after = receiver.received.filter((r) => r.path === '/a' && r.headers['x-webhook-id'] === original.event_id);
    t.equal(after.length, before.length + 1, 'the receiver got the event once more');
    t.equal(after.at(-1)!.body, before[0]!.body, 'the same bytes as the first attempt');
    t.same((await a.deliveries.get({ delivery_id: original.id })).replays.map((r) => r.id), [replay.id]);
    t.equal((await a.deliveries.get({ delivery_id: original.id })).status, 'failed', 'the original is kept as it was');
    const twice = await a.deliveries.replay({ delivery_id: original.id });
    t.not(twice.id, replay.id, 'each replay is a delivery of its own');
    await until('the second replay to succeed', async () => (await a.deliveries.get({ delivery_id: twice.id })).status === 'success');
  });

  t.test('replay is refused for a test delivery, a disabled endpoint, and a deleted one', async (t) => {
    const test = await h.api('POST', `/webhooks/endpoints/${epB.id}/test`, { key: mb.key });
    t.equal(test.body.is_test, true);
    const refusedTest = await http(h, 'mutation', 'deliveries.replay', { delivery_id: test.body.id });
    t.equal(refusedTest.status, 400);
    t.match(refusedTest.body.error, { message: /test delivery/, data: { appCode: 'validation_error', details: { errors: [{ path: 'delivery_id' }] } } });

    await a.endpoints.disable({ endpoint_id: epA.id });
    const refusedDisabled = await rejection(a.deliveries.replay({ delivery_id: failed[0]!.id }));
    t.equal(refusedDisabled.code, 'BAD_REQUEST');
    t.match(refusedDisabled.message, /disabled/);
    const refusedBulk = await rejection(a.deliveries.replayFailed({ endpoint_id: epA.id, since: startedAt.toISOString() }));
    t.equal(refusedBulk.code, 'BAD_REQUEST');
    await a.endpoints.enable({ endpoint_id: epA.id });

    const doomed = await createEndpoint(h, mb.key, { url: receiver.url('/doomed') });
    const sent = await h.api('POST', `/webhooks/endpoints/${doomed.id}/test`, { key: mb.key });
    await h.api('DELETE', `/webhooks/endpoints/${doomed.id}`, { key: mb.key });
    const gone = await rejection(a.deliveries.replay({ delivery_id: sent.body.id }));
    t.equal(gone.code, 'NOT_FOUND', 'a deleted endpoint took its deliveries with it');
    const goneBulk = await rejection(a.deliveries.replayFailed({ endpoint_id: doomed.id, since: startedAt.toISOString() }));
    t.equal(goneBulk.code, 'NOT_FOUND');
  });

  t.test('deliveries.replayFailed: every failed delivery since a time, once', async (t) => {
    aFails = true;
    await newClient(h, ma.key, 'Cliente Cuatro');
    await until('the new delivery to fail', async () => (await a.deliveries.list({ endpoint_id: epA.id, status: 'failed' })).data.length === 3);
    aFails = false;
    // failed[1] was replayed above: only failed[0] and the new failure wait.
    const result = await a.deliveries.replayFailed({ endpoint_id: epA.id, since: startedAt.toISOString() });
    t.same(result, { created: 2, has_more: false });
    const again = await http(h, 'mutation', 'deliveries.replayFailed', { endpoint_id: epA.id, since: startedAt.toISOString() });
    t.same(again.body.result.data, { created: 0, has_more: false }, 'a second call finds nothing left to replay');
    const late = await a.deliveries.replayFailed({ endpoint_id: epA.id, since: new Date().toISOString() });
    t.equal(late.created, 0, 'nothing failed after "since"');
    await until('the replays to succeed', async () => {
      const replays = (await a.deliveries.list({ endpoint_id: epA.id, status: 'success' })).data.filter((d) => d.replay_of);
      return replays.length === 4;
    });
  });

  t.test('endpoints: across merchants or one, without secrets; disable and enable', async (t) => {
    const all = await a.endpoints.list({});
    t.same(all.data.map((e) => e.id).sort(), [epA.id, epB.id].sort());
    t.match(all, { limit: 50, offset: 0, has_more: false });
    t.same((await a.endpoints.list({ merchant_id: mb.merchantId })).data.map((e) => e.id), [epB.id]);
    const raw = await http(h, 'query', 'endpoints.list', {});
    for (const secret of [epA.secret, epB.secret]) t.notOk(JSON.stringify(raw.body).includes(secret));
    t.notOk('secret' in raw.body.result.data.data[0]);
    t.notOk('secret_encrypted' in raw.body.result.data.data[0]);
    t.equal(raw.body.result.data.data.find((e: { id: string }) => e.id === epA.id).merchant_name, 'Andes SpA');

    const off = await http(h, 'mutation', 'endpoints.disable', { endpoint_id: epA.id });
    t.match(off.body.result.data, { id: epA.id, enabled: false, disabled_at: TS, merchant_name: 'Andes SpA' });
    t.same((await a.endpoints.list({ enabled: false })).data.map((e) => e.id), [epA.id]);
    await h.sql`UPDATE webhook_endpoints SET consecutive_failures = 25, failing_since = now(), disabled_reason = 'consecutive_failures' WHERE id = ${epA.id}`;
    const on = await a.endpoints.enable({ endpoint_id: epA.id });
    t.match(on, { enabled: true, consecutive_failures: 0, failing_since: null, disabled_at: null, disabled_reason: null });
    const rest = await h.api('GET', `/webhooks/endpoints/${epA.id}`, { key: ma.key });
    t.match(rest.body, { enabled: true, consecutive_failures: 0 }, 'the merchant sees the same');
  });

  t.test('events: list with filters and pages, get with its deliveries, types', async (t) => {
    const types = await a.events.types();
    t.ok(types.some((e) => e.type === 'invoice.paid' && e.description.length > 0));
    const ofA = await a.events.list({ merchant_id: ma.merchantId });
    t.equal(ofA.data.length, 3);
    t.match(ofA.data[0], { id: UUID, merchant_id: ma.merchantId, merchant_name: 'Andes SpA', type: 'client.created', created_at: TS });
    t.same((await a.events.list({ type: 'client.updated' })).data.map((e) => e.merchant_id), [mb.merchantId]);
    t.equal((await a.events.list({ from: startedAt.toISOString(), to: new Date(Date.now() + 1000).toISOString() })).data.length, 5);
    t.equal((await a.events.list({ to: startedAt.toISOString() })).data.length, 0);
    const first = await a.events.list({ limit: 2 });
    t.ok(first.next_cursor);
    const second = await a.events.list({ limit: 2, cursor: first.next_cursor! });
    const third = await a.events.list({ limit: 2, cursor: second.next_cursor! });
    t.same([...first.data, ...second.data, ...third.data].map((e) => e.id), (await a.events.list({})).data.map((e) => e.id));
    t.equal(third.next_cursor, null);

    const event = await http(h, 'query', 'events.get', { event_id: failed[1]!.event_id });
    t.equal(event.status, 200);
    const got = event.body.result.data;
    t.match(got, { id: failed[1]!.event_id, type: 'client.created', merchant_name: 'Andes SpA', payload: { id: failed[1]!.event_id, type: 'client.created', api_version: 'v1' } });
    // Fan-out runs events in parallel: which client's delivery is older is not fixed.
    t.match(got.payload.data.object.name, /^Cliente (Uno|Dos)$/);
    t.equal(got.deliveries.length, 3, 'the original and its two replays');
    t.equal(got.deliveries.filter((d: { replay_of: string | null }) => d.replay_of === failed[1]!.id).length, 2);
  });
});

t.test('replayFailed is bounded per call and queues one attempt per replay', async (t) => {
  const h = await testApp(t, { ...ADMIN_ENV, WEBHOOK_RETRY_SCHEDULE: '5,5' });
  const a = admin(h);
  const m = await h.key(['*']);
  const ep = await createEndpoint(h, m.key, { url: 'https://localhost/never-called' });
  const other = await createEndpoint(h, m.key, { url: 'https://localhost/other' });
  const since = new Date(Date.now() - 3600_000);
  // 1001 failed deliveries inside the window, older ones and a test one outside what counts.
  await h.sql`
    INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, event_type, payload, status, attempts, max_attempts, is_test, created_at, updated_at, completed_at)
    SELECT gen_random_uuid(), ${m.merchantId}::uuid, ${ep.id}::uuid, gen_random_uuid(), 'client.created', '{"n":' || n || '}', 'failed', 3, 3, false,
           now() - make_interval(secs => n * 0.0003), now(), now()
      FROM generate_series(1, 1001) AS n`;
  await h.sql`
    INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, event_type, payload, status, attempts, max_attempts, is_test, created_at, updated_at)
    VALUES (gen_random_uuid(), ${m.merchantId}, ${ep.id}, gen_random_uuid(), 'client.created', '{}', 'failed', 3, 3, false, now() - interval '2 hours', now()),
           (gen_random_uuid(), ${m.merchantId}, ${ep.id}, gen_random_uuid(), 'client.created', '{}', 'failed', 1, 1, true, now(), now()),
           (gen_random_uuid(), ${m.merchantId}, ${ep.id}, gen_random_uuid(), 'client.created', '{}', 'success', 1, 3, false, now(), now()),
           (gen_random_uuid(), ${m.merchantId}, ${other.id}, gen_random_uuid(), 'client.created', '{}', 'failed', 3, 3, false, now(), now())`;

  // Rows written by SQL carry microseconds: pages must neither skip nor repeat one at a boundary.
  const walked = new Set<string>();
  let pages = 0;
  let cursor: string | undefined;
  do {
    const page = await a.deliveries.list({ endpoint_id: ep.id, status: 'failed', limit: 200, ...(cursor ? { cursor } : {}) });
    for (const d of page.data) walked.add(d.id);
    pages += 1;
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  t.equal(walked.size, 1003, 'every failed delivery once');
  t.equal(pages, 6);

  const tooMany = await http(h, 'mutation', 'deliveries.replayFailed', { endpoint_id: ep.id, since: since.toISOString(), limit: 1001 });
  t.equal(tooMany.status, 400);
  t.equal(tooMany.body.error.data.details.errors[0].path, 'limit');

  const first = await a.deliveries.replayFailed({ endpoint_id: ep.id, since: since.toISOString() });
  t.same(first, { created: 1000, has_more: true });
  const second = await a.deliveries.replayFailed({ endpoint_id: ep.id, since: since.toISOString() });
  t.same(second, { created: 1, has_more: false });
  t.same(await a.deliveries.replayFailed({ endpoint_id: ep.id, since: since.toISOString() }), { created: 0, has_more: false });

  const [counts] = await h.sql<{ replays: number; distinct_sources: number; oldest_payload: string; max_attempts: number }[]>`
    SELECT count(*)::int AS replays, count(DISTINCT replay_of)::int AS distinct_sources, min(max_attempts)::int AS max_attempts,
           (SELECT payload FROM webhook_deliveries WHERE replay_of IS NOT NULL ORDER BY created_at, id LIMIT 1) AS oldest_payload
      FROM webhook_deliveries WHERE replay_of IS NOT NULL`;
  t.match(counts, { replays: 1001, distinct_sources: 1001, max_attempts: 3 }, 'one replay per failed delivery, max_attempts from the schedule');
  t.equal(counts!.oldest_payload, '{"n":1001}', 'oldest first, with the same bytes');
  const [jobs] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'webhook-deliver' AND data->>'attempt' = '1'`;
  t.equal(jobs!.n, 1001, 'each replay has its first attempt queued');

  const small = await createEndpoint(h, m.key, { url: 'https://localhost/small' });
  await h.sql`
    INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, event_type, payload, status, attempts, max_attempts, created_at, updated_at)
    SELECT gen_random_uuid(), ${m.merchantId}::uuid, ${small.id}::uuid, gen_random_uuid(), 'client.created', '{}', 'failed', 3, 3, now(), now()
      FROM generate_series(1, 5)`;
  const counts2: number[] = [];
  for (;;) {
    const r = await a.deliveries.replayFailed({ endpoint_id: small.id, since: since.toISOString(), limit: 2 });
    counts2.push(r.created);
    if (!r.has_more) break;
  }
  t.same(counts2, [2, 2, 1], 'a smaller bound pages through the rest');
});

t.test('the console page: served with its security headers, no inline script', async (t) => {
  const h = await testApp(t, ADMIN_ENV);
  const page = await h.app.inject({ method: 'GET', url: '/admin' });
  t.equal(page.statusCode, 200);
  t.match(page.headers['content-type'], /^text\/html/);
  const csp = String(page.headers['content-security-policy']);
  t.match(csp, /default-src 'none'/);
  t.match(csp, /script-src 'self'/);
  t.match(csp, /frame-ancestors 'none'/);
  t.notMatch(csp, /unsafe-inline|unsafe-eval/);
  t.equal(page.headers['x-frame-options'], 'DENY');
  t.equal(page.headers['x-content-type-options'], 'nosniff');
  t.equal(page.headers['referrer-policy'], 'no-referrer');
  t.notMatch(page.body, /<script(?![^>]*\bsrc=)[^>]*>/, 'every script is a file');
  t.notMatch(page.body, /\son[a-z]+=/i, 'no inline handlers');
  const script = await h.app.inject({ method: 'GET', url: '/admin/console.js' });
  t.equal(script.statusCode, 200);
  t.match(script.headers['content-type'], /^text\/javascript/);
  t.equal(script.headers['x-content-type-options'], 'nosniff');
  t.match(script.body, /\/admin\/trpc/, 'the bundled client talks to the router');
  t.notMatch(script.body, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, 'no HTML is ever parsed from data');
  const css = await h.app.inject({ method: 'GET', url: '/admin/console.css' });
  t.equal(css.statusCode, 200);
  t.match(css.headers['content-type'], /^text\/css/);
  const trpc = await http(h, 'query', 'merchants.list');
  t.equal(trpc.headers['cache-control'], 'no-store', 'admin answers are never cached');
});
