// Transbank Webpay Plus (docs/decisions.md §16) through the official transbank-sdk, unchanged, against a
// stand-in of Webpay's REST API and form page reached at WEBPAY_BASE_URL: credentials set with the
// CLI and the admin router (sealed, never shown), a payment end to end, decline, abandonment and
// timeout at the form, Webpay down or refusing the credentials, a transaction that ended at
// Webpay (410), a repeated and concurrent return committing once, the status query before a
// session expires, and the hosted invoice page's Pay.
import t from 'tap';
import { TEST_ENV, testApp, type TestApp } from './helpers/app.js';
import { assertError } from './helpers/assertions.js';
import { CANCEL, SUCCESS, checkoutBody } from './helpers/checkout.js';
import { runCli } from './helpers/cli.js';
import { sentInvoice, submitForm, payFormOf } from './helpers/invoice-pay.js';
import { WEBPAY_API_KEY, WEBPAY_COMMERCE_CODE, startWebpayStandIn, type WebpayStandIn } from './helpers/webpay-standin.js';
import { createCaller } from '../src/admin/router.js';
import { configureProvider } from '../src/checkout/provider-settings.js';
import { expireOnSchedule } from '../src/checkout/expire.js';
import { buyOrder } from '../src/checkout/providers/webpay.js';
import { invoiceUrls } from '../src/http/urls.js';
import { idleInTransaction } from './helpers/db-activity.js';

const ADMIN_TOKEN = 'admin-token-for-the-webpay-tests-0123456789';

async function seller(h: TestApp) {
  const m = await h.merchant();
  await configureProvider(h.sql, h.ctx.secrets, m.id, 'webpay', { commerce_code: WEBPAY_COMMERCE_CODE, api_key: WEBPAY_API_KEY });
  const { key } = await h.key(['*'], { merchantId: m.id });
  return { merchantId: m.id, key };
}

const local = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

/** The hosted checkout page's Pay form, which posts token_ws to Webpay's form. */
async function gatewayForm(h: TestApp, checkoutUrl: string) {
  const page = await h.app.inject({ url: local(checkoutUrl) });
  const m = /<form method="post" action="([^"]+)">\s*<input type="hidden" name="token_ws" value="([^"]+)">/.exec(page.body);
  return { status: page.statusCode, html: page.body, csp: String(page.headers['content-security-policy']), action: m?.[1] ?? null, token: m?.[2] ?? null };
}

async function counts(h: TestApp, merchantId: string) {
  const [row] = await h.sql<{ invoices: number; clients: number; sessions: number; payments: number }[]>`
    SELECT (SELECT count(*)::int FROM invoices WHERE merchant_id = ${merchantId}) AS invoices,
           (SELECT count(*)::int FROM clients WHERE merchant_id = ${merchantId}) AS clients,
           (SELECT count(*)::int FROM checkout_sessions WHERE merchant_id = ${merchantId}) AS sessions,
           (SELECT count(*)::int FROM payments WHERE merchant_id = ${merchantId}) AS payments`;
  return row!;
}

async function paymentsOf(h: TestApp, invoiceId: string) {
  return h.sql<{ status: string; provider: string; transaction_id: string }[]>`
    SELECT status, provider, transaction_id FROM payments WHERE invoice_id = ${invoiceId} ORDER BY created_at, id`;
}

async function sessionRow(h: TestApp, id: string) {
  const [row] = await h.sql<{ status: string; payment_status: string; provider_attempt: number; provider_reference: string }[]>`
    SELECT status, payment_status, provider_attempt, provider_reference FROM checkout_sessions WHERE id = ${id}`;
  return row!;
}

async function create(h: TestApp, key: string) {
  const res = await h.api('POST', '/checkout', { key, body: checkoutBody() });
  if (res.status !== 201) throw new Error(`checkout create: ${res.status} ${res.raw}`);
  return res.body as { checkout_id: string; checkout_url: string; invoice_id: string; expires_at: string };
}

t.test('webpay', async (t) => {
  const webpay: WebpayStandIn = await startWebpayStandIn(t);
  const h = await testApp(t, { WEBPAY_BASE_URL: webpay.url, ADMIN_TOKEN });
  const ret = (url: string) => h.app.inject({ url: local(url) });

  t.test('credentials: the CLI reads the key from the environment, seals it, never prints it; can_charge follows', async (t) => {
    const m = await h.merchant();
    const { key } = await h.key(['*'], { merchantId: m.id });
    t.equal((await h.api('GET', '/me', { key })).body.can_charge, false);
    // The CLI opens the credentials with the app's key.
    process.env.ENCRYPTION_KEY = TEST_ENV.ENCRYPTION_KEY;
    process.env.WEBPAY_TEST_API_KEY = WEBPAY_API_KEY;
    const set = await runCli(h.dbUrl, 'merchants', 'set-provider', '--merchant', m.id, '--payment-provider', 'webpay', '--commerce-code', WEBPAY_COMMERCE_CODE, '--api-key-env', 'WEBPAY_TEST_API_KEY');
    t.equal(set.code, 0);
    t.match(set.out, { id: m.id, payment_provider: 'webpay', provider_credentials: { provider: 'webpay', fields_set: ['commerce_code', 'api_key'] } });
    t.notOk(JSON.stringify(set.out).includes(WEBPAY_API_KEY), 'the key is never printed');
    const [row] = await h.sql<{ sealed: Buffer }[]>`SELECT sealed FROM provider_credentials WHERE merchant_id = ${m.id}`;
    t.notOk(row!.sealed.toString('latin1').includes(WEBPAY_API_KEY), 'stored sealed');
    t.equal((await h.api('GET', '/me', { key })).body.can_charge, true);

    const partial = await runCli(h.dbUrl, 'merchants', 'set-provider', '--merchant', m.id, '--payment-provider', 'webpay', '--commerce-code', WEBPAY_COMMERCE_CODE);
    t.equal(partial.code, 1);
    t.equal(partial.out.error.code, 'provider_credentials_missing');
    const unset = await runCli(h.dbUrl, 'merchants', 'set-provider', '--merchant', m.id, '--payment-provider', 'webpay', '--commerce-code', '1', '--api-key-env', 'NO_SUCH_VARIABLE_SET');
    t.equal(unset.out.error.code, 'validation_error');
    t.equal(unset.out.error.details.errors[0].path, '--api-key-env');
    const unknown = await runCli(h.dbUrl, 'merchants', 'set-provider', '--merchant', m.id, '--payment-provider', 'paypal');
    t.equal(unknown.out.error.code, 'invalid_provider');
    t.match(unknown.out.error.message, /^The payment provider paypal is not available: use one of [a-z, ]*\bwebpay\b/, 'the refusal names the providers there are');
    t.equal((await h.api('GET', '/me', { key })).body.can_charge, true, 'refused changes changed nothing');

    const admin = createCaller({ app: h.ctx, authorization: `Bearer ${ADMIN_TOKEN}` });
    const viaAdmin = await admin.merchants.setPaymentProvider({ merchant_id: m.id, payment_provider: 'webpay', commerce_code: '597055555533', api_key: 'another-key' });
    t.match(viaAdmin, { payment_provider: 'webpay', provider_credentials: { fields_set: ['commerce_code', 'api_key'] } });
    t.notOk(JSON.stringify(viaAdmin).includes('another-key'));
    const code = (p: Promise<unknown>) => p.then(() => null, (err: { cause?: { code?: string } }) => err.cause?.code);
    t.equal(await code(admin.merchants.setPaymentProvider({ merchant_id: m.id, payment_provider: 'webpay', commerce_code: '1' })), 'provider_credentials_missing');
    t.equal(await code(admin.merchants.setPaymentProvider({ merchant_id: m.id, payment_provider: 'stripe' })), 'invalid_provider');
  });

  t.test('incomplete credentials: can_charge false, POST /checkout 400 provider_credentials_missing, nothing created', async (t) => {
    const { merchantId, key } = await seller(h);
    await h.sql`DELETE FROM provider_credentials WHERE merchant_id = ${merchantId}`;
    t.equal((await h.api('GET', '/me', { key })).body.can_charge, false);
    const res = await h.api('POST', '/checkout', { key, body: checkoutBody() });
    assertError(t, res, 400, 'provider_credentials_missing');
    t.same(res.body.details, { provider: 'webpay' });
    t.same(await counts(h, merchantId), { invoices: 0, clients: 0, sessions: 0, payments: 0 });
  });

  t.test('no call to Webpay holds a database transaction (docs/decisions.md §10)', async (t) => {
    const { key } = await seller(h);
    const seen: number[] = [];
    webpay.onCall = async () => {
      seen.push(await idleInTransaction(h));
    };
    t.teardown(() => {
      webpay.onCall = null;
    });
    const c = await create(h, key);
    const tx = [...webpay.transactions.values()].find((x) => x.session_id === c.checkout_id)!;
    t.equal((await ret(webpay.pay(tx.token))).headers.location, SUCCESS);
    t.ok(seen.length >= 2, `create and commit were called (${seen.length} calls)`);
    t.same(seen.filter((n) => n > 0), [], 'no session idle in a transaction while Webpay answered');
  });

  t.test('a payment end to end: the transaction, Webpay form, the return commits once, paid; a repeated return only redirects', async (t) => {
    const { key } = await seller(h);
    const c = await create(h, key);
    const tx = [...webpay.transactions.values()].find((x) => x.session_id === c.checkout_id)!;
    t.ok(tx, 'the transaction was created when the session opened');
    t.equal(tx.buy_order, buyOrder(c.checkout_id, 1));
    t.ok(tx.buy_order.length <= 26, 'a buy order within Webpay’s 26 characters');
    t.equal(tx.amount, 11900);
    t.equal(tx.return_url, `${c.checkout_url}/return`, 'the return comes to our host');
    const form = await gatewayForm(h, c.checkout_url);
    t.equal(form.action, `${webpay.url}/webpayserver/initTransaction`, 'Pay posts to Webpay’s form');
    t.equal(form.token, tx.token);
    t.ok(/form-action 'self'[^;]* http:\/\/127\.0\.0\.1:\d+/.test(form.csp) && form.csp.includes(webpay.url), 'the page may post to Webpay');
    t.equal((await sessionRow(h, c.checkout_id)).provider_reference, tx.buy_order, 'the buy order is kept');

    const back = webpay.pay(tx.token);
    const res = await ret(back);
    t.equal(res.statusCode, 303);
    t.equal(res.headers.location, SUCCESS);
    t.same(await paymentsOf(h, c.invoice_id), [{ status: 'succeeded', provider: 'webpay', transaction_id: tx.token }]);
    t.match(await h.api('GET', `/invoices/${c.invoice_id}`, { key }).then((r) => r.body), { status: 'paid', payment_reference: { provider: 'webpay', transaction_id: tx.token } });
    t.match(await sessionRow(h, c.checkout_id), { status: 'completed', payment_status: 'paid' });
    const again = await ret(back);
    t.equal(again.headers.location, SUCCESS, 'a reload lands where the first return did');
    t.equal(tx.commits, 1, 'committed once');
    t.equal((await paymentsOf(h, c.invoice_id)).length, 1);
  });

  t.test("a commit whose answer was lost: the customer's reload finds the payment Webpay made, recorded once", async (t) => {
    const { key } = await seller(h);
    const c = await create(h, key);
    const tx = [...webpay.transactions.values()].find((x) => x.session_id === c.checkout_id)!;
    const back = webpay.pay(tx.token);
    webpay.loseCommitAnswers = 1;
    const lost = await ret(back);
    t.equal(tx.commits, 1, 'Webpay committed');
    t.not(lost.headers.location, SUCCESS, 'with no answer, no success claimed');
    t.same(await paymentsOf(h, c.invoice_id), [], 'nothing recorded yet');
    // The reload commits again, which Webpay refuses (422) for a committed transaction.
    const reload = await ret(back);
    t.equal(reload.statusCode, 303);
    t.equal(reload.headers.location, SUCCESS, 'the reload lands on success_url');
    t.equal(tx.commits, 1, 'never committed twice');
    t.same(await paymentsOf(h, c.invoice_id), [{ status: 'succeeded', provider: 'webpay', transaction_id: tx.token }], 'the payment recorded, once');
    t.match(await sessionRow(h, c.checkout_id), { status: 'completed', payment_status: 'paid' });
  });

  t.test('declined at the bank: payment.failed, back to cancel_url, the session stays payable with a new transaction', async (t) => {
    const { key } = await seller(h);
    const c = await create(h, key);
    const first = (await gatewayForm(h, c.checkout_url)).token!;
    const res = await ret(webpay.pay(first, false));
    t.equal(res.headers.location, CANCEL);
    t.same(await paymentsOf(h, c.invoice_id), [{ status: 'failed', provider: 'webpay', transaction_id: first }]);
    t.match(await sessionRow(h, c.checkout_id), { status: 'pending', payment_status: 'failed' });
    const reopened = await gatewayForm(h, c.checkout_url);
    t.not(reopened.token, first, 'the page opened a new transaction');
    t.equal(webpay.transactions.get(reopened.token!)!.buy_order, buyOrder(c.checkout_id, 2), 'under a buy order of its own');
    t.equal((await ret(webpay.pay(reopened.token!))).headers.location, SUCCESS);
    t.equal((await sessionRow(h, c.checkout_id)).status, 'completed');
  });

  t.test('abandoned at the form (TBK_TOKEN) or timed out there: cancel_url, nothing committed or recorded', async (t) => {
    const { key } = await seller(h);
    const c = await create(h, key);
    const token = (await gatewayForm(h, c.checkout_url)).token!;
    const calls = webpay.calls.length;
    const res = await ret(webpay.abandon(token));
    t.equal(res.statusCode, 303);
    t.equal(res.headers.location, CANCEL);
    t.equal(webpay.calls.length, calls, 'Webpay was not called');
    t.equal((await paymentsOf(h, c.invoice_id)).length, 0);
    t.match(await sessionRow(h, c.checkout_id), { status: 'pending', payment_status: 'unpaid' });
    const next = (await gatewayForm(h, c.checkout_url)).token!;
    t.not(next, token, 'back on the page, a new transaction to pay');
    const timedOut = await ret(webpay.timeout(next));
    t.equal(timedOut.headers.location, CANCEL);
    t.not((await gatewayForm(h, c.checkout_url)).token, next, 'a timeout ends the transaction too');
    t.equal((await paymentsOf(h, c.invoice_id)).length, 0);
  });

  t.test('Webpay down: 503 provider_unavailable and nothing created; refused credentials: 400 merchant_misconfigured', async (t) => {
    const { merchantId, key } = await seller(h);
    webpay.down = true;
    const down = await h.api('POST', '/checkout', { key, body: checkoutBody(), headers: { 'idempotency-key': 'wp-down' } });
    webpay.down = false;
    assertError(t, down, 503, 'provider_unavailable');
    t.equal(down.body.retry, 'safe');
    t.same(await counts(h, merchantId), { invoices: 0, clients: 0, sessions: 0, payments: 0 }, 'nothing created');
    webpay.credentials.apiKey = 'rotated-at-transbank';
    const refused = await h.api('POST', '/checkout', { key, body: checkoutBody() });
    webpay.credentials.apiKey = WEBPAY_API_KEY;
    assertError(t, refused, 400, 'merchant_misconfigured');
    t.same(refused.body.details, { provider: 'webpay' });
    t.same(await counts(h, merchantId), { invoices: 0, clients: 0, sessions: 0, payments: 0 });
    t.equal((await h.api('POST', '/checkout', { key, body: checkoutBody(), headers: { 'idempotency-key': 'wp-down' } })).status, 201, 'the retry succeeds');
  });

  t.test('a transaction that ended at Webpay: 410 page with the way back; the checkout opens again and is paid', async (t) => {
    const { key } = await seller(h);
    const c = await create(h, key);
    const token = (await gatewayForm(h, c.checkout_url)).token!;
    const back = webpay.pay(token);
    webpay.transactions.get(token)!.expired = true;
    const res = await ret(back);
    t.equal(res.statusCode, 410);
    t.match(String(res.headers['content-type']), /^text\/html/);
    t.ok(res.body.includes(`href="${c.checkout_url}"`), 'a link back to the checkout page');
    t.equal((await paymentsOf(h, c.invoice_id)).length, 0);
    const next = (await gatewayForm(h, c.checkout_url)).token!;
    t.not(next, token);
    t.equal((await ret(webpay.pay(next))).headers.location, SUCCESS);
  });

  t.test('concurrent returns of one transaction: one commit, one payment, both land on success_url', async (t) => {
    const { key } = await seller(h);
    const c = await create(h, key);
    const token = (await gatewayForm(h, c.checkout_url)).token!;
    const back = webpay.pay(token);
    let open!: () => void;
    webpay.commitGate = new Promise<void>((r) => (open = r));
    const calls = webpay.calls.length;
    const both = Promise.all([ret(back), ret(back)]);
    // Both returns are in: the first holds the commit at Webpay, the second waits on its claim.
    while (webpay.calls.length === calls) await new Promise((r) => setTimeout(r, 20));
    open();
    webpay.commitGate = null;
    const [a, b] = await both;
    t.same([a.headers.location, b.headers.location], [SUCCESS, SUCCESS]);
    t.equal(webpay.transactions.get(token)!.commits, 1);
    t.equal(webpay.calls.filter((c) => c.startsWith('PUT') && c.endsWith(token)).length, 1, 'Webpay was asked to commit once');
    t.equal((await paymentsOf(h, c.invoice_id)).length, 1);
  });

  t.test('before a session expires its transaction is queried: authorised is paid, otherwise expired; Webpay down keeps it pending', async (t) => {
    const { key } = await seller(h);
    const deps = { urls: invoiceUrls(h.ctx.config), boss: h.ctx.boss, secrets: h.ctx.secrets };
    // A commit that reached Webpay while our process died before recording it.
    const committed = await create(h, key);
    const tx = webpay.transactions.get((await gatewayForm(h, committed.checkout_url)).token!)!;
    tx.form = 'approved';
    tx.status = 'AUTHORIZED';
    const after = (c: { expires_at: string }) => new Date(Date.parse(c.expires_at) + 1000);
    webpay.down = true;
    await t.rejects(expireOnSchedule(h.sql, committed.checkout_id, after(committed), deps), 'Webpay down: the job fails and is retried');
    webpay.down = false;
    t.equal((await sessionRow(h, committed.checkout_id)).status, 'pending', 'nothing expired meanwhile');
    t.equal(await expireOnSchedule(h.sql, committed.checkout_id, after(committed), deps), false);
    t.ok(webpay.calls.includes(`GET /rswebpaytransaction/api/webpay/v1.2/transactions/${tx.token}`), 'the status was asked');
    t.match(await sessionRow(h, committed.checkout_id), { status: 'completed', payment_status: 'paid' });
    t.same(await paymentsOf(h, committed.invoice_id), [{ status: 'succeeded', provider: 'webpay', transaction_id: tx.token }]);
    t.equal((await h.api('GET', `/invoices/${committed.invoice_id}`, { key })).body.status, 'paid');

    const abandoned = await create(h, key);
    t.equal(await expireOnSchedule(h.sql, abandoned.checkout_id, after(abandoned), deps), true);
    t.equal((await sessionRow(h, abandoned.checkout_id)).status, 'expired');
    t.equal((await h.api('GET', `/invoices/${abandoned.invoice_id}`, { key })).body.status, 'cancelled');
  });

  t.test("the hosted invoice page's Pay opens a Webpay checkout and the customer comes back to the paid invoice", async (t) => {
    const { key } = await seller(h);
    const inv = await sentInvoice(h, key);
    const page = await h.app.inject({ url: local(inv.public_url) });
    const pay = payFormOf(page.body);
    t.ok(pay, 'the invoice page has a Pay button');
    const opened = await submitForm(h, pay!);
    t.equal(opened.statusCode, 303);
    const checkout = String(opened.headers.location);
    const form = await gatewayForm(h, checkout);
    t.equal(form.action, `${webpay.url}/webpayserver/initTransaction`);
    const res = await ret(webpay.pay(form.token!));
    t.equal(res.headers.location, inv.public_url, 'back on the invoice page');
    t.equal((await h.api('GET', `/invoices/${inv.invoice_id}`, { key })).body.status, 'paid');
  });
});
