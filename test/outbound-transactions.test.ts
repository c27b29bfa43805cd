// docs/decisions.md §10: an outbound call never holds a database connection or transaction. Each outbound
// side here (the exchange-rate provider, a payment gateway opening a session and confirming a
// payment) looks at the database while it is being called and records how many sessions of the
// test's database sit idle inside a transaction: a request that called out from inside its
// transaction would be one of them. Also docs/decisions.md §11: checkout URLs whose host could write into
// the hosted page's Content-Security-Policy are refused, and the page never writes one.
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { testApp, type TestApp } from './helpers/app.js';
import { idleInTransaction } from './helpers/db-activity.js';
import { invoiceBody } from './helpers/fixtures.js';
import { clock } from '../src/clock.js';
import { SUCCESS, checkoutBody, gatedProvider, holdConfirmations } from './helpers/checkout.js';

async function someoneWaitsForALock(h: TestApp): Promise<boolean> {
  const rows = await h.sql`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
  return rows.length > 0;
}

/**
 * An exchange-rate provider on this machine that looks at the database while it answers. It must
 * exist before the app that is given its URL, so it finds that app through `app()`.
 */
async function rateProvider(t: Test, app: () => TestApp) {
  const seen: { currency: string; date: string; idleInTransaction: number }[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    void idleInTransaction(app()).then((n) => {
      seen.push({ currency: url.searchParams.get('currency') ?? '', date: url.searchParams.get('date') ?? '', idleInTransaction: n });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"rate": 950.25}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rates`, seen };
}

/**
 * A gateway that records, at each call, the sessions idle in a transaction; its confirmation can
 * be held at a gate so a test can act while it is in flight.
 */
function probeProvider(h: TestApp, name: string) {
  const seen = {
    opened: [] as { checkoutId: string; idleInTransaction: number }[],
    confirmed: [] as number[],
  };
  const gateway = gatedProvider(name, {
    async createSession(req) {
      seen.opened.push({ checkoutId: req.checkoutId, idleInTransaction: await idleInTransaction(h) });
    },
    async confirmPayment() {
      seen.confirmed.push(await idleInTransaction(h));
    },
  });
  return Object.assign(gateway, seen);
}

async function seller(h: TestApp, provider: string) {
  const m = await h.merchant({ payment_provider: 'sandbox' });
  if (provider !== 'sandbox') await h.sql`UPDATE merchants SET payment_provider = ${provider} WHERE id = ${m.id}`;
  const { key } = await h.key(['*'], { merchantId: m.id });
  return { merchantId: m.id, key };
}

async function create(h: TestApp, key: string, extra: Record<string, unknown> = {}) {
  const res = await h.api('POST', '/checkout', { key, body: checkoutBody(extra) });
  if (res.status !== 201) throw new Error(`checkout create: ${res.status} ${res.raw}`);
  return res.body as { checkout_id: string; checkout_url: string; invoice_id: string };
}

/** The sources of a policy's form-action directive. */
function formAction(csp: string): string[] {
  const directive = csp.split(';').map((d) => d.trim().split(/\s+/)).find(([name]) => name === 'form-action');
  return directive?.slice(1) ?? [];
}

const pathOf = (url: string) => new URL(url).pathname;

/** The hosted page's Pay form, posted as the customer's browser posts it. */
async function payForm(h: TestApp, checkoutUrl: string) {
  const page = await h.app.inject({ method: 'GET', url: pathOf(checkoutUrl) });
  const csrf = /<form method="post" action="[^"]+\/pay">\s*<input type="hidden" name="csrf_token" value="([^"]+)">/.exec(page.body)?.[1];
  if (!csrf) throw new Error('the page has no Pay form');
  return {
    csp: String(page.headers['content-security-policy']),
    pay: () =>
      h.app.inject({
        method: 'POST',
        url: `${pathOf(checkoutUrl)}/pay`,
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', origin: 'null' },
        payload: new URLSearchParams({ csrf_token: csrf }).toString(),
      }),
  };
}

async function paymentsOf(h: TestApp, invoiceId: string) {
  return h.sql<{ status: string }[]>`SELECT status FROM payments WHERE invoice_id = ${invoiceId} ORDER BY created_at, id`;
}

t.test('outbound calls hold no transaction', async (t) => {
  let app: TestApp | null = null;
  const rates = await rateProvider(t, () => app!);
  const h = await testApp(t, { EXCHANGE_RATES_URL: rates.url });
  app = h;
  t.teardown(() => clock.reset());

  t.test('the exchange-rate provider: POST /invoices, POST /invoices/bulk and POST /checkout', async (t) => {
    const { key, merchantId } = await seller(h, 'sandbox');

    const single = await h.api('POST', '/invoices', { key, body: invoiceBody({ currency: 'USD', issue_date: '2026-04-01' }) });
    t.equal(single.status, 201, 'a USD invoice of a CLP merchant');
    t.same(rates.seen, [{ currency: 'USD', date: '2026-04-01', idleInTransaction: 0 }], 'the provider was asked with no transaction open');
    const invoice = (await h.api('GET', `/invoices/${single.body.invoice_id}`, { key })).body;
    t.match(invoice, { currency: 'USD', base_currency: 'CLP', exchange_rate: '950.25' }, 'and its answer used');

    rates.seen.length = 0;
    const bulk = await h.api('POST', '/invoices/bulk', {
      key,
      body: {
        invoices: [
          invoiceBody({ currency: 'EUR', issue_date: '2026-04-02' }),
          invoiceBody({ currency: 'BRL', issue_date: '2026-04-03' }),
          invoiceBody({ currency: 'EUR', issue_date: '2026-04-02' }),
          invoiceBody({ currency: 'MXN', issue_date: '2026-04-10', due_date: '2026-04-01' }),
          invoiceBody({ currency: 'PEN', items: [] }),
        ],
      },
    });
    t.equal(bulk.status, 200);
    t.same(
      bulk.body.results.map((r: { success: boolean; error?: string }) => r.error ?? r.success),
      [true, true, true, 'validation_error', 'validation_error'],
    );
    t.same(
      rates.seen.map((s) => [s.currency, s.date, s.idleInTransaction]).sort(),
      [
        ['BRL', '2026-04-03', 0],
        ['EUR', '2026-04-02', 0],
      ],
      'each rate asked once, with no transaction open; none for the items that fail validation',
    );

    rates.seen.length = 0;
    const checkout = await h.api('POST', '/checkout', { key, body: checkoutBody({ currency: 'GBP', amount: 119 }) });
    t.equal(checkout.status, 201, 'a GBP checkout');
    t.same(rates.seen.map((s) => [s.currency, s.idleInTransaction]), [['GBP', 0]], 'its rate asked with no transaction open');
    t.equal((await h.api('GET', `/invoices/${checkout.body.invoice_id}`, { key })).body.exchange_rate, '950.25');
    const [rows] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM exchange_rates WHERE merchant_id = ${merchantId}`;
    t.equal(rows!.n, 4, 'every answer is stored');
  });

  t.test('a checkout whose rate cannot be had opens no session at the gateway', async (t) => {
    const gateway = probeProvider(h, 'test-probe-rate');
    const bare = await testApp(t, {}, { sql: h.sql, dbUrl: h.dbUrl });
    const { key, merchantId } = await seller(bare, 'test-probe-rate');
    const res = await bare.api('POST', '/checkout', { key, body: checkoutBody({ currency: 'USD', amount: 119 }) });
    t.equal(res.status, 503);
    t.equal(res.body.code, 'currency_conversion_failed');
    t.equal(res.body.retry, 'after_seconds:300');
    t.same(gateway.opened, [], 'the gateway was not asked');
    const [n] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM invoices WHERE merchant_id = ${merchantId}`;
    t.equal(n!.n, 0, 'nothing created');
  });

  t.test('a payment gateway: opening the session and confirming the payment', async (t) => {
    const gateway = probeProvider(h, 'test-probe');
    const { key } = await seller(h, 'test-probe');
    const c = await create(h, key);
    t.same(gateway.opened, [{ checkoutId: c.checkout_id, idleInTransaction: 0 }], 'opened with no transaction open, under the id the session got');
    const [row] = await h.sql<{ provider_session_id: string }[]>`SELECT provider_session_id FROM checkout_sessions WHERE id = ${c.checkout_id}`;
    t.equal(row!.provider_session_id, `test-probe_${c.checkout_id}`, "the gateway's session is kept on ours");

    const form = await payForm(h, c.checkout_url);
    const res = await form.pay();
    t.equal(res.statusCode, 303);
    t.equal(res.headers.location, SUCCESS);
    t.same(gateway.confirmed, [0], 'confirmed with no transaction open');
    t.same((await paymentsOf(h, c.invoice_id)).map((p) => p.status), ['succeeded']);
    t.equal((await h.api('GET', `/invoices/${c.invoice_id}`, { key })).body.status, 'paid');
  });

  t.test('two Pay posts at once: one charge, and the second holds no connection or lock while it waits', async (t) => {
    const gateway = probeProvider(h, 'test-probe-twice');
    const { merchantId, key } = await seller(h, 'test-probe-twice');
    const c = await create(h, key);
    const form = await payForm(h, c.checkout_url);
    const { entered, open } = holdConfirmations(gateway);
    const first = form.pay();
    await entered;
    const second = form.pay();
    // Several of the waiting click's polls.
    await new Promise((r) => setTimeout(r, 500));
    t.equal(gateway.confirmed.length, 1, 'the second click does not reach the gateway while the first is there');
    t.equal(await idleInTransaction(h), 0, 'no transaction is open meanwhile');
    t.notOk(await someoneWaitsForALock(h), 'and nobody waits for a row lock');
    open();
    const answers = await Promise.all([first, second]);
    t.same(answers.map((r) => [r.statusCode, r.headers.location]), [[303, SUCCESS], [303, SUCCESS]], 'both land on success_url');
    t.same(gateway.confirmed, [0], 'one gateway call, with no transaction open');
    t.same((await paymentsOf(h, c.invoice_id)).map((p) => p.status), ['succeeded'], 'one payment');
    const [events] = await h.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM events WHERE merchant_id = ${merchantId} AND type = 'checkout.completed'`;
    t.equal(events!.n, 1, 'one checkout.completed');
  });

  t.test("a merchant's cancel or mark-paid while the customer's payment is at the gateway: 409, and the payment completes", async (t) => {
    const gateway = probeProvider(h, 'probe-race');
    const { key } = await seller(h, 'probe-race');
    const c = await create(h, key);
    const form = await payForm(h, c.checkout_url);
    const { entered, open } = holdConfirmations(gateway);
    const paying = form.pay();
    await entered;
    for (const [op, body] of [['cancel', { reason: 'x' }], ['mark-paid', { payment_method: 'transfer' }]] as const) {
      const res = await h.api('POST', `/invoices/${c.invoice_id}/${op}`, { key, body });
      t.equal(res.status, 409, `${op} is refused while the customer pays`);
      t.equal(res.body.code, 'invoice_invalid_state');
      t.equal(res.body.details.payment_in_progress, true);
      t.equal(res.body.details.status, 'sent');
    }
    open();
    const paid = await paying;
    t.equal(paid.headers.location, SUCCESS, "the customer's payment completes");
    t.equal((await h.api('GET', `/invoices/${c.invoice_id}`, { key })).body.status, 'paid');
    t.same((await paymentsOf(h, c.invoice_id)).map((p) => p.status), ['succeeded'], 'one payment');

    // Cancelled first: the customer's click finds the invoice closed and charges nothing.
    const later = await create(h, key);
    const laterForm = await payForm(h, later.checkout_url);
    t.equal((await h.api('POST', `/invoices/${later.invoice_id}/cancel`, { key, body: {} })).status, 200);
    const refused = await laterForm.pay();
    t.equal(refused.statusCode, 303);
    t.equal((await paymentsOf(h, later.invoice_id)).length, 0, 'no charge on a cancelled invoice');
  });

  t.test("an attempt's claim on its session: a click waits it out; once it has run out (the process died), Pay works", async (t) => {
    const { key } = await seller(h, 'sandbox');
    const c = await create(h, key);
    const form = await payForm(h, c.checkout_url);
    // What a web process that died during its gateway call leaves behind.
    const until = new Date(clock.now().getTime() + 120_000);
    await h.sql`UPDATE checkout_sessions SET payment_claim = ${randomUUID()}, payment_claimed_until = ${until} WHERE id = ${c.checkout_id}`;
    const held = await form.pay();
    t.equal(held.statusCode, 303);
    t.equal(held.headers.location, c.checkout_url, 'while the claim runs, the click goes back to the page');
    t.equal((await paymentsOf(h, c.invoice_id)).length, 0, 'and charges nothing');
    clock.advance(121_000);
    const paid = await form.pay();
    t.equal(paid.headers.location, SUCCESS, 'after it, the customer can pay');
    t.same((await paymentsOf(h, c.invoice_id)).map((p) => p.status), ['succeeded']);
    const [row] = await h.sql<{ payment_claim: string | null }[]>`SELECT payment_claim FROM checkout_sessions WHERE id = ${c.checkout_id}`;
    t.equal(row!.payment_claim, null, 'the completed session holds no claim');
    clock.reset();
  });

  t.test('success_url and cancel_url: a host that is not a host name is a 422 naming the field', async (t) => {
    const { key, merchantId } = await seller(h, 'sandbox');
    const attacks = [
      'https://a;sandbox/x',
      'https://a b/x',
      'https://a%3Bsandbox/x',
      'https://exa mple.com',
      "https://a'b.com",
      'https://a"b/',
      'https://*.shop.example/x',
      'https://a,b.example/x',
      'https://-shop.example/x',
      'https://shop_1.example/x',
      `https://${'a'.repeat(64)}.example/x`,
    ];
    for (const field of ['success_url', 'cancel_url']) {
      for (const url of attacks) {
        const res = await h.api('POST', '/checkout', { key, body: checkoutBody({ [field]: url }) });
        t.equal(res.status, 422, `${field} ${url}: 422`);
        t.equal(res.body.code, 'validation_error');
        t.same(res.body.details?.errors?.map((e: { path: string }) => e.path), [field], `names ${field} only`);
      }
    }
    const [n] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM checkout_sessions WHERE merchant_id = ${merchantId}`;
    t.equal(n!.n, 0, 'nothing created');

    const valid: [string, string][] = [
      ['https://shop.example/orders/1/paid', 'https://shop.example'],
      ['http://127.0.0.1:8080/ok', 'http://127.0.0.1:8080'],
      ['https://[::1]:8443/ok', 'https://[::1]:8443'],
      ['https://MÜNCHEN.example/ok?x="y"', 'https://xn--mnchen-3ya.example'],
      [`https://${'a'.repeat(63)}.example/x`, `https://${'a'.repeat(63)}.example`],
    ];
    for (const [url, origin] of valid) {
      const res = await h.api('POST', '/checkout', { key, body: checkoutBody({ success_url: url }) });
      t.equal(res.status, 201, `${url}: accepted`);
      const { csp } = await payForm(h, res.body.checkout_url);
      t.same(formAction(csp), ["'self'", ...new Set([origin, 'https://shop.example'])], `${url}: form-action names ${origin}`);
    }
  });

  t.test('the page never writes an origin that is not scheme://host[:port] into its policy', async (t) => {
    const { key } = await seller(h, 'sandbox');
    const c = await create(h, key);
    // A row stored before the API checked hosts.
    await h.sql`UPDATE checkout_sessions SET success_url = 'https://a;sandbox/x' WHERE id = ${c.checkout_id}`;
    const { csp } = await payForm(h, c.checkout_url);
    t.notMatch(csp, /sandbox/, 'the stored host is left out');
    t.same(formAction(csp), ["'self'", 'https://shop.example'], 'the clean origin stays');
  });
});
