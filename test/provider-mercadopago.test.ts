// Mercado Pago Checkout Pro (docs/decisions.md §16) through the official mercadopago SDK, unchanged,
// against a stand-in of its REST API and init_point page reached at MERCADOPAGO_BASE_URL: the
// preference of each session, a payment confirmed only by the signed notification and a lookup
// (never by the browser's return), the return sent on as Webpay's is (approved → success_url,
// declined → cancel_url, undecided → a page confirming it that reloads itself), declines, replayed and out-of-order notifications, a bad
// signature (401), Mercado Pago down or refusing the token, a session whose notification never
// came resolved by a search of its payments before it expires, and the hosted invoice page's Pay.
import t from 'tap';
import { TEST_ENV, testApp, type TestApp } from './helpers/app.js';
import { assertError } from './helpers/assertions.js';
import { CANCEL, SUCCESS, checkoutBody } from './helpers/checkout.js';
import { runCli } from './helpers/cli.js';
import { payFormOf, sentInvoice, submitForm } from './helpers/invoice-pay.js';
import { MP_ACCESS_TOKEN, MP_WEBHOOK_SECRET, startMercadoPagoStandIn, type MercadoPagoStandIn } from './helpers/mercadopago-standin.js';
import { configureProvider } from '../src/checkout/provider-settings.js';
import { expireOnSchedule } from '../src/checkout/expire.js';
import { invoiceUrls } from '../src/http/urls.js';
import { idleInTransaction } from './helpers/db-activity.js';

async function seller(h: TestApp) {
  const m = await h.merchant();
  await configureProvider(h.sql, h.ctx.secrets, m.id, 'mercadopago', { access_token: MP_ACCESS_TOKEN, webhook_secret: MP_WEBHOOK_SECRET });
  const { key } = await h.key(['*'], { merchantId: m.id });
  return { merchantId: m.id, key };
}

const local = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

async function create(h: TestApp, key: string) {
  const res = await h.api('POST', '/checkout', { key, body: checkoutBody() });
  if (res.status !== 201) throw new Error(`checkout create: ${res.status} ${res.raw}`);
  return res.body as { checkout_id: string; checkout_url: string; invoice_id: string; expires_at: string };
}

/** The hosted checkout page's Pay form: a GET to the init_point, its query as fields. */
async function gatewayForm(h: TestApp, checkoutUrl: string) {
  const page = await h.app.inject({ url: local(checkoutUrl) });
  const m = /<form method="get" action="([^"]+)">\s*<input type="hidden" name="pref_id" value="([^"]+)">/.exec(page.body);
  return { action: m?.[1] ?? null, preference: m?.[2] ?? null, csp: String(page.headers['content-security-policy']) };
}

async function paymentsOf(h: TestApp, invoiceId: string) {
  return h.sql<{ status: string; provider: string; transaction_id: string }[]>`
    SELECT status, provider, transaction_id FROM payments WHERE invoice_id = ${invoiceId} ORDER BY created_at, id`;
}

async function eventCount(h: TestApp, merchantId: string, type: string): Promise<number> {
  const [row] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE merchant_id = ${merchantId} AND type = ${type}`;
  return row!.n;
}

t.test('mercadopago', async (t) => {
  const mp: MercadoPagoStandIn = await startMercadoPagoStandIn(t);
  const h = await testApp(t, { MERCADOPAGO_BASE_URL: mp.url });
  // Notifications reach the app as Mercado Pago's POSTs would, injected.
  mp.deliver = async (url, headers, body) => (await h.app.inject({ method: 'POST', url: local(url), headers, payload: body })).statusCode;
  const status = async (key: string, id: string) => (await h.api('GET', `/checkout/${id}/status`, { key })).body;

  t.test('credentials from the environment through the CLI, never printed; can_charge', async (t) => {
    const m = await h.merchant();
    const { key } = await h.key(['*'], { merchantId: m.id });
    process.env.ENCRYPTION_KEY = TEST_ENV.ENCRYPTION_KEY;
    process.env.MP_TEST_TOKEN = MP_ACCESS_TOKEN;
    process.env.MP_TEST_SECRET = MP_WEBHOOK_SECRET;
    const onlyToken = await runCli(h.dbUrl, 'merchants', 'set-provider', '--merchant', m.id, '--payment-provider', 'mercadopago', '--access-token-env', 'MP_TEST_TOKEN');
    t.equal(onlyToken.out.error.code, 'provider_credentials_missing');
    const set = await runCli(h.dbUrl, 'merchants', 'set-provider', '--merchant', m.id, '--payment-provider', 'mercadopago', '--access-token-env', 'MP_TEST_TOKEN', '--webhook-secret-env', 'MP_TEST_SECRET');
    t.equal(set.code, 0);
    t.match(set.out, { payment_provider: 'mercadopago', provider_credentials: { provider: 'mercadopago', fields_set: ['access_token', 'webhook_secret'] } });
    t.notOk(JSON.stringify(set.out).includes(MP_ACCESS_TOKEN) || JSON.stringify(set.out).includes(MP_WEBHOOK_SECRET), 'no secret printed');
    t.equal((await h.api('GET', '/me', { key })).body.can_charge, true);
    const mixed = await runCli(h.dbUrl, 'merchants', 'set-provider', '--merchant', m.id, '--payment-provider', 'mercadopago', '--commerce-code', '5970', '--access-token-env', 'MP_TEST_TOKEN', '--webhook-secret-env', 'MP_TEST_SECRET');
    t.equal(mixed.out.error.details.errors[0].path, 'commerce_code', "another gateway's field is named");
  });

  t.test('a payment: preference, init_point; the lookup of the payment the return or the notification names pays it, the return alone does not', async (t) => {
    const { merchantId, key } = await seller(h);
    const c = await create(h, key);
    const pref = [...mp.preferences.values()].find((p) => p.body.external_reference === c.checkout_id)!;
    t.ok(pref, 'a preference per session, external_reference = our checkout id');
    t.same(pref.body.back_urls, { success: c.checkout_url, failure: c.checkout_url, pending: c.checkout_url });
    t.equal(pref.body.auto_return, 'all', 'every outcome comes back to the checkout page by itself');
    t.equal(pref.body.notification_url, `http://invoicing.test/providers/mercadopago/notifications/${merchantId}`);
    t.match(pref.body.items[0], { unit_price: 11900, currency_id: 'CLP', title: 'Pedido 1001' });
    const form = await gatewayForm(h, c.checkout_url);
    t.equal(form.action, `${mp.url}/checkout/v1/redirect`);
    t.equal(form.preference, pref.id);
    t.ok(form.csp.includes(mp.url), 'the page may send the customer to Mercado Pago');

    // The notification is lost on the way: the customer comes back first.
    const deliver = mp.deliver;
    mp.deliver = async () => 0;
    const { payment, backUrl } = await mp.pay(pref.id);
    mp.deliver = deliver;
    // A back URL naming a payment Mercado Pago never made: status=approved in it pays nothing.
    const forged = new URL(backUrl);
    for (const k of ['payment_id', 'collection_id']) forged.searchParams.set(k, '99999999');
    const forgedPage = await h.app.inject({ url: local(forged.href) });
    t.equal(forgedPage.statusCode, 200, 'the back URL is the checkout page');
    t.match(await status(key, c.checkout_id), { status: 'pending', payment_status: 'unpaid' }, 'status=approved in the URL pays nothing');
    t.equal((await paymentsOf(h, c.invoice_id)).length, 0);
    // Mercado Pago cannot be asked: the page shows the session as it stands and decides nothing.
    mp.down = true;
    const whileDown = await h.app.inject({ url: local(backUrl) });
    mp.down = false;
    t.equal(whileDown.statusCode, 200);
    t.equal((await paymentsOf(h, c.invoice_id)).length, 0, 'nothing applied while the lookup failed');

    // The real return: the payment it names is looked up, and it is this checkout's, approved.
    const returned = await h.app.inject({ url: local(backUrl) });
    t.equal(returned.statusCode, 303, 'paid: on to the shop, as a Webpay return');
    t.equal(returned.headers.location, SUCCESS);
    t.match(await status(key, c.checkout_id), { status: 'completed', payment_status: 'paid' });
    const paidPage = await h.app.inject({ url: local(c.checkout_url) });
    t.match(paidPage.body, /data-state="completed"/, 'the page itself says paid: no Pay button for a second payment');
    t.notMatch(paidPage.body, /name="pref_id"/, 'no form to Mercado Pago');
    t.same(await paymentsOf(h, c.invoice_id), [{ status: 'succeeded', provider: 'mercadopago', transaction_id: String(payment.id) }]);
    t.match((await h.api('GET', `/invoices/${c.invoice_id}`, { key })).body, { status: 'paid', payment_reference: { provider: 'mercadopago', transaction_id: String(payment.id) } });
    // The notification arrives after all: the payment is applied once.
    t.equal(await mp.notify(payment.id), 200);
    t.equal((await paymentsOf(h, c.invoice_id)).length, 1, 'the notification after the return applies nothing twice');

    // A payment of another checkout, named in this one's back URL: this checkout stays unpaid.
    const other = await create(h, key);
    const otherPref = [...mp.preferences.values()].find((p) => p.body.external_reference === other.checkout_id)!;
    const third = await create(h, key);
    mp.deliver = async () => 0;
    const foreign = await mp.pay(otherPref.id);
    mp.deliver = deliver;
    const thirdBack = new URL(third.checkout_url);
    thirdBack.searchParams.set('payment_id', String(foreign.payment.id));
    t.equal((await h.app.inject({ url: local(thirdBack.href) })).statusCode, 200);
    t.match(await status(key, third.checkout_id), { status: 'pending', payment_status: 'unpaid' }, "another checkout's payment pays nothing here");
    t.match(await status(key, other.checkout_id), { status: 'pending' }, 'nor, from here, the checkout it belongs to');

    t.test('replayed, duplicated and out-of-order notifications change nothing', async (t) => {
      t.same(await Promise.all([mp.notify(payment.id), mp.notify(payment.id)]), [200, 200]);
      t.equal((await paymentsOf(h, c.invoice_id)).length, 1, 'the same payment applied once');
      t.equal(await eventCount(h, merchantId, 'payment.succeeded'), 1);
      t.equal(await eventCount(h, merchantId, 'checkout.completed'), 1);
      // An earlier attempt's rejection arriving late: recorded as what it was, never undoing the payment.
      const late = await mp.pay(pref.id, false);
      t.equal(late.notified, 200);
      t.match(await status(key, c.checkout_id), { status: 'completed', payment_status: 'paid' });
      t.equal((await h.api('GET', `/invoices/${c.invoice_id}`, { key })).body.status, 'paid');
    });
  });

  t.test("the return lands where the shop said: approved → success_url, rejected → cancel_url, pending → a page confirming it; a forged id nowhere", async (t) => {
    const { key } = await seller(h);
    const shop = { success_url: SUCCESS, cancel_url: CANCEL };
    const back = async (url: string) => h.app.inject({ url: local(url) });

    // Approved, notified first (Mercado Pago's usual order): the return finds the payment recorded.
    const paid = await create(h, key);
    const paidPref = (await gatewayForm(h, paid.checkout_url)).preference!;
    const approved = await mp.pay(paidPref);
    t.equal(approved.notified, 200);
    const lookups = mp.calls.length;
    const landed = await back(approved.backUrl);
    t.equal(landed.statusCode, 303);
    t.equal(landed.headers.location, shop.success_url, 'approved → success_url');
    t.equal(mp.calls.length, lookups, 'a payment recorded already needs no lookup');
    t.equal((await back(approved.backUrl)).headers.location, shop.success_url, 'a reload lands there again');
    // A forged id on the paid session: the page, not a redirect.
    const forged = new URL(approved.backUrl);
    forged.searchParams.set('payment_id', '99999999');
    const forgedPage = await back(forged.href);
    t.equal(forgedPage.statusCode, 200, 'a forged payment id redirects nowhere');
    t.match(forgedPage.body, /data-state="completed"/);

    // Rejected, notified first, then with the notification lost: cancel_url both times, the session still payable.
    const declined = await create(h, key);
    const declinedPref = (await gatewayForm(h, declined.checkout_url)).preference!;
    const rejected = await mp.pay(declinedPref, false);
    const turnedAway = await back(rejected.backUrl);
    t.equal(turnedAway.statusCode, 303);
    t.equal(turnedAway.headers.location, shop.cancel_url, 'rejected → cancel_url');
    const lost = await mp.pay(declinedPref, false, { notify: false });
    const lookedUp = await back(lost.backUrl);
    t.equal(lookedUp.headers.location, shop.cancel_url, 'rejected and not notified yet: looked up, cancel_url');
    t.same((await paymentsOf(h, declined.invoice_id)).map((p) => p.status), ['failed', 'failed'], 'each rejection recorded once');
    t.match(await status(key, declined.checkout_id), { status: 'pending', payment_status: 'failed' }, 'the session stays open for another try');
    const again = await gatewayForm(h, declined.checkout_url);
    t.equal(again.preference, declinedPref, 'its page offers Pay again');
    t.match((await back(declined.checkout_url)).body, /role="alert"/, 'saying the payment was declined');

    // Still being decided at Mercado Pago (in review): our page says so, reloads itself, offers no Pay.
    const review = await create(h, key);
    const reviewPref = (await gatewayForm(h, review.checkout_url)).preference!;
    const inReview = await mp.pay(reviewPref, 'in_process');
    t.equal(inReview.notified, 200, 'an undecided payment is acknowledged, nothing applied');
    const confirming = await back(inReview.backUrl);
    t.equal(confirming.statusCode, 200, 'pending → our page');
    t.match(confirming.body, /data-state="confirming"/);
    t.match(confirming.body, 'Estamos confirmando su pago');
    t.match(confirming.body, /<meta http-equiv="refresh" content="5">/, 'it reloads itself (the same URL, so the payment is looked up again)');
    t.notMatch(confirming.body, /name="pref_id"|<button/, 'no Pay button while the payment is pending');
    t.notMatch(String(confirming.headers['content-security-policy']), /script-src/, 'no script needed');
    t.match(await status(key, review.checkout_id), { status: 'pending', payment_status: 'unpaid' });
    t.same(await paymentsOf(h, review.invoice_id), []);
    // Mercado Pago approves it; its notification is lost: the next reload looks it up and pays it.
    mp.payments.get(inReview.payment.id)!.status = 'approved';
    const decided = await back(inReview.backUrl);
    t.equal(decided.statusCode, 303);
    t.equal(decided.headers.location, shop.success_url, 'approved meanwhile → success_url');
    t.match(await status(key, review.checkout_id), { status: 'completed', payment_status: 'paid' });
    // Pending too (a cash payment still to be made), on a page in English.
    const english = await create(h, key);
    await h.sql`UPDATE checkout_sessions SET locale = 'en' WHERE id = ${english.checkout_id}`;
    const cash = await mp.pay((await gatewayForm(h, english.checkout_url)).preference!, 'pending');
    const enPage = await back(cash.backUrl);
    t.equal(enPage.statusCode, 200);
    t.match(enPage.body, /data-state="confirming"[^]*We are confirming your payment/);

    // A forged or foreign id on a pending session, or Mercado Pago down: the page as it stands, never success_url.
    const open = await create(h, key);
    const openPref = (await gatewayForm(h, open.checkout_url)).preference!;
    const url = new URL(open.checkout_url);
    for (const [k, v] of Object.entries({ payment_id: '99999999', collection_id: '99999999', status: 'approved', collection_status: 'approved' })) url.searchParams.set(k, v);
    const fake = await back(url.href);
    t.equal(fake.statusCode, 200, 'a forged approved back URL: no redirect');
    t.match(fake.body, /name="pref_id"/, 'the page as before, Pay offered');
    url.searchParams.set('payment_id', String(approved.payment.id));
    t.equal((await back(url.href)).statusCode, 200, "another checkout's approved payment: no redirect");
    const pendingOnMp = await mp.pay(openPref, true, { notify: false });
    mp.down = true;
    const down = await back(pendingOnMp.backUrl);
    mp.down = false;
    t.equal(down.statusCode, 200, 'a lookup that fails: no redirect');
    t.match(await status(key, open.checkout_id), { status: 'pending', payment_status: 'unpaid' });
  });

  t.test('no call to Mercado Pago holds a database transaction (docs/decisions.md §10)', async (t) => {
    const { key } = await seller(h);
    const seen: number[] = [];
    mp.onCall = async () => {
      seen.push(await idleInTransaction(h));
    };
    t.teardown(() => {
      mp.onCall = null;
    });
    const c = await create(h, key);
    const pref = [...mp.preferences.values()].find((p) => p.body.external_reference === c.checkout_id)!;
    await mp.pay(pref.id);
    t.match(await status(key, c.checkout_id), { status: 'completed' });
    t.ok(seen.length >= 2, `the preference and the payment lookup were called (${seen.length} calls)`);
    t.same(seen.filter((n) => n > 0), [], 'no session idle in a transaction while Mercado Pago answered');
  });

  t.test('declined: payment.failed, the session stays payable, a later approval pays it', async (t) => {
    const { key } = await seller(h);
    const c = await create(h, key);
    const pref = (await gatewayForm(h, c.checkout_url)).preference!;
    const declined = await mp.pay(pref, false);
    t.equal(declined.notified, 200);
    t.match(await status(key, c.checkout_id), { status: 'pending', payment_status: 'failed' });
    t.same(await paymentsOf(h, c.invoice_id), [{ status: 'failed', provider: 'mercadopago', transaction_id: String(declined.payment.id) }]);
    await mp.pay(pref);
    t.match(await status(key, c.checkout_id), { status: 'completed', payment_status: 'paid' });
  });

  t.test('a notification not signed with the merchant’s secret: 401 invalid_signature, nothing looked up or applied', async (t) => {
    const { key } = await seller(h);
    const c = await create(h, key);
    const pref = (await gatewayForm(h, c.checkout_url)).preference!;
    const deliver = mp.deliver;
    let answer: Awaited<ReturnType<typeof h.api>> | null = null;
    mp.deliver = async (url, headers, body) => {
      const res = await h.app.inject({ method: 'POST', url: local(url), headers, payload: body });
      answer = { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body), raw: res.body };
      return res.statusCode;
    };
    const { payment } = await mp.pay(pref);
    const calls = mp.calls.length;
    t.equal(await mp.notify(payment.id, { secret: 'someone-else' }), 401);
    assertError(t, answer!, 401, 'invalid_signature');
    t.equal(mp.calls.length, calls, 'Mercado Pago was not asked');
    mp.deliver = deliver;
    const forged = await h.app.inject({
      method: 'POST',
      url: local(`${mp.preferences.get(pref)!.body.notification_url}?data.id=${payment.id}&type=payment`),
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ type: 'payment', data: { id: String(payment.id) } }),
    });
    t.equal(forged.statusCode, 401, 'an unsigned one too');
    // (The stand-in's own, correctly signed, delivery of this payment paid it above.)
    t.equal((await paymentsOf(h, c.invoice_id)).length, 1);
  });

  t.test('Mercado Pago down: 503 provider_unavailable, nothing created; a refused token: 400 merchant_misconfigured; a lookup while down is retried', async (t) => {
    const { merchantId, key } = await seller(h);
    const counts = async () =>
      (await h.sql<{ n: number }[]>`
        SELECT (SELECT count(*) FROM invoices WHERE merchant_id = ${merchantId}) + (SELECT count(*) FROM clients WHERE merchant_id = ${merchantId})
             + (SELECT count(*) FROM checkout_sessions WHERE merchant_id = ${merchantId}) AS n`)[0]!.n;
    mp.down = true;
    const down = await h.api('POST', '/checkout', { key, body: checkoutBody() });
    mp.down = false;
    assertError(t, down, 503, 'provider_unavailable');
    t.equal(Number(await counts()), 0, 'nothing created');
    mp.accessToken = 'APP_USR-revoked';
    const refused = await h.api('POST', '/checkout', { key, body: checkoutBody() });
    mp.accessToken = MP_ACCESS_TOKEN;
    assertError(t, refused, 400, 'merchant_misconfigured');
    t.equal(Number(await counts()), 0);

    const c = await create(h, key);
    const pref = (await gatewayForm(h, c.checkout_url)).preference!;
    const deliver = mp.deliver;
    mp.deliver = async (url, headers, body) => {
      mp.down = true;
      try {
        return await deliver(url, headers, body);
      } finally {
        mp.down = false;
      }
    };
    const { payment, notified } = await mp.pay(pref);
    mp.deliver = deliver;
    t.equal(notified, 503, 'the lookup failed: Mercado Pago is told to retry');
    t.equal((await status(key, c.checkout_id)).status, 'pending');
    t.equal(await mp.notify(payment.id), 200);
    t.equal((await status(key, c.checkout_id)).status, 'completed', 'the retry pays it');
  });

  t.test('before a session expires its payments are searched: approved is paid, none or rejected expires; Mercado Pago down keeps it pending', async (t) => {
    const { key } = await seller(h);
    const deps = { urls: invoiceUrls(h.ctx.config), boss: h.ctx.boss, secrets: h.ctx.secrets };
    const after = (c: { expires_at: string }) => new Date(Date.parse(c.expires_at) + 1000);
    const searches = () => mp.calls.filter((c) => c === 'GET /v1/payments/search').length;

    // Paid at Mercado Pago, its notification lost for good.
    const paid = await create(h, key);
    const { payment } = await mp.pay((await gatewayForm(h, paid.checkout_url)).preference!, true, { notify: false });
    t.match(await status(key, paid.checkout_id), { status: 'pending', payment_status: 'unpaid' });
    mp.down = true;
    await t.rejects(expireOnSchedule(h.sql, paid.checkout_id, after(paid), deps), 'Mercado Pago down: the job fails and is retried');
    mp.down = false;
    t.match(await status(key, paid.checkout_id), { status: 'pending' }, 'nothing expired meanwhile');
    const asked = searches();
    t.equal(await expireOnSchedule(h.sql, paid.checkout_id, after(paid), deps), false, 'not expired');
    t.equal(searches(), asked + 1, 'its payments were searched');
    t.match(await status(key, paid.checkout_id), { status: 'completed', payment_status: 'paid' });
    t.same(await paymentsOf(h, paid.invoice_id), [{ status: 'succeeded', provider: 'mercadopago', transaction_id: String(payment.id) }]);
    t.match((await h.api('GET', `/invoices/${paid.invoice_id}`, { key })).body, { status: 'paid', payment_reference: { provider: 'mercadopago', transaction_id: String(payment.id) } });
    t.equal(await mp.notify(payment.id), 200, 'the notification, arriving after all');
    t.equal((await paymentsOf(h, paid.invoice_id)).length, 1, 'applies nothing twice');

    // Declined, and approved for another amount under the same reference: neither is this checkout's payment.
    const declined = await create(h, key);
    const pref = (await gatewayForm(h, declined.checkout_url)).preference!;
    await mp.pay(pref, false, { notify: false });
    mp.payments.get((await mp.pay(pref, true, { notify: false })).payment.id)!.transaction_amount = 1;
    t.equal(await expireOnSchedule(h.sql, declined.checkout_id, after(declined), deps), true, 'expired');
    t.match(await status(key, declined.checkout_id), { status: 'expired', payment_status: 'unpaid' });
    t.equal((await h.api('GET', `/invoices/${declined.invoice_id}`, { key })).body.status, 'cancelled');
    t.same(await paymentsOf(h, declined.invoice_id), []);

    const untouched = await create(h, key);
    t.equal(await expireOnSchedule(h.sql, untouched.checkout_id, after(untouched), deps), true, 'never paid: expired as before');
    t.equal((await h.api('GET', `/invoices/${untouched.invoice_id}`, { key })).body.status, 'cancelled');
  });

  t.test("the hosted invoice page's Pay opens a Mercado Pago checkout; the notification pays the invoice", async (t) => {
    const { key } = await seller(h);
    const inv = await sentInvoice(h, key);
    const pay = payFormOf((await h.app.inject({ url: local(inv.public_url) })).body);
    t.ok(pay);
    const opened = await submitForm(h, pay!);
    const checkout = String(opened.headers.location);
    const form = await gatewayForm(h, checkout);
    t.equal(form.action, `${mp.url}/checkout/v1/redirect`);
    const pref = mp.preferences.get(form.preference!)!;
    t.same(pref.body.back_urls.success, checkout);
    await mp.pay(pref.id);
    t.equal((await h.api('GET', `/invoices/${inv.invoice_id}`, { key })).body.status, 'paid');
  });
});
