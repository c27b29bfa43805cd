// Paying an invoice from its e-mail in a real browser (docs/decisions.md §11), as the customer does it:
// the invoice e-mail, read from the SMTP server it was sent to, links the hosted invoice page;
// headless Chromium opens it, presses Pay, pays on the sandbox's checkout page and lands back on
// the invoice page, which then says Pagada. The merchant's HTTPS endpoint receives payment.succeeded,
// invoice.paid and checkout.completed, signed, and the customer gets the receipt. It proves what
// HTTP alone cannot: both pages' forms and redirects work under their Content-Security-Policy
// with the browser's own Origin and Sec-Fetch-Site, the pages fit a phone, and the checkout
// page's amount rows line up.
import t from 'tap';
import Stripe from 'stripe';
import type { Page } from 'playwright-core';
import { testApp } from './helpers/app.js';
import { browserProblem, launchBrowser } from './helpers/browser.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { LEGAL, seller } from './helpers/invoice-pay.js';
import { startSmtpSink } from './helpers/smtp.js';
import { until } from './helpers/until.js';
import { freePort } from '../src/db/embedded.js';

const stripe = new Stripe('sk_test_unused');

const problem = browserProblem();
if (problem) t.fail(problem);
else t.test('paying an invoice from its e-mail in headless Chromium', async (t) => {
  const smtp = await startSmtpSink(t);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const h = await testApp(t, { PUBLIC_BASE_URL: base, SMTP_URL: smtp.url });
  await h.app.listen({ host: '127.0.0.1', port });
  await h.startWorker();
  const receiver = await startHttpsReceiver(t);
  const { merchantId, key } = await seller(h);
  const endpoint = await h.api('POST', '/webhooks/endpoints', {
    key,
    body: { url: receiver.url(), events: ['payment.succeeded', 'invoice.paid', 'checkout.completed'] },
  });
  t.equal(endpoint.status, 201);

  const browser = await launchBrowser({ width: 375, height: 740 });
  t.teardown(() => browser.dispose());
  const violations: string[] = [];
  browser.on('console', (msg) => {
    if (/Content Security Policy|Refused to/i.test(msg.text())) violations.push(msg.text());
  });
  const payButton = (page: Page) => page.getByRole('button', { name: 'Pagar $11.900' });
  const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

  let seq = 0;
  async function emailedInvoice() {
    seq += 1;
    const email = `lectora${seq}@example.cl`;
    const res = await h.api('POST', '/invoices', {
      key,
      body: {
        client: { name: 'Lectora', email, rut: '12.345.678-5' },
        due_date: '2099-12-31',
        items: [{ description: 'Libros de noviembre', quantity: 2, unit_price: 5000 }],
        send_immediately: true,
      },
    });
    if (res.status !== 201) throw new Error(`invoice: ${res.status} ${res.raw}`);
    const mail = await until('the invoice e-mail', () => smtp.messages.find((m) => m.to === email && m.headers.get('x-email-kind') === 'invoice'));
    // The e-mail's link to the invoice page, whatever its words.
    const link = [...mail.html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!).find((href) => /\/i\/[A-Za-z0-9_-]+$/.test(href));
    return { id: res.body.invoice_id as string, email, link };
  }

  t.test('e-mail → invoice page → Pay → checkout → Pay → back on the invoice page, Pagada; the webhooks and the receipt', async (t) => {
    const inv = await emailedInvoice();
    t.ok(inv.link?.startsWith(`${base}/i/`), 'the e-mail links the hosted invoice page');
    const page = await browser.newPage();
    t.equal((await page.goto(inv.link!))?.status(), 200);
    t.match(await page.textContent('body'), 'Librería Andes SpA');
    t.match(await page.textContent('body'), 'R.U.T.: 76.086.428-5');
    t.match(await page.textContent('body'), `Giro: ${LEGAL.giro}`);
    t.equal(await page.getByRole('link', { name: 'Descargar PDF' }).count(), 1);
    t.equal(await overflow(page), 0, 'the invoice page fits a 375 px wide screen');

    await Promise.all([page.waitForURL(/\/checkout\/[A-Za-z0-9_-]+$/), payButton(page).click()]);
    const checkoutUrl = page.url();
    t.match(await page.textContent('body'), 'Total a pagar');
    t.match(await page.textContent('body'), /Puede pagar hasta el\s*\d{1,2} de [a-z]+ de \d{4}, \d{2}:\d{2} \(hora de Chile\)/);
    t.equal(await overflow(page), 0, 'the checkout page fits too');

    await Promise.all([page.waitForURL(inv.link!), payButton(page).click()]);
    t.match(await page.textContent('.badge'), 'Pagada', 'back on the invoice page, paid');
    t.equal(await payButton(page).count(), 0, 'no Pay button any more');
    t.equal(await page.getByRole('button').count(), 0);

    const events = await until('the three events at the receiver', () => {
      const mine = receiver.received.map((r) => ({ r, e: JSON.parse(r.body) })).filter(({ e }) => (e.data.object.invoice_id ?? e.data.object.id) === inv.id);
      return mine.length >= 3 && mine;
    });
    t.same(events.map(({ e }) => e.type).sort(), ['checkout.completed', 'invoice.paid', 'payment.succeeded']);
    for (const { r, e } of events) {
      const verified = stripe.webhooks.constructEvent(r.body, String(r.headers['x-webhook-signature']), endpoint.body.secret);
      t.equal(verified.id, e.id, `${e.type}: signed with the endpoint's secret`);
    }
    const byType = Object.fromEntries(events.map(({ e }) => [e.type, e.data.object]));
    t.match(byType['invoice.paid'], { id: inv.id, status: 'paid', amount_paid: '11900.00' });
    t.match(byType['payment.succeeded'], { invoice_id: inv.id, status: 'succeeded', amount: '11900.00' });
    t.match(byType['checkout.completed'], { status: 'completed', payment_status: 'paid', invoice_id: inv.id, checkout_url: checkoutUrl });

    const receipt = await until('the receipt', () => smtp.messages.find((m) => m.to === inv.email && m.headers.get('x-email-kind') === 'receipt'));
    t.equal(receipt.headers.get('x-invoice-id'), inv.id);

    await page.goto(checkoutUrl);
    const paidText = await page.textContent('body');
    t.match(paidText, 'Total pagado', 'the checkout page, paid, says what was paid');
    t.notMatch(paidText, 'Total a pagar');
    await Promise.all([page.waitForURL(inv.link!), page.getByRole('link', { name: 'Volver a la factura' }).click()]);
    await page.close();
    t.equal((await h.sql`SELECT 1 FROM checkout_sessions WHERE invoice_id = ${inv.id}`).length, 1);
    t.equal((await h.sql`SELECT 1 FROM payments WHERE merchant_id = ${merchantId} AND invoice_id = ${inv.id}`).length, 1);
  });

  t.test('a double click on Pay opens one session; cancel leads back to the invoice', async (t) => {
    const inv = await emailedInvoice();
    const page = await browser.newPage();
    await page.goto(inv.link!);
    // The second click's submission cancels the first one's navigation, which may already be
    // following its redirect to the checkout page: that one ends ERR_ABORTED, the second lands.
    const toCheckout = () => page.waitForURL(/\/checkout\//);
    const landed = toCheckout().catch((err: unknown) => {
      if (!String(err).includes('ERR_ABORTED')) throw err;
      return toCheckout();
    });
    await Promise.all([landed, payButton(page).dblclick()]);
    t.equal((await h.sql`SELECT 1 FROM checkout_sessions WHERE invoice_id = ${inv.id}`).length, 1, 'one session');
    await Promise.all([page.waitForURL(inv.link!), page.getByRole('link', { name: 'Cancelar y volver a la factura' }).click()]);
    t.equal(await payButton(page).count(), 1, 'the invoice is still to pay');
    await page.close();
  });

  t.test("the checkout page's amount rows start where its description starts, not pushed right", async (t) => {
    const c = await h.api('POST', '/checkout', {
      key,
      body: { amount: 11900, description: 'Pedido 1001', customer_email: 'c@example.cl', customer_name: 'C', success_url: `${base}/ok`, cancel_url: `${base}/no` },
    });
    for (const width of [375, 1000]) {
      const page = await browser.newPage();
      await page.setViewportSize({ width, height: 740 });
      await page.goto(c.body.checkout_url);
      const left = (selector: string) => page.locator(selector).first().evaluate((e) => Math.round(e.getBoundingClientRect().left));
      const right = (selector: string) => page.locator(selector).first().evaluate((e) => Math.round(e.getBoundingClientRect().right));
      const descLeft = await left('.desc');
      t.equal(await left('.totals dt'), descLeft, `${width} px: "Factura" lines up with the description`);
      t.equal(await left('dt.grand'), descLeft, `${width} px: "Total a pagar" too`);
      t.equal(await right('dd.grand'), await right('.totals'), `${width} px: the amount ends at the card's edge`);
      t.equal(await right('.totals'), await right('.desc'), `${width} px: the rows span the card`);
      await page.close();
    }
  });

  t.test('no Content-Security-Policy violation on any page', async (t) => {
    t.same(violations, []);
  });
});
