// Webhooks (api-spec "Webhooks" and "Events", docs/decisions.md §10): endpoint routes, secrets at rest,
// signed deliveries to a real HTTPS receiver verified by Stripe's own SDK, filtering, the retry
// schedule, failures (5xx, 3xx, timeouts, 410), auto-disable at both thresholds, sandbox
// endpoints, the test route and verify-signature.
import t from 'tap';
import Stripe from 'stripe';
import { isEnvelope, testApp, type TestApp } from './helpers/app.js';
import { TS, UUID, invoiceBody } from './helpers/fixtures.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { startSmtpSink } from './helpers/smtp.js';
import { clock } from '../src/clock.js';
import { signatureHeader } from '../src/webhooks/signature.js';
import { until } from './helpers/until.js';

const stripe = new Stripe('sk_test_unused');

async function createEndpoint(h: TestApp, key: string, body: Record<string, unknown>) {
  const res = await h.api('POST', '/webhooks/endpoints', { key, body });
  if (res.status !== 201) throw new Error(`endpoint create: ${res.status} ${res.raw}`);
  return res.body as { id: string; secret: string; url: string };
}

async function deliveries(h: TestApp, endpointId: string) {
  return h.sql<{ id: string; status: string; attempts: number; event_type: string; is_test: boolean; last_error: string | null; next_retry_at: Date | null; max_attempts: number }[]>`
    SELECT * FROM webhook_deliveries WHERE endpoint_id = ${endpointId} ORDER BY created_at, id`;
}

async function attempts(h: TestApp, deliveryId: string) {
  return h.sql<{ attempt_number: number; response_status: number | null; response_body: string | null; error: string | null; started_at: Date; duration_ms: number; request_headers: Record<string, string> }[]>`
    SELECT * FROM webhook_attempts WHERE delivery_id = ${deliveryId} ORDER BY attempt_number`;
}

async function endpointRow(h: TestApp, id: string) {
  const [row] = await h.sql<{ enabled: boolean; consecutive_failures: number; disabled_reason: string | null; disabled_at: Date | null }[]>`
    SELECT * FROM webhook_endpoints WHERE id = ${id}`;
  return row!;
}

t.test('endpoint routes', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['webhooks:manage']);

  t.test('GET /webhooks/events lists every type with a description', async (t) => {
    const res = await h.api('GET', '/webhooks/events', { key });
    t.equal(res.status, 200);
    const types = res.body.data.map((e: { type: string }) => e.type);
    for (const type of ['invoice.created', 'invoice.sent', 'invoice.paid', 'invoice.cancelled', 'client.created', 'payment.succeeded', 'payment.failed', 'checkout.completed']) {
      t.ok(types.includes(type), type);
    }
    t.ok(res.body.data.every((e: { description: string }) => e.description.length > 0));
  });

  t.test('create shows the secret once; list and get never do; the secret is encrypted at rest', async (t) => {
    const res = await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://localhost/hook', description: 'ERP', events: ['invoice.paid', 'invoice.paid'] } });
    t.equal(res.status, 201);
    t.match(res.body, { id: UUID, url: 'https://localhost/hook', description: 'ERP', events: ['invoice.paid'], enabled: true, consecutive_failures: 0, is_sandbox: false, disabled_at: null, disabled_reason: null, created_at: TS, updated_at: TS });
    t.match(res.body.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
    t.equal(res.body.secret_prefix, res.body.secret.slice(0, 12));
    const got = await h.api('GET', `/webhooks/endpoints/${res.body.id}`, { key });
    t.equal(got.status, 200);
    t.notOk('secret' in got.body);
    t.equal(got.body.secret_prefix, res.body.secret_prefix);
    const list = await h.api('GET', '/webhooks/endpoints', { key });
    t.equal(list.status, 200);
    t.ok(list.body.data.some((e: { id: string }) => e.id === res.body.id));
    t.notOk(list.raw.includes(res.body.secret), 'no secret in the list');
    const [stored] = await h.sql<{ secret_encrypted: Buffer }[]>`SELECT secret_encrypted FROM webhook_endpoints WHERE id = ${res.body.id}`;
    t.notOk(Buffer.from(stored!.secret_encrypted).includes(Buffer.from(res.body.secret.slice(6))), 'ciphertext, not the secret');
  });

  t.test('an empty events list means every event', async (t) => {
    const res = await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://localhost/all' } });
    t.equal(res.status, 201);
    t.same(res.body.events, []);
  });

  t.test('an unknown event type is 422 naming the field; nothing is created', async (t) => {
    const before = await h.api('GET', '/webhooks/endpoints', { key });
    const res = await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://localhost/x', events: ['invoice.paid', 'invoice.exploded'] } });
    t.equal(res.status, 422);
    t.equal(res.body.code, 'validation_error');
    t.equal(res.body.details.errors[0].path, 'events[1]');
    const after = await h.api('GET', '/webhooks/endpoints', { key });
    t.equal(after.body.data.length, before.body.data.length);
  });

  t.test('http://, a URL that is not one, and credentials are 400 webhook_endpoint_invalid naming url', async (t) => {
    for (const url of ['http://localhost/hook', 'not a url', 'https://user:pass@localhost/hook', 'ftp://localhost/x']) {
      const res = await h.api('POST', '/webhooks/endpoints', { key, body: { url } });
      t.equal(res.status, 400, url);
      t.equal(res.body.code, 'webhook_endpoint_invalid', url);
      t.equal(res.body.details.errors[0].path, 'url', url);
      t.ok(isEnvelope(res.body), url);
    }
  });

  t.test('malformed ids are 422 on webhook routes; unknown ids 404 webhook_endpoint_not_found', async (t) => {
    const unknown = '0190a5d2-0000-7000-8000-000000000000';
    const cases: [string, string, unknown?][] = [
      ['GET', ''],
      ['PATCH', '', { enabled: true }],
      ['DELETE', ''],
      ['POST', '/rotate-secret'],
      ['POST', '/test'],
    ];
    for (const [method, suffix, body] of cases) {
      const bad = await h.api(method as 'GET', `/webhooks/endpoints/not-a-uuid${suffix}`, { key, body });
      t.equal(bad.status, 422, `${method} malformed`);
      t.equal(bad.body.code, 'validation_error');
      t.equal(bad.body.details.errors[0].path, 'endpoint_id');
      const missing = await h.api(method as 'GET', `/webhooks/endpoints/${unknown}${suffix}`, { key, body });
      t.equal(missing.status, 404, `${method} unknown`);
      t.equal(missing.body.code, 'webhook_endpoint_not_found');
    }
  });

  t.test("another merchant's endpoint is 404 for every operation", async (t) => {
    const mine = await createEndpoint(h, key, { url: 'https://localhost/mine' });
    const other = await h.key(['webhooks:manage']);
    for (const [method, suffix] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/rotate-secret'], ['POST', '/test']] as const) {
      const res = await h.api(method, `/webhooks/endpoints/${mine.id}${suffix}`, { key: other.key, body: method === 'PATCH' ? { enabled: false } : undefined });
      t.equal(res.status, 404, `${method}${suffix}`);
    }
    t.equal((await h.api('GET', `/webhooks/endpoints/${mine.id}`, { key })).status, 200);
  });

  t.test('PATCH changes only what is given; disabling stamps disabled_at; DELETE is 204 then 404', async (t) => {
    const ep = await createEndpoint(h, key, { url: 'https://localhost/p', description: 'before', events: ['invoice.paid'] });
    const res = await h.api('PATCH', `/webhooks/endpoints/${ep.id}`, { key, body: { description: 'after', events: [], is_sandbox: true } });
    t.equal(res.status, 200);
    t.match(res.body, { url: 'https://localhost/p', description: 'after', events: [], is_sandbox: true, enabled: true });
    const off = await h.api('PATCH', `/webhooks/endpoints/${ep.id}`, { key, body: { enabled: false } });
    t.equal(off.body.enabled, false);
    t.match(off.body.disabled_at, TS);
    const bad = await h.api('PATCH', `/webhooks/endpoints/${ep.id}`, { key, body: { url: 'http://localhost/p' } });
    t.equal(bad.status, 400);
    t.equal(bad.body.code, 'webhook_endpoint_invalid');
    const del = await h.api('DELETE', `/webhooks/endpoints/${ep.id}`, { key });
    t.equal(del.status, 204);
    t.equal(del.raw, '');
    t.equal((await h.api('GET', `/webhooks/endpoints/${ep.id}`, { key })).status, 404);
    t.equal((await h.api('DELETE', `/webhooks/endpoints/${ep.id}`, { key })).status, 404);
  });

  t.test('rotate-secret returns a new secret and prefix', async (t) => {
    const ep = await createEndpoint(h, key, { url: 'https://localhost/r' });
    const res = await h.api('POST', `/webhooks/endpoints/${ep.id}/rotate-secret`, { key });
    t.equal(res.status, 200);
    t.match(res.body.secret, /^whsec_/);
    t.not(res.body.secret, ep.secret);
    t.equal(res.body.secret_prefix, res.body.secret.slice(0, 12));
  });

  t.test('verify-signature: valid, wrong secret, stale, malformed, no payload', async (t) => {
    const secret = 'whsec_test_secret_value';
    const body = '{"id":"evt","type":"invoice.paid"}';
    const now = Math.floor(Date.now() / 1000);
    const header = signatureHeader(secret, now, body);
    const ok = await h.api('POST', '/webhooks/verify-signature', { key, body: { signature: header, secret, payload: body } });
    t.equal(ok.status, 200);
    t.same(ok.body, { valid: true, message: 'The signature is valid.' });
    const wrong = await h.api('POST', '/webhooks/verify-signature', { key, body: { signature: header, secret: 'whsec_other', payload: body } });
    t.equal(wrong.body.valid, false);
    t.equal(wrong.body.expected_signature, signatureHeader('whsec_other', now, body));
    const staleHeader = signatureHeader(secret, now - 25 * 3600, body);
    const stale = await h.api('POST', '/webhooks/verify-signature', { key, body: { signature: staleHeader, secret, payload: body } });
    t.equal(stale.body.valid, false);
    t.match(stale.body.message, /24 hours/);
    const yesterday = signatureHeader(secret, now - 23 * 3600, body);
    t.equal((await h.api('POST', '/webhooks/verify-signature', { key, body: { signature: yesterday, secret, payload: body } })).body.valid, true, 'within 24 h');
    const malformed = await h.api('POST', '/webhooks/verify-signature', { key, body: { signature: 'v1=abc', secret, payload: body } });
    t.equal(malformed.body.valid, false);
    t.match(malformed.body.message, /t=<unix seconds>/);
    const noPayload = await h.api('POST', '/webhooks/verify-signature', { key, body: { signature: header, secret } });
    t.equal(noPayload.body.valid, false);
    t.match(noPayload.body.message, /payload/);
    t.notOk('expected_signature' in noPayload.body);
    const missing = await h.api('POST', '/webhooks/verify-signature', { key, body: { secret } });
    t.equal(missing.status, 422);
    t.equal(missing.body.details.errors[0].path, 'signature');
  });
});

t.test('private targets are refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS', async (t) => {
  const h = await testApp(t, { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' });
  const { key } = await h.key(['webhooks:manage']);
  for (const url of ['https://localhost/hook', 'https://127.0.0.1/hook', 'https://[::ffff:127.0.0.1]/hook', 'https://169.254.169.254/latest', 'https://10.1.2.3/x', 'https://[fe80::1]/x']) {
    const res = await h.api('POST', '/webhooks/endpoints', { key, body: { url } });
    t.equal(res.status, 400, url);
    t.equal(res.body.code, 'webhook_endpoint_invalid', url);
  }
  t.equal((await h.api('GET', '/webhooks/endpoints', { key })).body.data.length, 0);

  t.test('an endpoint created while allowed cannot be reached once the guard is on: the attempt fails before connecting', async (t) => {
    const receiver = await startHttpsReceiver(t);
    const [row] = await h.sql<{ id: string }[]>`SELECT id FROM merchants LIMIT 1`;
    const open = await testApp(t, {}, { sql: h.sql, dbUrl: h.dbUrl });
    const { key: openKey } = await open.key(['webhooks:manage'], { merchantId: row!.id });
    const ep = await createEndpoint(open, openKey, { url: receiver.url() });
    const res = await h.api('POST', `/webhooks/endpoints/${ep.id}/test`, { key });
    t.equal(res.status, 200);
    t.equal(res.body.status, 'failed');
    t.equal(res.body.last_error, 'address_not_allowed', 'the category, not the raw error');
    t.equal(receiver.received.length, 0, 'no byte reached the receiver');
  });
});

t.test('deliveries', async (t) => {
  const h = await testApp(t, { WEBHOOK_RETRY_SCHEDULE: '1,2', WEBHOOK_DISABLE_AFTER_FAILURES: '1000' });
  await h.startWorker();
  const receiver = await startHttpsReceiver(t);
  const { key, merchantId } = await h.key(['*']);

  t.test('an event arrives signed; Stripe’s SDK and our verify route accept it; rotation invalidates the old secret', async (t) => {
    const ep = await createEndpoint(h, key, { url: receiver.url('/all') });
    const client = await h.api('POST', '/clients', { key, body: { name: 'Andes SpA', email: 'andes@example.cl', rut: '76.086.428-5' } });
    t.equal(client.status, 201);
    const [got] = (await receiver.waitFor(1)).filter((r) => r.path === '/all');
    t.ok(got);
    t.equal(got!.headers['content-type'], 'application/json');
    t.equal(got!.headers['x-webhook-event'], 'client.created');
    t.match(String(got!.headers['user-agent']), /Invoicing-Webhooks/);
    const sig = String(got!.headers['x-webhook-signature']);
    t.match(sig, /^t=\d+,v1=[0-9a-f]{64}$/);
    const event = stripe.webhooks.constructEvent(got!.body, sig, ep.secret) as unknown as Record<string, any>;
    t.equal(event.type, 'client.created');
    t.equal(event.id, got!.headers['x-webhook-id']);
    t.same(Object.keys(event), ['id', 'type', 'created_at', 'api_version', 'is_test', 'data']);
    t.match(event, { api_version: 'v1', is_test: false, created_at: TS, data: { object: { id: client.body.id, email: 'andes@example.cl', rut: '76086428-5' } } });
    const verified = await h.api('POST', '/webhooks/verify-signature', { key, body: { signature: sig, secret: ep.secret, payload: got!.body } });
    t.equal(verified.body.valid, true);

    const [d] = await until('the attempt to be recorded', async () => {
      const ds = await deliveries(h, ep.id);
      return ds[0]?.status === 'success' ? ds : null;
    });
    t.match(d, { status: 'success', attempts: 1, max_attempts: 3, event_type: 'client.created', is_test: false });
    const [a] = await attempts(h, d!.id);
    t.match(a, { attempt_number: 1, response_status: 200, response_body: 'ok', error: null });
    t.equal(a!.request_headers['X-Webhook-Signature'], sig);

    const rotated = await h.api('POST', `/webhooks/endpoints/${ep.id}/rotate-secret`, { key });
    const before = receiver.received.length;
    await h.api('PATCH', `/clients/${client.body.id}`, { key, body: { phone: '+56 2 2345 6789' } });
    const next = (await receiver.waitFor(before + 1)).at(-1)!;
    t.equal(next.headers['x-webhook-event'], 'client.updated');
    const nextSig = String(next.headers['x-webhook-signature']);
    t.ok(stripe.webhooks.constructEvent(next.body, nextSig, rotated.body.secret));
    t.throws(() => stripe.webhooks.constructEvent(next.body, nextSig, ep.secret), 'the old secret no longer verifies');
    await h.api('DELETE', `/webhooks/endpoints/${ep.id}`, { key });
  });

  t.test('an endpoint gets only the types it subscribes to', async (t) => {
    const paidOnly = await createEndpoint(h, key, { url: receiver.url('/paid-only'), events: ['invoice.paid'] });
    const created = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) });
    t.equal(created.status, 201);
    const paid = await h.api('POST', `/invoices/${created.body.invoice_id}/mark-paid`, { key, body: { payment_amount: Number(created.body.total) } });
    t.equal(paid.status, 200);
    await until('the invoice.paid delivery', async () => (await deliveries(h, paidOnly.id)).find((d) => d.status === 'success'));
    const mine = await deliveries(h, paidOnly.id);
    t.same(mine.map((d) => d.event_type), ['invoice.paid'], 'no client.created, invoice.created nor invoice.sent');
    const hit = receiver.received.filter((r) => r.path === '/paid-only');
    t.equal(hit.length, 1);
    t.equal(JSON.parse(hit[0]!.body).data.object.status, 'paid');
    await h.api('DELETE', `/webhooks/endpoints/${paidOnly.id}`, { key });
  });

  t.test('failures retry on the schedule until a 2xx; every attempt is kept', async (t) => {
    receiver.reply((req, n) => (req.path === '/flaky' && receiver.received.filter((r) => r.path === '/flaky').length <= 2 ? { status: 500, body: `boom ${n}` } : { status: 200, body: 'ok' }));
    const ep = await createEndpoint(h, key, { url: receiver.url('/flaky'), events: ['client.created'] });
    await h.api('POST', '/clients', { key, body: { name: 'Flaky', email: 'flaky@example.cl' } });
    const [d] = await until('three attempts', async () => {
      const ds = await deliveries(h, ep.id);
      return ds[0]?.status === 'success' ? ds : null;
    });
    t.equal(d!.attempts, 3);
    const all = await attempts(h, d!.id);
    t.same(all.map((a) => a.response_status), [500, 500, 200]);
    t.match(all[0]!.response_body, /^boom/);
    const hits = receiver.received.filter((r) => r.path === '/flaky');
    t.equal(hits.length, 3);
    // Schedule 1 s then 2 s, ±10 % jitter, plus polling.
    t.ok(hits[1]!.at - hits[0]!.at >= 850, `first wait ${hits[1]!.at - hits[0]!.at} ms`);
    t.ok(hits[2]!.at - hits[1]!.at >= 1750, `second wait ${hits[2]!.at - hits[1]!.at} ms`);
    t.equal(new Set(hits.map((r) => r.headers['x-webhook-id'])).size, 1, 'one event id across attempts');
    t.equal(new Set(hits.map((r) => r.body)).size, 1, 'the same bytes every attempt');
    t.equal((await endpointRow(h, ep.id)).consecutive_failures, 0, 'the success ended the streak');
    receiver.reply(() => ({ status: 200, body: 'ok' }));
    await h.api('DELETE', `/webhooks/endpoints/${ep.id}`, { key });
  });

  t.test('a 3xx is a failure (not followed); after max_attempts the delivery failed', async (t) => {
    receiver.reply((req) => (req.path === '/moved' ? { status: 301, headers: { location: receiver.url('/elsewhere') } } : { status: 200, body: 'ok' }));
    const ep = await createEndpoint(h, key, { url: receiver.url('/moved'), events: ['client.created'] });
    await h.api('POST', '/clients', { key, body: { name: 'Moved', email: 'moved@example.cl' } });
    const [d] = await until('the delivery to fail', async () => {
      const ds = await deliveries(h, ep.id);
      return ds[0]?.status === 'failed' ? ds : null;
    });
    t.equal(d!.attempts, 3);
    t.match(d!.last_error, /redirect/);
    t.equal(receiver.received.filter((r) => r.path === '/elsewhere').length, 0, 'the redirect was not followed');
    t.equal((await endpointRow(h, ep.id)).consecutive_failures, 3);
    receiver.reply(() => ({ status: 200, body: 'ok' }));
    await h.api('DELETE', `/webhooks/endpoints/${ep.id}`, { key });
  });

  t.test('Retry-After on a 503 pushes the next attempt back', async (t) => {
    receiver.reply((req) => (req.path === '/busy' && receiver.received.filter((r) => r.path === '/busy').length === 1 ? { status: 503, headers: { 'retry-after': '4' } } : { status: 200, body: 'ok' }));
    const ep = await createEndpoint(h, key, { url: receiver.url('/busy'), events: ['client.created'] });
    await h.api('POST', '/clients', { key, body: { name: 'Busy', email: 'busy@example.cl' } });
    await until('success', async () => (await deliveries(h, ep.id))[0]?.status === 'success');
    const hits = receiver.received.filter((r) => r.path === '/busy');
    t.ok(hits[1]!.at - hits[0]!.at >= 3900, `waited ${hits[1]!.at - hits[0]!.at} ms for Retry-After: 4`);
    receiver.reply(() => ({ status: 200, body: 'ok' }));
    await h.api('DELETE', `/webhooks/endpoints/${ep.id}`, { key });
  });

  t.test('Retry-After on another status (a 500) is not heeded: the schedule decides', async (t) => {
    receiver.reply((req) =>
      req.path === '/err' && receiver.received.filter((r) => r.path === '/err').length === 1 ? { status: 500, headers: { 'retry-after': '3600' } } : { status: 200, body: 'ok' },
    );
    const ep = await createEndpoint(h, key, { url: receiver.url('/err'), events: ['client.created'] });
    await h.api('POST', '/clients', { key, body: { name: 'Err', email: 'err@example.cl' } });
    await until('success', async () => (await deliveries(h, ep.id))[0]?.status === 'success', 30_000);
    const hits = receiver.received.filter((r) => r.path === '/err');
    t.ok(hits[1]!.at - hits[0]!.at < 30_000, `the retry came ${hits[1]!.at - hits[0]!.at} ms later, not an hour`);
    receiver.reply(() => ({ status: 200, body: 'ok' }));
    await h.api('DELETE', `/webhooks/endpoints/${ep.id}`, { key });
  });

  t.test("a disabled sandbox endpoint's waiting retries stop, as any endpoint's do", async (t) => {
    receiver.reply((req) => (req.path === '/sbx-off' ? { status: 503, headers: { 'retry-after': '4' } } : { status: 200, body: 'ok' }));
    const ep = await createEndpoint(h, key, { url: receiver.url('/sbx-off'), events: ['client.created'], is_sandbox: true });
    await h.api('POST', '/clients', { key, body: { name: 'Sandbox off', email: 'sbx-off@example.cl' } });
    await until('the first attempt', async () => (await deliveries(h, ep.id))[0]?.attempts === 1);
    t.equal((await h.api('PATCH', `/webhooks/endpoints/${ep.id}`, { key, body: { enabled: false } })).status, 200);
    const [d] = await until('the delivery to stop', async () => {
      const ds = await deliveries(h, ep.id);
      return ds[0]?.status === 'failed' ? ds : null;
    }, 30_000);
    t.match(d, { attempts: 1, last_error: 'endpoint disabled' }, 'stopped with no attempt more');
    t.equal(receiver.received.filter((r) => r.path === '/sbx-off').length, 1, 'the receiver got only the first');
    receiver.reply(() => ({ status: 200, body: 'ok' }));
    await h.api('DELETE', `/webhooks/endpoints/${ep.id}`, { key });
  });

  t.test('a 410 disables the endpoint at once (reason gone); nothing more is sent', async (t) => {
    receiver.reply((req) => (req.path === '/gone' ? { status: 410, body: 'gone' } : { status: 200, body: 'ok' }));
    const ep = await createEndpoint(h, key, { url: receiver.url('/gone'), events: ['client.created'] });
    await h.api('POST', '/clients', { key, body: { name: 'Gone', email: 'gone@example.cl' } });
    const row = await until('disabled', async () => {
      const r = await endpointRow(h, ep.id);
      return r.enabled ? null : r;
    });
    t.equal(row.disabled_reason, 'gone');
    t.equal(row.consecutive_failures, 1, 'the 410 is a failed attempt, counted');
    t.ok(row.disabled_at);
    const [d] = await deliveries(h, ep.id);
    t.equal(d!.status, 'failed');
    t.equal(d!.attempts, 1);
    await h.api('POST', '/clients', { key, body: { name: 'Gone 2', email: 'gone2@example.cl' } });
    await new Promise((r) => setTimeout(r, 1500));
    t.equal((await deliveries(h, ep.id)).length, 1, 'a disabled endpoint gets no new deliveries');
    const [mail] = await h.sql<{ kind: string; data: any }[]>`SELECT kind, data FROM emails WHERE kind = 'endpoint_disabled' AND data->>'endpoint_id' = ${ep.id}`;
    t.equal(mail?.data.reason, 'gone', 'the merchant is e-mailed');
    receiver.reply(() => ({ status: 200, body: 'ok' }));
  });

  t.test('the test route: one attempt now, is_test, max_attempts 1, any type, never counted', async (t) => {
    const ep = await createEndpoint(h, key, { url: receiver.url('/test-route'), events: ['invoice.paid'] });
    const res = await h.api('POST', `/webhooks/endpoints/${ep.id}/test`, { key, body: { event: 'client.updated' } });
    t.equal(res.status, 200);
    t.match(res.body, { id: UUID, endpoint_id: ep.id, event_type: 'client.updated', event_id: UUID, status: 'success', attempts: 1, max_attempts: 1, is_test: true, last_response_status: 200, completed_at: TS, created_at: TS, next_retry_at: null });
    const got = receiver.received.filter((r) => r.path === '/test-route').at(-1)!;
    const event = stripe.webhooks.constructEvent(got.body, String(got.headers['x-webhook-signature']), ep.secret) as unknown as Record<string, any>;
    t.equal(event.is_test, true);
    t.equal(event.type, 'client.updated');
    const dflt = await h.api('POST', `/webhooks/endpoints/${ep.id}/test`, { key });
    t.equal(dflt.body.event_type, 'invoice.paid');

    receiver.reply((req) => (req.path === '/test-route' ? { status: 500, body: 'no' } : { status: 200, body: 'ok' }));
    const failed = await h.api('POST', `/webhooks/endpoints/${ep.id}/test`, { key });
    t.match(failed.body, { status: 'failed', attempts: 1, last_response_status: 500, last_error: 'http_error', next_retry_at: null });
    t.equal((await endpointRow(h, ep.id)).consecutive_failures, 0, 'a test failure does not count');
    const unknownType = await h.api('POST', `/webhooks/endpoints/${ep.id}/test`, { key, body: { event: 'nope' } });
    t.equal(unknownType.status, 422);
    t.equal(unknownType.body.details.errors[0].path, 'event');
    receiver.reply(() => ({ status: 200, body: 'ok' }));
  });

  t.test('a sandbox endpoint retries but never counts failures; its deliveries are test', async (t) => {
    receiver.reply((req) => (req.path === '/sandbox' || req.path === '/normal' ? { status: 500, body: 'down' } : { status: 200, body: 'ok' }));
    const sandbox = await createEndpoint(h, key, { url: receiver.url('/sandbox'), events: ['client.created'], is_sandbox: true });
    const normal = await createEndpoint(h, key, { url: receiver.url('/normal'), events: ['client.created'] });
    await h.api('POST', '/clients', { key, body: { name: 'Sandbox', email: 'sandbox@example.cl' } });
    await until('both to fail', async () => {
      const a = await deliveries(h, sandbox.id);
      const b = await deliveries(h, normal.id);
      return a[0]?.status === 'failed' && b[0]?.status === 'failed';
    });
    const [sd] = await deliveries(h, sandbox.id);
    t.match(sd, { is_test: true, attempts: 3 });
    t.equal((await endpointRow(h, sandbox.id)).consecutive_failures, 0);
    t.equal((await endpointRow(h, normal.id)).consecutive_failures, 3);
    const body = JSON.parse(receiver.received.find((r) => r.path === '/sandbox')!.body);
    t.equal(body.is_test, true);
    t.equal(JSON.parse(receiver.received.find((r) => r.path === '/normal')!.body).is_test, false);
    const reenabled = await h.api('PATCH', `/webhooks/endpoints/${normal.id}`, { key, body: { enabled: true } });
    t.equal(reenabled.body.consecutive_failures, 0, 'enabling clears the streak');
    receiver.reply(() => ({ status: 200, body: 'ok' }));
    await h.api('DELETE', `/webhooks/endpoints/${sandbox.id}`, { key });
    await h.api('DELETE', `/webhooks/endpoints/${normal.id}`, { key });
  });

  // A test delivery gives up after 10 s instead (webhook-limits.test.ts).
  t.test('no answer within 15 s is a failure', async (t) => {
    receiver.reply((req) => (req.path === '/slow' ? { status: 200, body: 'late', delayMs: 17_000 } : { status: 200, body: 'ok' }));
    const ep = await createEndpoint(h, key, { url: receiver.url('/slow'), events: ['client.created'] });
    await h.api('POST', '/clients', { key, body: { name: 'Slow', email: 'slow@example.cl' } });
    const [d] = await until('the first attempt to give up', async () => {
      const ds = await deliveries(h, ep.id);
      return ds[0] && ds[0].attempts >= 1 ? ds : null;
    }, 30_000);
    t.equal(d!.last_error, 'no answer within 15 s');
    const [a] = await attempts(h, d!.id);
    t.match(a, { response_status: null, error: 'no answer within 15 s' });
    t.ok(a!.duration_ms >= 14_900, `it waited the whole 15 s (${a!.duration_ms} ms)`);
    await h.api('DELETE', `/webhooks/endpoints/${ep.id}`, { key });
    receiver.reply(() => ({ status: 200, body: 'ok' }));
  });
  void merchantId;
});

t.test('auto-disable needs both the count and the age of the streak', async (t) => {
  const smtp = await startSmtpSink(t);
  const h = await testApp(t, { SMTP_URL: smtp.url, WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1,1', WEBHOOK_DISABLE_AFTER_FAILURES: '3', WEBHOOK_DISABLE_AFTER_SECONDS: '3600' });
  await h.startWorker();
  const receiver = await startHttpsReceiver(t);
  receiver.reply(() => ({ status: 500, body: 'down' }));
  const { key } = await h.key(['*']);
  const ep = await createEndpoint(h, key, { url: receiver.url('/down'), events: ['client.created'] });
  t.teardown(() => clock.reset());
  await h.api('POST', '/clients', { key, body: { name: 'A', email: 'a@example.cl' } });
  await until('4 failed attempts', async () => (await deliveries(h, ep.id))[0]?.attempts === 4);
  const young = await endpointRow(h, ep.id);
  t.equal(young.enabled, true, 'over the count but the streak is younger than an hour');
  t.ok(young.consecutive_failures >= 4);

  clock.advance(3601 * 1000);
  await h.api('POST', '/clients', { key, body: { name: 'B', email: 'b@example.cl' } });
  const off = await until('disabled', async () => {
    const r = await endpointRow(h, ep.id);
    return r.enabled ? null : r;
  });
  t.equal(off.disabled_reason, 'consecutive_failures');
  const ds = await deliveries(h, ep.id);
  t.ok(ds.every((d) => d.status === 'failed'), 'pending retries stopped');
  t.ok(ds.some((d) => /endpoint disabled/.test(d.last_error ?? '')));
  const hitsAtDisable = receiver.received.length;
  await new Promise((r) => setTimeout(r, 2500));
  t.equal(receiver.received.length, hitsAtDisable, 'nothing more is sent');
  const mails = await h.sql<{ kind: string; to_address: string }[]>`SELECT kind, to_address FROM emails WHERE kind = 'endpoint_disabled'`;
  t.equal(mails.length, 1, 'the merchant is e-mailed once');
  t.equal(mails[0]!.to_address, 'facturacion@test.cl');
  const [notice] = await smtp.waitFor(1);
  t.equal(notice!.headers.get('x-email-kind'), 'endpoint_disabled');
  t.equal(notice!.to, 'facturacion@test.cl');
  t.equal(notice!.subject, `Webhooks desactivados: ${ep.url}`);
  t.match(notice!.text, /veces seguidas/);
  t.match(notice!.text, new RegExp(`PATCH /webhooks/endpoints/${ep.id}`));

  const back = await h.api('PATCH', `/webhooks/endpoints/${ep.id}`, { key, body: { enabled: true } });
  t.match(back.body, { enabled: true, consecutive_failures: 0, disabled_at: null, disabled_reason: null });
});
