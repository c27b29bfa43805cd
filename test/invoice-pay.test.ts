// Paying from the hosted invoice page (docs/decisions.md §11), and what the hosted pages say: the Pay button
// of an open invoice of a merchant that can charge opens (or reuses) a checkout session for that
// invoice and sends the customer there, and back; a merchant that cannot charge shows its payment
// instructions; the issuer's legal data; one voice ("usted"); the checkout page's amount caption
// and its deadline's time zone.
import t from 'tap';
import { clock } from '../src/clock.js';
import { formatMoment } from '../src/format.js';
import { testApp, type TestApp } from './helpers/app.js';
import { checkoutFormOf, gatedProvider } from './helpers/checkout.js';
import { LEGAL, payFormOf, pathOf, seller, sentInvoice, submitForm, visibleText, type SentInvoice } from './helpers/invoice-pay.js';
import { ProviderError } from '../src/checkout/providers/provider.js';
import { expireCheckouts } from '../jobs/checkout-expire.js';
import { createMailer } from '../src/email/transport.js';
import type { WorkerDeps } from '../jobs/worker.js';
import type { CheckoutRow } from '../src/checkout/queries.js';

async function sessionsOf(h: TestApp, invoiceId: string): Promise<CheckoutRow[]> {
  return h.sql<CheckoutRow[]>`SELECT * FROM checkout_sessions WHERE invoice_id = ${invoiceId} ORDER BY created_at, id`;
}

async function eventTypes(h: TestApp, merchantId: string): Promise<string[]> {
  const rows = await h.sql<{ type: string }[]>`SELECT type FROM events WHERE merchant_id = ${merchantId} ORDER BY created_at, id`;
  return rows.map((r) => r.type);
}

async function invoiceStatus(h: TestApp, invoiceId: string): Promise<string> {
  const [row] = await h.sql<{ status: string }[]>`SELECT status FROM invoices WHERE id = ${invoiceId}`;
  return row!.status;
}

async function open(h: TestApp, url: string, headers: Record<string, string> = {}) {
  const res = await h.app.inject({ method: 'GET', url: pathOf(url), headers });
  return { status: res.statusCode, headers: res.headers, html: res.body, text: visibleText(res.body), pay: payFormOf(res.body) };
}

/** Clicks the invoice page's Pay: the 303's Location. */
async function clickPay(h: TestApp, inv: SentInvoice): Promise<string> {
  const form = (await open(h, inv.public_url)).pay;
  if (!form) throw new Error('no Pay button on the invoice page');
  const res = await submitForm(h, form);
  if (res.statusCode !== 303) throw new Error(`Pay: ${res.statusCode} ${res.body}`);
  return String(res.headers.location);
}

function jobDeps(h: TestApp): WorkerDeps {
  return { config: h.ctx.config, sql: h.sql, boss: h.ctx.boss, mailer: createMailer(h.ctx.config), secrets: h.ctx.secrets };
}

// Second-person singular ("tú") forms the pages used to have; the pages address the customer as "usted".
const TU = /\b(Escribe|Puedes|Revisa|Pide|Consulta|Vuelve|Inténtalo|Espera|tu|te)\b/;

t.test('paying from the hosted invoice page', async (t) => {
  const h = await testApp(t);

  t.test('a sent invoice of a merchant that can charge has a Pay button; it opens a session for the invoice and sends the customer there', async (t) => {
    const { key } = await seller(h);
    const inv = await sentInvoice(h, key, { external_reference: 'pedido-77' });
    const page = await open(h, inv.public_url);
    t.equal(page.status, 200);
    t.ok(page.pay, 'a Pay form');
    t.equal(page.pay!.label, 'Pagar $11.900', 'the button says what it does, and how much');
    t.equal(page.pay!.action, `${inv.public_url}/pay`, 'posted to the invoice page itself');
    t.match(page.text, 'Descargar PDF');
    t.match(String(page.headers['content-security-policy']), /form-action 'self'(;|$)/, 'the form may post only here');

    const location = await clickPay(h, inv);
    const sessions = await sessionsOf(h, inv.invoice_id);
    t.equal(sessions.length, 1, 'one session');
    const s = sessions[0]!;
    t.equal(location, `http://invoicing.test/checkout/${s.token}`, '303 to its checkout page');
    t.match(s, {
      status: 'pending',
      payment_status: 'unpaid',
      amount: '11900',
      currency: 'CLP',
      description: 'Libros de noviembre',
      customer_email: /^lectora\d+@example\.cl$/,
      success_url: inv.public_url,
      cancel_url: inv.public_url,
      external_reference: 'pedido-77',
      locale: 'es',
      provider: 'sandbox',
    });
    t.equal(s.expires_at.getTime() - Date.now() > 86_000_000, true, 'payable for CHECKOUT_TTL_SECONDS');
    const [job] = await h.sql`SELECT 1 FROM pgboss.job WHERE name = 'checkout-expire' AND data->>'checkout_id' = ${s.id}`;
    t.ok(job, 'its expiry job is queued');

    const status = await h.api('GET', `/checkout/${s.id}/status`, { key });
    t.equal(status.status, 200);
    t.match(status.body, { checkout_id: s.id, status: 'pending', invoice_id: inv.invoice_id, external_reference: 'pedido-77' });

    const checkout = await open(h, location);
    t.equal(checkout.status, 200);
    t.match(checkout.text, 'Total a pagar $11.900');
    t.match(checkout.text, inv.invoice_number);
    t.match(checkout.text, 'Cancelar y volver a la factura', 'its way back leads to the invoice, not to a store');
    t.notMatch(checkout.text, /tienda/);
    t.ok(checkout.html.includes(`href="${location}/cancel"`));
    const cancel = await h.app.inject({ url: `${pathOf(location)}/cancel` });
    t.equal(cancel.headers.location, inv.public_url, 'cancel leads back to the invoice page');
  });

  t.test('paying: recorded, the invoice paid, the three events and a receipt; back on the invoice page, which says Pagada with no Pay button', async (t) => {
    const { merchantId, key } = await seller(h);
    const inv = await sentInvoice(h, key);
    const location = await clickPay(h, inv);
    const paid = await submitForm(h, checkoutFormOf((await open(h, location)).html, 'pay')!);
    t.equal(paid.statusCode, 303);
    t.equal(paid.headers.location, inv.public_url, 'back on the invoice page');

    const invoice = (await h.api('GET', `/invoices/${inv.invoice_id}`, { key })).body;
    t.match(invoice, { status: 'paid', amount_paid: '11900.00', payment_reference: { provider: 'sandbox', transaction_id: /^sbx_ch_/ } });
    const payments = (await h.api('GET', `/payments?invoice_id=${inv.invoice_id}`, { key })).body.data;
    t.match(payments, [{ status: 'succeeded', amount: '11900.00', provider: 'sandbox' }]);
    t.same((await eventTypes(h, merchantId)).slice(-3), ['payment.succeeded', 'invoice.paid', 'checkout.completed']);
    const [completed] = await h.sql<{ payload: any }[]>`SELECT payload FROM events WHERE merchant_id = ${merchantId} AND type = 'checkout.completed'`;
    t.match(completed!.payload.data.object, { status: 'completed', payment_status: 'paid', invoice_id: inv.invoice_id });
    t.equal((await h.sql`SELECT 1 FROM emails WHERE invoice_id = ${inv.invoice_id} AND kind = 'receipt'`).length, 1, 'a receipt is queued');

    const page = await open(h, inv.public_url);
    t.match(page.text, 'Pagada');
    t.match(page.text, /Pago recibido el \d{1,2} de [a-z]+ de \d{4}, \d{2}:\d{2} \(hora de Chile\)/);
    t.equal(page.pay, null, 'no Pay button');
    t.notMatch(page.text, 'Saldo pendiente');

    const checkout = await open(h, location);
    t.match(checkout.text, 'Total pagado $11.900', 'the completed checkout says what was paid');
    t.notMatch(checkout.text, 'Total a pagar');
    t.match(checkout.text, 'Volver a la factura');
    t.ok(checkout.html.includes(`href="${inv.public_url}"`));
  });

  t.test('two clicks make one session: a second click reuses the pending one, concurrent clicks share one', async (t) => {
    const { key } = await seller(h);
    const inv = await sentInvoice(h, key);
    const first = await clickPay(h, inv);
    const second = await clickPay(h, inv);
    t.equal(second, first, 'the second click goes to the same session');
    t.equal((await sessionsOf(h, inv.invoice_id)).length, 1);

    // Every click has passed the look for a pending session before any inserts one: only the SQL
    // guard can keep them to one session.
    const CLICKS = 4;
    let arrived = 0;
    let release!: () => void;
    const allArrived = new Promise<void>((r) => (release = r));
    gatedProvider('test-barrier', {
      async createSession() {
        if (++arrived === CLICKS) release();
        await allArrived;
      },
    });
    const racing = await seller(h);
    await h.sql`UPDATE merchants SET payment_provider = 'test-barrier' WHERE id = ${racing.merchantId}`;
    const raced = await sentInvoice(h, racing.key);
    const form = (await open(h, raced.public_url)).pay!;
    const results = await Promise.all(Array.from({ length: CLICKS }, () => submitForm(h, form)));
    t.same(results.map((r) => r.statusCode), Array(CLICKS).fill(303));
    t.equal(arrived, CLICKS, 'each click asked the gateway');
    const sessions = await sessionsOf(h, raced.invoice_id);
    t.equal(sessions.length, 1, 'one session');
    t.same([...new Set(results.map((r) => r.headers.location))], [`http://invoicing.test/checkout/${sessions[0]!.token}`], 'every click lands on it');
  });

  t.test('a declined payment comes back to the invoice; Pay again reuses the session, which says it was declined', async (t) => {
    const { key } = await seller(h);
    const inv = await sentInvoice(h, key);
    const location = await clickPay(h, inv);
    const declined = await submitForm(h, checkoutFormOf((await open(h, location)).html, 'decline')!);
    t.equal(declined.headers.location, inv.public_url);
    t.equal(await invoiceStatus(h, inv.invoice_id), 'viewed', 'the invoice stays open');
    t.ok((await open(h, inv.public_url)).pay, 'with its Pay button');
    t.equal(await clickPay(h, inv), location, 'the same session');
    const again = await open(h, location);
    t.match(again.text, 'El pago fue rechazado. Puede intentarlo de nuevo.');
    t.equal((await sessionsOf(h, inv.invoice_id)).length, 1);
  });

  t.test("an expired session leaves the invoice open, and Pay opens a new one; before the job ran, Pay expires the old one", async (t) => {
    t.teardown(() => clock.reset());
    const { merchantId, key } = await seller(h);
    const inv = await sentInvoice(h, key);
    const first = await clickPay(h, inv);
    const [old] = await sessionsOf(h, inv.invoice_id);
    clock.advance(h.ctx.config.CHECKOUT_TTL_SECONDS * 1000 + 1000);
    t.match((await open(h, first)).text, 'Vuelva a la factura para pagarla', 'the expired checkout page leads back to the invoice');

    // The expiry job has not run yet: the click expires the session and opens another.
    const second = await clickPay(h, inv);
    t.not(second, first, 'a new session');
    const sessions = await sessionsOf(h, inv.invoice_id);
    t.same(sessions.map((s) => s.status), ['expired', 'pending']);
    t.equal(await invoiceStatus(h, inv.invoice_id), 'viewed', 'the invoice is not cancelled');
    const types = await eventTypes(h, merchantId);
    t.equal(types.filter((x) => x === 'checkout.expired').length, 1, 'checkout.expired for the old session');
    t.notOk(types.includes('invoice.cancelled'), 'no invoice.cancelled');
    t.equal(await expireCheckouts(jobDeps(h), { checkout_id: old!.id }), 0, "the old session's job then finds nothing to do");

    // The new one runs out too, and this time the job expires it: the invoice stays open.
    clock.advance(h.ctx.config.CHECKOUT_TTL_SECONDS * 1000 + 1000);
    t.equal(await expireCheckouts(jobDeps(h), { checkout_id: sessions[1]!.id }), 1);
    t.equal(await invoiceStatus(h, inv.invoice_id), 'viewed');
    t.ok((await open(h, inv.public_url)).pay, 'the invoice page still has its Pay button');
    const third = await clickPay(h, inv);
    t.equal((await sessionsOf(h, inv.invoice_id)).length, 3);
    const paid = await submitForm(h, checkoutFormOf((await open(h, third)).html, 'pay')!);
    t.equal(paid.headers.location, inv.public_url);
    t.equal(await invoiceStatus(h, inv.invoice_id), 'paid');
  });

  t.test('a merchant that cannot charge: no Pay button; its payment instructions, escaped with their line breaks, or a word to contact it', async (t) => {
    const instructions = 'Transferencia a Banco Estado\nCuenta 123 <b>456</b> & "789"';
    const { key } = await seller(h, { provider: null, instructions });
    const inv = await sentInvoice(h, key);
    const page = await open(h, inv.public_url);
    t.equal(page.pay, null, 'no Pay button');
    t.match(page.text, 'Cómo pagar');
    t.ok(page.html.includes('<p class="instructions">Transferencia a Banco Estado\nCuenta 123 &lt;b&gt;456&lt;/b&gt; &amp; &quot;789&quot;</p>'), 'escaped, line break kept');
    t.match(page.html, /\.instructions\{white-space:pre-line/, 'and shown as lines');
    const post = await submitForm(h, { action: `${inv.public_url}/pay`, csrf: 'x' });
    t.equal(post.statusCode, 403, 'a forged Pay is refused');

    const bare = await seller(h, { provider: null });
    const plain = await open(h, (await sentInvoice(h, bare.key)).public_url);
    t.equal(plain.pay, null);
    t.match(plain.text, 'Para pagar esta factura, comuníquese con el emisor.');

    const charging = await seller(h, { instructions: 'Transferencia' });
    const payable = await open(h, (await sentInvoice(h, charging.key)).public_url);
    t.ok(payable.pay, 'a merchant that can charge has the Pay button');
    t.notMatch(payable.text, 'Cómo pagar', 'and no instructions');
  });

  t.test('no Pay button on a paid or cancelled invoice; a Pay posted for one goes back to its page and opens nothing; a draft has no Pay', async (t) => {
    const { key } = await seller(h);
    const paid = await sentInvoice(h, key);
    const cancelled = await sentInvoice(h, key);
    const forms = { paid: (await open(h, paid.public_url)).pay!, cancelled: (await open(h, cancelled.public_url)).pay! };
    t.equal((await h.api('POST', `/invoices/${paid.invoice_id}/mark-paid`, { key, body: {} })).status, 200);
    t.equal((await h.api('POST', `/invoices/${cancelled.invoice_id}/cancel`, { key, body: {} })).status, 200);
    for (const [what, inv] of [['paid', paid], ['cancelled', cancelled]] as const) {
      const page = await open(h, inv.public_url);
      t.equal(page.pay, null, `${what}: no Pay button`);
      t.notMatch(page.text, 'Cómo pagar', `${what}: no instructions either`);
      const res = await submitForm(h, forms[what]);
      t.equal(res.statusCode, 303, `${what}: a Pay from a page opened before`);
      t.equal(res.headers.location, inv.public_url, `${what}: goes back to the page, which says why`);
      t.equal((await sessionsOf(h, inv.invoice_id)).length, 0, `${what}: no session`);
    }
    const draft = await sentInvoice(h, key, { send_immediately: false });
    const res = await submitForm(h, { action: `${draft.public_url}/pay`, csrf: forms.paid.csrf });
    t.equal(res.statusCode, 404, 'a draft has no page, so no Pay');
    t.equal((await sessionsOf(h, draft.invoice_id)).length, 0);
  });

  t.test('Pay needs the form of that very page: other sites, missing or foreign tokens are refused with a way back', async (t) => {
    const { key } = await seller(h);
    const inv = await sentInvoice(h, key);
    const other = await sentInvoice(h, key);
    const form = (await open(h, inv.public_url)).pay!;
    const foreign = (await open(h, other.public_url)).pay!;
    const formType = { 'content-type': 'application/x-www-form-urlencoded' };
    const attempts = [
      { what: 'another site', headers: { ...formType, 'sec-fetch-site': 'cross-site' }, csrf: form.csrf },
      { what: 'a foreign Origin', headers: { ...formType, origin: 'https://evil.example' }, csrf: form.csrf },
      { what: 'a made-up token', headers: { ...formType, 'sec-fetch-site': 'same-origin' }, csrf: 'A'.repeat(80) },
      { what: "another invoice's token", headers: { ...formType, 'sec-fetch-site': 'same-origin' }, csrf: foreign.csrf },
    ];
    for (const { what, headers, csrf } of attempts) {
      const res = await h.app.inject({ method: 'POST', url: pathOf(form.action), headers, payload: new URLSearchParams({ csrf_token: csrf }).toString() });
      t.equal(res.statusCode, 403, what);
      t.match(res.body, 'Solicitud rechazada', `${what}: a page that says so`);
      t.ok(res.body.includes(`href="${inv.public_url}"`), `${what}: with a link back to the invoice`);
    }
    const none = await h.app.inject({
      method: 'POST',
      url: pathOf(form.action),
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      payload: '',
    });
    t.equal(none.statusCode, 403, 'no token');
    t.equal((await sessionsOf(h, inv.invoice_id)).length, 0, 'nothing was opened');
    t.equal((await submitForm(h, form)).statusCode, 303, "the page's own form works");
  });

  t.test('a gateway down at Pay: a page that leads back to the invoice, nothing opened; Pay works once it is back', async (t) => {
    const gateway = gatedProvider('test-flaky-open');
    const { merchantId, key } = await seller(h);
    await h.sql`UPDATE merchants SET payment_provider = 'test-flaky-open' WHERE id = ${merchantId}`;
    const inv = await sentInvoice(h, key);
    const form = (await open(h, inv.public_url)).pay!;
    gateway.failure = new ProviderError('provider_unavailable', 'down');
    const res = await submitForm(h, form);
    t.equal(res.statusCode, 503);
    t.match(String(res.headers['content-type']), /^text\/html/);
    t.match(res.body, 'No pudimos abrir el pago');
    t.ok(res.body.includes(`href="${inv.public_url}"`), 'a link back to the invoice');
    t.equal((await sessionsOf(h, inv.invoice_id)).length, 0);
    gateway.failure = null;
    t.match(String((await submitForm(h, form)).headers.location), /\/checkout\//);
  });

  t.test("the issuer's legal data, and the client's RUT with its dots", async (t) => {
    const { key } = await seller(h);
    const page = await open(h, (await sentInvoice(h, key)).public_url);
    t.match(page.text, LEGAL.razon_social);
    t.match(page.text, 'R.U.T.: 76.086.428-5', "the issuer's RUT with dots");
    t.match(page.text, `Giro: ${LEGAL.giro}`);
    t.match(page.text, `${LEGAL.direccion}, ${LEGAL.comuna}, ${LEGAL.ciudad}`);
    t.match(page.text, 'R.U.T.: 12.345.678-5', "the client's RUT as it is printed");
    t.notMatch(page.text, '12345678-5');

    const english = await open(h, (await sentInvoice(h, key, { locale: 'en' })).public_url);
    t.match(english.text, 'Tax ID (RUT): 76.086.428-5');
    t.match(english.text, `Line of business: ${LEGAL.giro}`);
    t.match(english.pay!.label, 'Pay CLP 11,900');

    const { key: bareKey } = await seller(h, { legal: false });
    const bare = await open(h, (await sentInvoice(h, bareKey)).public_url);
    t.notMatch(bare.text, 'Giro', 'a merchant with no legal profile prints none');
    t.notMatch(bare.text, '76.086.428-5');
  });

  t.test('one voice: every hosted page addresses the customer as "usted"', async (t) => {
    t.teardown(() => clock.reset());
    const { key } = await seller(h);
    const instructing = await seller(h, { provider: null });
    const texts = new Map<string, string>();
    const heard = (what: string, text: string) => {
      texts.set(what, text);
      t.ok(text.length > 40, `${what}: has text`);
      t.notMatch(text, TU, `${what}: no "tú"`);
    };
    const look = async (what: string, url: string) => heard(what, (await open(h, url)).text);
    const posted = async (what: string, url: string, payload: string) => {
      const res = await h.app.inject({ method: 'POST', url: pathOf(url), headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' }, payload });
      heard(what, visibleText(res.body));
    };

    const inv = await sentInvoice(h, key);
    await look('invoice, unpaid', inv.public_url);
    await look('invoice, instructions', (await sentInvoice(h, instructing.key)).public_url);
    await look('invoice not found', 'http://invoicing.test/i/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    await posted('invoice Pay refused', `${inv.public_url}/pay`, 'csrf_token=x');
    const checkout = await clickPay(h, inv);
    await look('checkout, open', checkout);
    await submitForm(h, checkoutFormOf((await open(h, checkout)).html, 'decline')!);
    await look('checkout, declined', checkout);
    await posted('checkout Pay refused', `${checkout}/pay`, 'csrf_token=x');
    await look('checkout not found', 'http://invoicing.test/checkout/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    await submitForm(h, checkoutFormOf((await open(h, checkout)).html, 'pay')!);
    await look('invoice, paid', inv.public_url);
    await look('checkout, completed', checkout);
    const store = await h.api('POST', '/checkout', {
      key,
      body: { amount: 5000, description: 'Pedido', customer_email: 'c@example.cl', customer_name: 'C', success_url: 'https://shop.example/ok', cancel_url: 'https://shop.example/no' },
    });
    await look('store checkout, open', store.body.checkout_url);
    clock.advance(h.ctx.config.CHECKOUT_TTL_SECONDS * 1000 + 1000);
    await look('store checkout, expired', store.body.checkout_url);

    t.match(texts.get('invoice, unpaid'), '¿Preguntas sobre esta factura? Escriba a');
    t.match(texts.get('checkout, open'), 'Puede pagar hasta el');
  });

  t.test('a POST /checkout page says "Total pagado" once paid, and its deadline with the time zone', async (t) => {
    const { key } = await seller(h);
    const c = await h.api('POST', '/checkout', {
      key,
      body: { amount: 11900, description: 'Pedido 1001', customer_email: 'c@example.cl', customer_name: 'C', success_url: 'https://shop.example/ok', cancel_url: 'https://shop.example/no' },
    });
    const before = await open(h, c.body.checkout_url);
    t.match(before.text, 'Total a pagar $11.900');
    t.match(before.text, /Puede pagar hasta el \d{1,2} de [a-z]+ de \d{4}, \d{2}:\d{2} \(hora de Chile\)/);
    t.match(before.text, 'Cancelar y volver a la tienda', 'a shop session still leads back to the shop');
    t.equal((await submitForm(h, checkoutFormOf(before.html, 'pay')!)).headers.location, 'https://shop.example/ok');
    const after = await open(h, c.body.checkout_url);
    t.match(after.text, 'Total pagado $11.900');
    t.notMatch(after.text, 'Total a pagar');
    t.match(after.text, 'Volver a la tienda');
  });

  t.test("the checkout page's deadline is printed with the merchant's time zone", async (t) => {
    const { key } = await seller(h);
    const inv = await sentInvoice(h, key);
    const location = await clickPay(h, inv);
    const [s] = await sessionsOf(h, inv.invoice_id);
    const inSantiago = new Intl.DateTimeFormat('en-GB', { timeZone: 'America/Santiago', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(s!.expires_at);
    const text = (await open(h, location)).text;
    t.match(text, new RegExp(`Puede pagar hasta el \\d{1,2} de [a-z]+ de \\d{4}, ${inSantiago} \\(hora de Chile\\)`), 'Santiago time, saying so');

    const moment = new Date('2026-11-25T17:30:00Z');
    t.equal(formatMoment(moment, 'es', 'America/Santiago'), '25 de noviembre de 2026, 14:30 (hora de Chile)');
    t.equal(formatMoment(moment, 'en', 'America/Santiago'), 'November 25, 2026, 2:30 PM (Chile Time)');
    t.equal(formatMoment(new Date('2026-07-01T16:00:00Z'), 'es', 'America/Santiago'), '1 de julio de 2026, 12:00 (hora de Chile)', 'winter time, same name');
    t.equal(formatMoment(moment, 'es', 'UTC'), '25 de noviembre de 2026, 17:30 (GMT+00:00)', 'a zone with no name prints its offset');
  });
});
