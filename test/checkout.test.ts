// Checkout sessions (api-spec "Checkout", docs/decisions.md §11, §10, §14): POST /checkout and its invoice,
// the status route, the hosted page and its forms (pay, simulated decline, cancel) over plain
// HTTP, expiry by the job and the sweep, exactly one outcome however payments and the expiry race,
// provider failures, idempotent replay, cross-site submissions refused, and the webhooks of every
// outcome at a real HTTPS receiver.
import t from 'tap';
import { isEnvelope, testApp, type TestApp } from './helpers/app.js';
import { TS, UUID } from './helpers/fixtures.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { startSmtpSink } from './helpers/smtp.js';
import { clock, dateInZone } from '../src/clock.js';
import { createMailer } from '../src/email/transport.js';
import { expireCheckouts } from '../jobs/checkout-expire.js';
import type { WorkerDeps } from '../jobs/worker.js';
import { expireCheckout } from '../src/checkout/expire.js';
import { ProviderError } from '../src/checkout/providers/provider.js';
import { invoiceUrls } from '../src/http/urls.js';
import * as merchants from '../src/merchants/service.js';
import { wireAmount } from '../src/money.js';
import { setRate } from '../src/rates/service.js';
import { until } from './helpers/until.js';
import { CANCEL, SUCCESS, checkoutBody, gatedProvider, holdConfirmations } from './helpers/checkout.js';

/** A merchant with this provider (none: null) and a key for it. */
async function seller(h: TestApp, provider: string | null = 'sandbox', scopes: Parameters<TestApp['key']>[0] = ['*']) {
  const m = await h.merchant({ payment_provider: provider === 'sandbox' ? 'sandbox' : null });
  // Providers registered only in this test are set the way a deploy with them would store them.
  if (provider !== null && provider !== 'sandbox') await h.sql`UPDATE merchants SET payment_provider = ${provider} WHERE id = ${m.id}`;
  const { key } = await h.key(scopes, { merchantId: m.id });
  return { merchantId: m.id, key };
}

async function create(h: TestApp, key: string, extra: Record<string, unknown> = {}) {
  const res = await h.api('POST', '/checkout', { key, body: checkoutBody(extra) });
  if (res.status !== 201) throw new Error(`checkout create: ${res.status} ${res.raw}`);
  return res.body as { checkout_id: string; checkout_url: string; invoice_id: string; expires_at: string; status: string };
}

interface Form {
  action: string;
  csrf: string;
}

interface Page {
  status: number;
  headers: Record<string, unknown>;
  html: string;
  pay: Form | null;
  decline: Form | null;
  cancel: string | null;
}

const pathOf = (url: string) => new URL(url).pathname;

async function openPage(h: TestApp, url: string, headers: Record<string, string> = {}): Promise<Page> {
  const res = await h.app.inject({ method: 'GET', url: pathOf(url), headers });
  const forms = [...res.body.matchAll(/<form method="post" action="([^"]+)">\s*<input type="hidden" name="csrf_token" value="([^"]+)">/g)].map(
    (m) => ({ action: m[1]!, csrf: m[2]! }),
  );
  return {
    status: res.statusCode,
    headers: res.headers,
    html: res.body,
    pay: forms.find((f) => f.action.endsWith('/pay')) ?? null,
    decline: forms.find((f) => f.action.endsWith('/decline')) ?? null,
    cancel: /<a href="([^"]+\/cancel)">/.exec(res.body)?.[1] ?? null,
  };
}

/** Submits a form of the page as a browser would (same-origin), or with the headers given. */
async function submit(h: TestApp, form: Form, opts: { csrf?: string | null; headers?: Record<string, string> } = {}) {
  const csrf = opts.csrf === undefined ? form.csrf : opts.csrf;
  return h.app.inject({
    method: 'POST',
    url: pathOf(form.action),
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', origin: 'null', ...opts.headers },
    payload: csrf === null ? '' : new URLSearchParams({ csrf_token: csrf }).toString(),
  });
}

async function status(h: TestApp, key: string, id: string) {
  return (await h.api('GET', `/checkout/${id}/status`, { key })).body;
}

async function eventTypes(h: TestApp, merchantId: string): Promise<string[]> {
  const rows = await h.sql<{ type: string }[]>`SELECT type FROM events WHERE merchant_id = ${merchantId} ORDER BY created_at, id`;
  return rows.map((r) => r.type);
}

async function paymentsOf(h: TestApp, invoiceId: string) {
  return h.sql<{ id: string; status: string; provider: string; transaction_id: string; amount: string; paid_at: Date | null }[]>`
    SELECT * FROM payments WHERE invoice_id = ${invoiceId} ORDER BY created_at, id`;
}

/** True while some session of this test's database waits for a row lock. */
async function someoneWaitsForALock(h: TestApp): Promise<boolean> {
  const rows = await h.sql`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
  return rows.length > 0;
}

/** The worker's own dependencies, for running its jobs in this process without its timers. */
function jobDeps(h: TestApp): WorkerDeps {
  return { config: h.ctx.config, sql: h.sql, boss: h.ctx.boss, mailer: createMailer(h.ctx.config), secrets: h.ctx.secrets };
}

t.test('checkout', async (t) => {
  const h = await testApp(t);
  t.teardown(() => clock.reset());

  t.test('POST /checkout: a pending session, its client reused by e-mail, its invoice sent without an e-mail', async (t) => {
    const { merchantId, key } = await seller(h);
    const client = await h.api('POST', '/clients', { key, body: { name: 'Cliente Antiguo', email: 'Antiguo@Example.cl' } });
    t.equal(client.status, 201);
    const before = Date.now();
    const res = await h.api('POST', '/checkout', { key, body: checkoutBody({ customer_email: 'antiguo@example.cl', external_reference: 'order-1' }) });
    t.equal(res.status, 201);
    t.same(Object.keys(res.body).sort(), ['checkout_id', 'checkout_url', 'completed_at', 'expires_at', 'external_reference', 'invoice_id', 'payment_status', 'status']);
    t.match(res.body, { checkout_id: UUID, status: 'pending', payment_status: 'unpaid', expires_at: TS, external_reference: 'order-1', completed_at: null, invoice_id: UUID });
    t.match(res.body.checkout_url, /^http:\/\/invoicing\.test\/checkout\/[A-Za-z0-9_-]{32}$/);
    t.notOk(res.body.checkout_url.includes(res.body.checkout_id), 'the URL holds a token, not the id');
    const ttl = Date.parse(res.body.expires_at) - before;
    t.ok(ttl >= 86_400_000 && ttl < 86_400_000 + 10_000, 'expires 24 hours ahead');

    const invoice = (await h.api('GET', `/invoices/${res.body.invoice_id}`, { key })).body;
    t.match(invoice, {
      client_id: client.body.id,
      status: 'sent',
      invoice_number: 'INV-000001',
      external_reference: 'order-1',
      currency: 'CLP',
      tax_inclusive: true,
      is_tax_exempt: false,
      tax_rate: '19.00',
      subtotal: '10000.00',
      tax_total: '1900.00',
      total: '11900.00',
      amount_paid: '0.00',
      due_date: dateInZone(new Date(), 'America/Santiago'),
      issue_date: dateInZone(new Date(), 'America/Santiago'),
    });
    t.same(invoice.items.map((i: any) => [i.description, i.quantity, i.unit_price, i.line_total]), [['Pedido 1001', '1', '11900.00', '11900.00']]);
    t.equal(invoice.client.name, 'Cliente Antiguo', 'the existing client is reused as it is');

    const [row] = await h.sql<{ source: string }[]>`SELECT source FROM invoices WHERE id = ${res.body.invoice_id}`;
    t.equal(row!.source, 'checkout');
    const emails = await h.sql`SELECT 1 FROM emails WHERE invoice_id = ${res.body.invoice_id}`;
    t.equal(emails.length, 0, 'no invoice e-mail');
    t.same(await eventTypes(h, merchantId), ['client.created', 'invoice.created', 'invoice.sent']);

    const [job] = await h.sql<{ start_after: Date; data: { checkout_id: string } }[]>`
      SELECT start_after, data FROM pgboss.job WHERE name = 'checkout-expire' AND data->>'checkout_id' = ${res.body.checkout_id}`;
    t.ok(job, 'the expiry job is enqueued with the session');
    t.equal(job!.start_after.toISOString(), res.body.expires_at, 'to start at expires_at');

    const other = await create(h, key, { customer_email: 'nuevo@example.cl', amount: 5000 });
    const otherInvoice = (await h.api('GET', `/invoices/${other.invoice_id}`, { key })).body;
    t.not(otherInvoice.client_id, client.body.id, 'a new e-mail makes a new client');
    t.equal(otherInvoice.invoice_number, 'INV-000002');
    t.equal(otherInvoice.total, '5000.00');
  });

  t.test('CHECKOUT_TTL_SECONDS sets expires_at', async (t) => {
    const short = await testApp(t, { CHECKOUT_TTL_SECONDS: '600' }, { sql: h.sql, dbUrl: h.dbUrl });
    const { key } = await seller(short);
    const before = Date.now();
    const res = await short.api('POST', '/checkout', { key, body: checkoutBody() });
    const ttl = Date.parse(res.body.expires_at) - before;
    t.ok(ttl >= 600_000 && ttl < 610_000, `${ttl} ms`);
  });

  t.test('validation: 422 naming every bad field; nothing is created', async (t) => {
    const { merchantId, key } = await seller(h);
    const cases: [Record<string, unknown>, string][] = [
      [{ amount: 0 }, 'amount'],
      [{ amount: -5 }, 'amount'],
      [{ amount: '11900' }, 'amount'],
      [{ amount: 100.5 }, 'amount'],
      [{ amount: 10.123, currency: 'USD' }, 'amount'],
      [{ amount: 1e13 }, 'amount'],
      [{ success_url: 'ftp://shop.example/x' }, 'success_url'],
      [{ success_url: 'javascript:alert(1)' }, 'success_url'],
      [{ cancel_url: '/orders/1' }, 'cancel_url'],
      [{ cancel_url: 'https://user:pw@shop.example/' }, 'cancel_url'],
      [{ customer_email: 'not-an-email' }, 'customer_email'],
      [{ customer_name: '' }, 'customer_name'],
      [{ description: '   ' }, 'description'],
      [{ external_reference: 'x'.repeat(256) }, 'external_reference'],
      [{ tip: 100 }, 'tip'],
    ];
    for (const [extra, field] of cases) {
      const res = await h.api('POST', '/checkout', { key, body: checkoutBody(extra) });
      t.equal(res.status, 422, `${JSON.stringify(extra).slice(0, 60)}: 422`);
      t.equal(res.body.code, 'validation_error');
      t.ok(res.body.details.errors.some((e: { path: string }) => e.path === field), `names ${field}`);
    }
    const missing = await h.api('POST', '/checkout', { key, body: {} });
    t.equal(missing.status, 422);
    t.same(
      missing.body.details.errors.map((e: { path: string }) => e.path).sort(),
      ['amount', 'cancel_url', 'customer_email', 'customer_name', 'description', 'success_url'],
      'every missing field is named',
    );
    await setRate(h.sql, merchantId, 'CLF', dateInZone(new Date(), 'America/Santiago'), '39000');
    await setRate(h.sql, merchantId, 'USD', dateInZone(new Date(), 'America/Santiago'), '950');
    for (const [amount, currency, total] of [[1.1234, 'CLF', '1.1234'], [10.12, 'USD', '10.12']] as const) {
      const ok = await h.api('POST', '/checkout', { key, body: checkoutBody({ amount, currency }) });
      t.equal(ok.status, 201, `${currency} takes ${amount}`);
      t.equal((await h.api('GET', `/invoices/${ok.body.invoice_id}`, { key })).body.total, wireAmount(total, currency));
    }
    const currency = await h.api('POST', '/checkout', { key, body: checkoutBody({ currency: 'XYZ' }) });
    t.equal(currency.status, 400);
    t.equal(currency.body.code, 'currency_not_supported');
    const { n } = (await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM checkout_sessions WHERE merchant_id = ${merchantId}`)[0]!;
    t.equal(n, 2, 'no session but the two valid ones');
  });

  t.test('no provider: 400 provider_not_configured and nothing created; can_charge follows the provider', async (t) => {
    const { merchantId, key } = await seller(h, null);
    t.equal((await h.api('GET', '/me', { key })).body.can_charge, false);
    const res = await h.api('POST', '/checkout', { key, body: checkoutBody() });
    t.equal(res.status, 400);
    t.equal(res.body.code, 'provider_not_configured');
    t.equal(res.body.retry, 'never');
    t.ok(isEnvelope(res.body));
    const [counts] = await h.sql<{ invoices: number; clients: number; sessions: number; events: number }[]>`
      SELECT (SELECT count(*)::int FROM invoices WHERE merchant_id = ${merchantId}) AS invoices,
             (SELECT count(*)::int FROM clients WHERE merchant_id = ${merchantId}) AS clients,
             (SELECT count(*)::int FROM checkout_sessions WHERE merchant_id = ${merchantId}) AS sessions,
             (SELECT count(*)::int FROM events WHERE merchant_id = ${merchantId}) AS events`;
    t.same(counts, { invoices: 0, clients: 0, sessions: 0, events: 0 }, 'nothing created');

    await merchants.setPaymentProvider(h.sql, merchantId, 'sandbox');
    t.equal((await h.api('GET', '/me', { key })).body.can_charge, true);
    t.equal((await h.api('POST', '/checkout', { key, body: checkoutBody() })).status, 201, 'a provider set a moment ago is used at once');

    await h.sql`UPDATE merchants SET payment_provider = 'retired-gateway' WHERE id = ${merchantId}`;
    const unknown = await h.api('POST', '/checkout', { key, body: checkoutBody() });
    t.equal(unknown.status, 400);
    t.equal(unknown.body.code, 'invalid_provider');
    t.match(unknown.body.message, /retired-gateway is not available: use one of .*\bsandbox\b/);
  });

  t.test('provider failures: 503 provider_unavailable is retry-safe (the same Idempotency-Key then succeeds); others map to their codes', async (t) => {
    const gateway = gatedProvider('test-outage');
    const { merchantId, key } = await seller(h, 'test-outage');
    const body = checkoutBody();
    const headers = { 'idempotency-key': 'order-503' };
    for (const failure of [new ProviderError('provider_unavailable', 'gateway timeout'), new Error('ECONNRESET')]) {
      gateway.failure = failure;
      const res = await h.api('POST', '/checkout', { key, body, headers });
      t.equal(res.status, 503, failure.message);
      t.equal(res.body.code, 'provider_unavailable');
      t.equal(res.body.retry, 'safe');
      t.notOk(res.raw.includes('ECONNRESET'), 'the cause is logged, not shown');
    }
    const { n } = (await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM invoices WHERE merchant_id = ${merchantId}`)[0]!;
    t.equal(n, 0, 'nothing created');
    for (const code of ['provider_credentials_missing', 'merchant_misconfigured', 'invalid_provider'] as const) {
      gateway.failure = new ProviderError(code, code);
      const res = await h.api('POST', '/checkout', { key, body: checkoutBody() });
      t.equal(res.status, 400, code);
      t.equal(res.body.code, code);
    }
    gateway.failure = null;
    const retried = await h.api('POST', '/checkout', { key, body, headers });
    t.equal(retried.status, 201, 'the retry succeeds');
    t.equal(retried.headers['idempotent-replayed'], undefined, 'and is a first execution, not a replay');
  });

  t.test('Idempotency-Key: a repeat replays the session byte for byte; another body is 422', async (t) => {
    const { merchantId, key } = await seller(h);
    const body = checkoutBody();
    const headers = { 'idempotency-key': 'order-1001' };
    const first = await h.api('POST', '/checkout', { key, body, headers });
    const again = await h.api('POST', '/checkout', { key, body, headers });
    t.equal(first.status, 201);
    t.equal(again.status, 201);
    t.equal(again.headers['idempotent-replayed'], 'true');
    t.equal(again.raw, first.raw, 'byte-identical');
    const { n } = (await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM checkout_sessions WHERE merchant_id = ${merchantId}`)[0]!;
    t.equal(n, 1, 'one session');
    const other = await h.api('POST', '/checkout', { key, body: { ...body, amount: 1 }, headers });
    t.equal(other.status, 422);
  });

  t.test('GET /checkout/{id}/status: the session; 400 for a malformed id, 404 for unknown and foreign ones, 403 without the scope', async (t) => {
    const { key } = await seller(h);
    const c = await create(h, key, { external_reference: 'ref-9' });
    const res = await h.api('GET', `/checkout/${c.checkout_id}/status`, { key });
    t.equal(res.status, 200);
    t.match(res.body, { checkout_id: c.checkout_id, status: 'pending', payment_status: 'unpaid', external_reference: 'ref-9', completed_at: null, checkout_url: c.checkout_url, expires_at: c.expires_at });
    const bad = await h.api('GET', '/checkout/not-a-uuid/status', { key });
    t.equal(bad.status, 400);
    t.equal(bad.body.code, 'validation_error');
    t.equal(bad.body.details.errors[0].path, 'checkout_id');
    const unknown = await h.api('GET', '/checkout/0190a5d2-0000-7000-8000-000000000000/status', { key });
    t.equal(unknown.status, 404);
    t.equal(unknown.body.code, 'checkout_not_found');
    const stranger = await seller(h);
    t.equal((await h.api('GET', `/checkout/${c.checkout_id}/status`, { key: stranger.key })).body.code, 'checkout_not_found');
    const narrow = await seller(h, 'sandbox', ['invoices:read']);
    const denied = await h.api('GET', `/checkout/${c.checkout_id}/status`, { key: narrow.key });
    t.equal(denied.status, 403);
    t.equal(denied.body.details.required_scope, 'checkout:create');
    t.equal((await h.api('POST', '/checkout', { key: narrow.key, body: checkoutBody() })).status, 403);
  });

  t.test('the hosted page: merchant, description and amount, escaped, with the security headers and no script', async (t) => {
    const { key } = await seller(h);
    const c = await create(h, key, { description: '<script>alert("x")</script> & más' });
    const page = await openPage(h, c.checkout_url);
    t.equal(page.status, 200);
    t.match(String(page.headers['content-type']), /^text\/html/);
    t.match(page.html, /<meta name="viewport"/);
    t.match(page.html, /Comercial Test SpA/);
    t.match(page.html, /\$11\.900/, 'the amount in es-CL');
    t.match(page.html, /INV-\d{6}/, 'the invoice number');
    t.notMatch(page.html, /<script/i, 'no script, and the description is escaped');
    t.match(page.html, /&lt;script&gt;alert\(&quot;x&quot;\)&lt;\/script&gt; &amp; más/);
    t.ok(page.pay && page.decline && page.cancel, 'Pay, simulated decline and cancel');
    t.match(page.html, /Simular un pago rechazado/);
    const csp = String(page.headers['content-security-policy']);
    t.match(csp, /default-src 'none'/);
    t.match(csp, /style-src 'sha256-[A-Za-z0-9+/=]+'/);
    t.match(csp, /form-action 'self' https:\/\/shop\.example(;|$)/, 'forms may redirect only to the shop');
    t.equal(page.headers['x-frame-options'], 'DENY');
    t.equal(page.headers['referrer-policy'], 'no-referrer');
    t.equal(page.headers['x-content-type-options'], 'nosniff');
    t.equal(page.headers['cache-control'], 'no-store');

    const english = await seller(h);
    await h.sql`UPDATE merchants SET default_locale = 'en' WHERE id = ${english.merchantId}`;
    const en = await openPage(h, (await create(h, english.key)).checkout_url);
    t.match(en.html, /lang="en"/);
    t.match(en.html, /CLP 11,900/);
    t.match(en.html, /Simulate a declined payment/);

    for (const url of ['/checkout/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', '/checkout/short', '/checkout/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/cancel', '/checkout/x/y/z']) {
      const res = await h.app.inject({ url });
      t.equal(res.statusCode, 404, url);
      t.match(String(res.headers['content-type']), /^text\/html/, `${url}: an HTML page`);
      t.match(res.body, /Pago no encontrado/);
    }
  });

  t.test('Pay: payment, paid invoice, completed session, events in order, a receipt; 303 to success_url; then no Pay button', async (t) => {
    const { merchantId, key } = await seller(h);
    const c = await create(h, key);
    const page = await openPage(h, c.checkout_url);
    const res = await submit(h, page.pay!);
    t.equal(res.statusCode, 303);
    t.equal(res.headers.location, SUCCESS);

    const s = await status(h, key, c.checkout_id);
    t.match(s, { status: 'completed', payment_status: 'paid', completed_at: TS });
    const invoice = (await h.api('GET', `/invoices/${c.invoice_id}`, { key })).body;
    t.equal(invoice.status, 'paid');
    t.equal(invoice.amount_paid, '11900.00');
    const payments = (await h.api('GET', `/payments?invoice_id=${c.invoice_id}`, { key })).body.data;
    t.equal(payments.length, 1);
    t.match(payments[0], { status: 'succeeded', provider: 'sandbox', amount: '11900.00', currency: 'CLP', method: 'card', paid_at: s.completed_at });
    t.match(payments[0].transaction_id, /^sbx_ch_/);
    t.same(invoice.payment_reference, { provider: 'sandbox', transaction_id: payments[0].transaction_id, paid_at: s.completed_at });
    t.same((await eventTypes(h, merchantId)).slice(-3), ['payment.succeeded', 'invoice.paid', 'checkout.completed']);
    const [event] = await h.sql<{ payload: any }[]>`SELECT payload FROM events WHERE merchant_id = ${merchantId} AND type = 'checkout.completed'`;
    t.same(event!.payload.data.object, s, 'checkout.completed carries the session as the status route shows it');
    const receipts = await h.sql`SELECT 1 FROM emails WHERE invoice_id = ${c.invoice_id} AND kind = 'receipt'`;
    t.equal(receipts.length, 1, 'a receipt is queued');

    const after = await openPage(h, c.checkout_url);
    t.equal(after.status, 200);
    t.equal(after.pay, null, 'no Pay button');
    t.equal(after.decline, null);
    t.match(after.html, /data-state="completed"/);
    t.match(after.html, /Pago recibido/);
    t.ok(after.html.includes(`href="${SUCCESS}"`), 'a way back to the store');

    const again = await submit(h, page.pay!);
    t.equal(again.statusCode, 303, 'a second click');
    t.equal(again.headers.location, SUCCESS, 'lands where the first did');
    t.equal((await paymentsOf(h, c.invoice_id)).length, 1, 'and pays nothing');
  });

  t.test('Decline: a failed payment, payment_status failed, still pending; 303 to cancel_url; paying afterwards works', async (t) => {
    const { merchantId, key } = await seller(h);
    const c = await create(h, key);
    const page = await openPage(h, c.checkout_url);
    const res = await submit(h, page.decline!);
    t.equal(res.statusCode, 303);
    t.equal(res.headers.location, CANCEL);
    t.match(await status(h, key, c.checkout_id), { status: 'pending', payment_status: 'failed', completed_at: null });
    t.equal((await h.api('GET', `/invoices/${c.invoice_id}`, { key })).body.status, 'sent', 'the invoice stays open');
    const payments = await paymentsOf(h, c.invoice_id);
    t.equal(payments.length, 1);
    t.match(payments[0], { status: 'failed', provider: 'sandbox', paid_at: null, amount: '11900' });
    t.match(payments[0]!.transaction_id, /^sbx_dc_/);
    t.equal((await eventTypes(h, merchantId)).at(-1), 'payment.failed');
    const [event] = await h.sql<{ payload: any }[]>`SELECT payload FROM events WHERE merchant_id = ${merchantId} AND type = 'payment.failed'`;
    t.match(event!.payload.data.object, { id: payments[0]!.id, status: 'failed', invoice_id: c.invoice_id });

    const retry = await openPage(h, c.checkout_url);
    t.match(retry.html, /role="alert"/, 'the page says the last attempt was declined');
    t.ok(retry.pay, 'and offers Pay again');
    t.equal((await submit(h, retry.pay!)).headers.location, SUCCESS);
    t.match(await status(h, key, c.checkout_id), { status: 'completed', payment_status: 'paid' });
    t.same((await paymentsOf(h, c.invoice_id)).map((p) => p.status), ['failed', 'succeeded']);
  });

  t.test('Cancel link: 303 to cancel_url, nothing changes', async (t) => {
    const { merchantId, key } = await seller(h);
    const c = await create(h, key);
    const page = await openPage(h, c.checkout_url);
    const before = await h.sql`SELECT * FROM checkout_sessions WHERE id = ${c.checkout_id}`;
    const events = await eventTypes(h, merchantId);
    const res = await h.app.inject({ url: pathOf(page.cancel!) });
    t.equal(res.statusCode, 303);
    t.equal(res.headers.location, CANCEL);
    t.same(await h.sql`SELECT * FROM checkout_sessions WHERE id = ${c.checkout_id}`, before, 'the session is untouched');
    t.same(await eventTypes(h, merchantId), events, 'no event');
    t.equal((await paymentsOf(h, c.invoice_id)).length, 0);
  });

  t.test('cross-site submissions are refused: no token, a wrong token, another origin', async (t) => {
    const { merchantId, key } = await seller(h);
    const c = await create(h, key);
    const other = await create(h, key);
    const page = await openPage(h, c.checkout_url);
    const otherPage = await openPage(h, other.checkout_url);
    const sameOrigin = { 'sec-fetch-site': 'same-origin' };
    // [name, token (undefined: the form's own), headers]
    const attempts: [string, string | null | undefined, Record<string, string>][] = [
      ['no token', null, sameOrigin],
      ['a wrong token', 'x'.repeat(32), sameOrigin],
      ["another session's token", otherPage.pay!.csrf, sameOrigin],
      ['a cross-site form', undefined, { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' }],
      ['a same-site form', undefined, { 'sec-fetch-site': 'same-site', origin: 'https://pay.invoicing.test' }],
      ['another Origin, no Sec-Fetch-Site', undefined, { origin: 'https://evil.example' }],
    ];
    const events = await eventTypes(h, merchantId);
    for (const [name, csrf, headers] of attempts) {
      for (const form of [page.pay!, page.decline!]) {
        const res = await h.app.inject({
          method: 'POST',
          url: pathOf(form.action),
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
          payload: csrf === null ? '' : new URLSearchParams({ csrf_token: csrf ?? form.csrf }).toString(),
        });
        t.equal(res.statusCode, 403, `${name} (${form.action.split('/').pop()}): 403`);
        t.match(String(res.headers['content-type']), /^text\/html/);
        t.match(res.body, /Solicitud rechazada/);
      }
    }
    t.match(await status(h, key, c.checkout_id), { status: 'pending', payment_status: 'unpaid' }, 'nothing changed');
    t.same(await eventTypes(h, merchantId), events);
    t.equal((await paymentsOf(h, c.invoice_id)).length, 0);
    // With no Sec-Fetch-Site (older browsers), our own Origin passes with the token.
    const own = await h.app.inject({
      method: 'POST',
      url: pathOf(page.pay!.action),
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://invoicing.test' },
      payload: new URLSearchParams({ csrf_token: page.pay!.csrf }).toString(),
    });
    t.equal(own.statusCode, 303);
    t.equal(own.headers.location, SUCCESS);
  });

  t.test('expiry: the page shows it with no Pay button; the job cancels the invoice and emits checkout.expired once', async (t) => {
    const { merchantId, key } = await seller(h);
    const c = await create(h, key);
    const page = await openPage(h, c.checkout_url);
    t.ok(page.pay);
    await t.rejects(expireCheckouts(jobDeps(h), { checkout_id: c.checkout_id }), /not due/, 'a job that starts early throws, to be retried');
    t.equal((await status(h, key, c.checkout_id)).status, 'pending');

    clock.advance(86_400_000 + 1000);
    t.teardown(() => clock.reset());
    t.equal((await status(h, key, c.checkout_id)).status, 'expired', 'past expires_at it reads as expired at once');
    const expired = await openPage(h, c.checkout_url);
    t.equal(expired.status, 200);
    t.equal(expired.pay, null, 'no Pay button');
    t.equal(expired.decline, null);
    t.match(expired.html, /data-state="expired"/);
    t.match(expired.html, /Este enlace de pago expiró/);
    const late = await submit(h, page.pay!);
    t.equal(late.statusCode, 303, 'a Pay posted after the deadline');
    t.equal(late.headers.location, c.checkout_url, 'goes back to the page, which says expired');
    t.equal((await paymentsOf(h, c.invoice_id)).length, 0, 'and pays nothing');

    t.equal(await expireCheckouts(jobDeps(h), { checkout_id: c.checkout_id }), 1, 'the job expires it');
    t.equal(await expireCheckouts(jobDeps(h), { checkout_id: c.checkout_id }), 0, 'a second run does nothing');
    const [inv] = await h.sql<{ status: string; cancel_reason: string }[]>`SELECT status, cancel_reason FROM invoices WHERE id = ${c.invoice_id}`;
    t.same(inv, { status: 'cancelled', cancel_reason: 'checkout_expired' });
    t.match(await status(h, key, c.checkout_id), { status: 'expired', payment_status: 'unpaid', completed_at: null });
    const types = await eventTypes(h, merchantId);
    t.same(types.slice(-2), ['invoice.cancelled', 'checkout.expired']);
    t.equal(types.filter((x) => x === 'checkout.expired').length, 1);

    clock.reset();
    const a = await create(h, key);
    const b = await create(h, key);
    const paid = await create(h, key);
    t.equal((await submit(h, (await openPage(h, paid.checkout_url)).pay!)).headers.location, SUCCESS);
    clock.advance(86_400_000 + 1000);
    t.ok((await expireCheckouts(jobDeps(h), {})) >= 2, 'the sweep expires the missed ones');
    for (const id of [a.checkout_id, b.checkout_id]) t.equal((await status(h, key, id)).status, 'expired');
    t.equal((await status(h, key, paid.checkout_id)).status, 'completed', 'a completed session never expires');
    t.equal(await expireCheckouts(jobDeps(h), {}), 0, 'nothing is left');
  });

  t.test('double click and concurrent tabs pay once', async (t) => {
    const { merchantId, key } = await seller(h);
    const c = await create(h, key);
    const page = await openPage(h, c.checkout_url);
    const results = await Promise.all(Array.from({ length: 4 }, () => submit(h, page.pay!)));
    t.same(results.map((r) => [r.statusCode, r.headers.location]), Array.from({ length: 4 }, () => [303, SUCCESS]), 'every tab lands on success_url');
    t.same((await paymentsOf(h, c.invoice_id)).map((p) => p.status), ['succeeded'], 'one payment');
    t.equal((await eventTypes(h, merchantId)).filter((x) => x === 'checkout.completed').length, 1, 'one checkout.completed');

    const d = await create(h, key);
    const dPage = await openPage(h, d.checkout_url);
    const mixed = await Promise.all([submit(h, dPage.pay!), submit(h, dPage.decline!), submit(h, dPage.pay!)]);
    const payments = await paymentsOf(h, d.invoice_id);
    t.equal(payments.filter((p) => p.status === 'succeeded').length, 1, 'Pay and decline racing: one success');
    t.equal((await status(h, key, d.checkout_id)).status, 'completed');
    t.ok(mixed.every((r) => r.statusCode === 303));
  });

  t.test('a payment racing the expiry ends in exactly one outcome', async (t) => {
    const gateway = gatedProvider('test-slow');
    const { merchantId, key } = await seller(h, 'test-slow');

    t.test('the payment holds the session when the expiry job runs: paid, not expired', async (t) => {
      // Sessions of a minute, so the deadline can pass during the gateway call and the payment's
      // claim on its session still run.
      const brief = await testApp(t, { CHECKOUT_TTL_SECONDS: '60' }, { sql: h.sql, dbUrl: h.dbUrl });
      const c = await create(brief, key);
      const page = await openPage(h, c.checkout_url);
      t.equal(page.decline, null, 'a provider that does not simulate declines gets no decline button');
      const { entered, open } = holdConfirmations(gateway);
      const pay = submit(h, page.pay!);
      await entered;
      // The deadline passes while the gateway is deciding; the job leaves the session to the payment.
      clock.advance(61_000);
      t.teardown(() => clock.reset());
      await t.rejects(expireCheckouts(jobDeps(h), { checkout_id: c.checkout_id }), /being paid/, 'the job throws, to be retried');
      await expireCheckouts(jobDeps(h), {});
      const [held] = await h.sql<{ status: string }[]>`SELECT status FROM checkout_sessions WHERE id = ${c.checkout_id}`;
      t.equal(held!.status, 'pending', 'the sweep skips it too');
      open();
      const res = await pay;
      t.equal(res.headers.location, SUCCESS);
      t.equal(await expireCheckouts(jobDeps(h), { checkout_id: c.checkout_id }), 0, 'the retried job finds the session completed');
      t.match(await status(h, key, c.checkout_id), { status: 'completed', payment_status: 'paid' });
      t.equal((await h.api('GET', `/invoices/${c.invoice_id}`, { key })).body.status, 'paid');
      const types = await eventTypes(h, merchantId);
      t.notOk(types.includes('checkout.expired'));
      clock.reset();
      gateway.gate = null;
    });

    t.test('the expiry holds the session when Pay arrives: expired, nothing paid', async (t) => {
      const c = await create(h, key);
      const page = await openPage(h, c.checkout_url);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let pay: ReturnType<typeof submit> | null = null;
      // The expiry's clock says the deadline has passed; the web process's does not yet.
      const deadline = new Date(Date.parse(c.expires_at) + 1);
      const expiry = h.sql.begin(async (tx) => {
        const done = await expireCheckout(tx, c.checkout_id, deadline, { urls: invoiceUrls(h.ctx.config), boss: h.ctx.boss });
        pay = submit(h, page.pay!);
        await until('Pay to wait for the lock', () => someoneWaitsForALock(h));
        await held;
        return done;
      });
      await until('the expiry to hold the lock', async () => pay !== null);
      release();
      t.equal(await expiry, true, 'the expiry wins');
      const res = await pay!;
      t.equal(res.statusCode, 303);
      t.equal(res.headers.location, c.checkout_url, 'Pay goes back to the page');
      t.equal((await paymentsOf(h, c.invoice_id)).length, 0, 'nothing paid');
      const s = await status(h, key, c.checkout_id);
      t.match(s, { status: 'expired', payment_status: 'unpaid' });
      t.equal((await h.api('GET', `/invoices/${c.invoice_id}`, { key })).body.status, 'cancelled');
      const after = await openPage(h, c.checkout_url);
      t.equal(after.pay, null);
    });
  });

  t.test('an invoice the merchant cancelled meanwhile cannot be paid through its session', async (t) => {
    const { key } = await seller(h);
    const c = await create(h, key);
    const page = await openPage(h, c.checkout_url);
    t.equal((await h.api('POST', `/invoices/${c.invoice_id}/cancel`, { key, body: {} })).status, 200);
    const closed = await openPage(h, c.checkout_url);
    t.equal(closed.pay, null);
    t.match(closed.html, /data-state="closed"/);
    const res = await submit(h, page.pay!);
    t.equal(res.headers.location, c.checkout_url);
    t.equal((await paymentsOf(h, c.invoice_id)).length, 0);
  });

  t.test('a gateway down at payment time: a 503 page, nothing recorded, Pay works once it is back', async (t) => {
    const gateway = gatedProvider('test-flaky-pay');
    const { key } = await seller(h, 'test-flaky-pay');
    const c = await create(h, key);
    const page = await openPage(h, c.checkout_url);
    gateway.failure = new ProviderError('provider_unavailable', 'down');
    const res = await submit(h, page.pay!);
    t.equal(res.statusCode, 503);
    t.match(String(res.headers['content-type']), /^text\/html/);
    t.ok(res.body.includes(`href="${c.checkout_url}"`), 'a link back to the payment page');
    t.equal((await paymentsOf(h, c.invoice_id)).length, 0);
    t.equal((await status(h, key, c.checkout_id)).status, 'pending');
    gateway.failure = new ProviderError('provider_session_expired', 'gone');
    t.equal((await submit(h, page.pay!)).statusCode, 410);
    gateway.failure = null;
    t.equal((await submit(h, page.pay!)).headers.location, SUCCESS);
  });
});

t.test('webhooks of every outcome reach an HTTPS receiver, and the receipt is e-mailed', async (t) => {
  const smtp = await startSmtpSink(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  // A session that expires a second after it is created, sharing the database: its expiry job
  // fires on pg-boss's own schedule.
  const brief = await testApp(t, { SMTP_URL: smtp.url, CHECKOUT_TTL_SECONDS: '1' }, { sql: h.sql, dbUrl: h.dbUrl });
  await h.startWorker();
  const receiver = await startHttpsReceiver(t);
  const { key } = await seller(h);
  const ep = await h.api('POST', '/webhooks/endpoints', { key, body: { url: receiver.url() } });
  t.equal(ep.status, 201);

  const byType = () => {
    const out = new Map<string, any[]>();
    for (const r of receiver.received) {
      const e = JSON.parse(r.body);
      out.set(e.type, [...(out.get(e.type) ?? []), e.data.object]);
    }
    return out;
  };

  const paid = await create(h, key);
  t.equal((await submit(h, (await openPage(h, paid.checkout_url)).pay!)).headers.location, SUCCESS);
  const declined = await create(h, key);
  t.equal((await submit(h, (await openPage(h, declined.checkout_url)).decline!)).headers.location, CANCEL);
  const expiring = await create(brief, key);

  // client.created, invoice.created and invoice.sent for each of three; the outcomes after them.
  await until('every event at the receiver', async () => {
    const types = byType();
    return (types.get('checkout.expired')?.length ?? 0) === 1 && receiver.received.length >= 9 + 3 + 1 + 2;
  });
  const types = byType();
  t.same(types.get('invoice.sent')?.map((o) => o.id).sort(), [paid.invoice_id, declined.invoice_id, expiring.invoice_id].sort(), 'invoice.sent for each');
  t.same(types.get('payment.succeeded')?.map((o) => [o.invoice_id, o.status]), [[paid.invoice_id, 'succeeded']]);
  t.same(types.get('invoice.paid')?.map((o) => [o.id, o.status]), [[paid.invoice_id, 'paid']]);
  t.same(types.get('checkout.completed')?.map((o) => [o.checkout_id, o.status, o.payment_status]), [[paid.checkout_id, 'completed', 'paid']]);
  t.same(types.get('payment.failed')?.map((o) => [o.invoice_id, o.status]), [[declined.invoice_id, 'failed']]);
  t.same(types.get('checkout.expired')?.map((o) => [o.checkout_id, o.status]), [[expiring.checkout_id, 'expired']]);
  t.same(types.get('invoice.cancelled')?.map((o) => [o.id, o.status]), [[expiring.invoice_id, 'cancelled']]);
  t.ok(receiver.received.every((r) => /^t=\d+,v1=[0-9a-f]{64}$/.test(String(r.headers['x-webhook-signature']))), 'every delivery is signed');

  const mail = await until('the receipt', async () => smtp.messages.find((m) => m.headers.get('x-invoice-id') === paid.invoice_id) ?? null);
  t.equal(mail.headers.get('x-email-kind'), 'receipt');
  t.equal(smtp.messages.filter((m) => m.headers.get('x-email-kind') === 'invoice').length, 0, 'checkout invoices get no invoice e-mail');
});
