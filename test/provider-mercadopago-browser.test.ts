// Paying a Mercado Pago Checkout Pro checkout in a real browser (docs/decisions.md §16), as the customer
// does it: headless Chromium opens the hosted checkout page, presses Pay, which sends it to the
// stand-in's init_point page (the official mercadopago SDK created the preference there), pays or
// is declined there, or is left in review; the stand-in notifies our app over HTTP, signed,
// before sending the browser back to our checkout page, which looks the payment up (never trusting
// the return's query) and sends the browser on as a Webpay return does: paid → success_url,
// declined → cancel_url, still in review → our page saying so, which reloads itself until it is
// decided. Also from the hosted invoice page's Pay button. It proves what HTTP alone cannot: the
// page's GET form reaches another origin under its Content-Security-Policy, the redirects are
// followed past it, and the way back lands where §11 says.
import t from 'tap';
import type { Page } from 'playwright-core';
import { browserProblem } from './helpers/browser.js';
import { gatewayBrowser } from './helpers/gateway-browser.js';
import { sentInvoice } from './helpers/invoice-pay.js';
import { MP_ACCESS_TOKEN, MP_WEBHOOK_SECRET, startMercadoPagoStandIn } from './helpers/mercadopago-standin.js';

const problem = browserProblem();
if (problem) t.fail(problem);
else t.test('paying a Mercado Pago checkout in headless Chromium', async (t) => {
  const mp = await startMercadoPagoStandIn(t);
  const { h, shop, key, browser, violations, checkout, state, invoiceStatus, paymentsOf } = await gatewayBrowser(t, {
    provider: 'mercadopago',
    env: { MERCADOPAGO_BASE_URL: mp.url },
    credentials: { access_token: MP_ACCESS_TOKEN, webhook_secret: MP_WEBHOOK_SECRET },
  });
  const payButton = (page: Page) => page.getByRole('button', { name: 'Pagar $11.900' });

  /** From our checkout page (already open) to the init_point page; the preference it shows. */
  async function toMercadoPago(page: Page): Promise<string> {
    await Promise.all([page.waitForURL(`${mp.url}/checkout/v1/redirect?pref_id=*`), payButton(page).click()]);
    t.match(await page.textContent('h1'), ': $11900', "on Mercado Pago's page, for the checkout's amount");
    return new URL(page.url()).searchParams.get('pref_id')!;
  }

  t.test('checkout page → init_point → pay → notified → back through our page to success_url', async (t) => {
    const c = await checkout();
    const page = await browser.newPage();
    await page.goto(c.checkout_url);
    const preference = await toMercadoPago(page);
    t.equal(mp.preferences.get(preference)?.body.external_reference, c.checkout_id, "this checkout's preference");
    await Promise.all([page.waitForURL(shop.success), page.getByRole('button', { name: 'Pagar', exact: true }).click()]);
    t.equal(mp.notifications.at(-1)?.status, 200, 'the notification reached the app over HTTP before the browser came back');
    t.match(await page.textContent('h1'), 'pedido pagado', "on the shop's success page");
    t.match(await state(c.checkout_id), { status: 'completed', payment_status: 'paid' });
    t.equal(await invoiceStatus(c.invoice_id), 'paid');
    const [payment] = [...mp.payments.values()].filter((p) => p.preference_id === preference);
    t.same(await paymentsOf(c.invoice_id), [{ status: 'succeeded', provider: 'mercadopago', transaction_id: String(payment!.id) }]);
    await page.goto(c.checkout_url);
    t.match(await page.textContent('body'), 'Pago recibido', 'the checkout page says paid');
    t.match(await page.textContent('body'), 'Total pagado');
    t.equal(await page.getByRole('button').count(), 0, 'no Pay button');
    await page.close();
  });

  t.test('declined at Mercado Pago: on to cancel_url; the checkout page says so and offers Pay again, which pays; cancel leads to cancel_url', async (t) => {
    const c = await checkout();
    const page = await browser.newPage();
    await page.goto(c.checkout_url);
    await toMercadoPago(page);
    await Promise.all([page.waitForURL(shop.cancel), page.getByRole('button', { name: 'Pagar con tarjeta rechazada' }).click()]);
    t.match(await page.textContent('h1'), 'pedido sin pagar', "on the shop's cancel page");
    t.match(await state(c.checkout_id), { status: 'pending', payment_status: 'failed' });
    t.equal((await paymentsOf(c.invoice_id)).map((p) => p.status).join(), 'failed');

    await page.goto(c.checkout_url);
    t.match(await page.getByRole('alert').textContent(), 'El pago fue rechazado', 'the checkout page, still open, says declined');
    await toMercadoPago(page);
    await Promise.all([page.waitForURL(shop.success), page.getByRole('button', { name: 'Pagar', exact: true }).click()]);
    t.match(await state(c.checkout_id), { status: 'completed', payment_status: 'paid' });

    const other = await checkout();
    await page.goto(other.checkout_url);
    await Promise.all([page.waitForURL(shop.cancel), page.getByRole('link', { name: 'Cancelar y volver a la tienda' }).click()]);
    t.match(await state(other.checkout_id), { status: 'pending', payment_status: 'unpaid' }, 'cancel changes nothing');
    await page.close();
  });

  t.test('in review at Mercado Pago: our page says the payment is being confirmed, no Pay button, and reloads itself on to success_url once approved', async (t) => {
    const c = await checkout();
    const page = await browser.newPage();
    await page.goto(c.checkout_url);
    const preference = await toMercadoPago(page);
    await Promise.all([
      page.waitForURL((url) => url.href.startsWith(`${c.checkout_url}?`)),
      page.getByRole('button', { name: 'Pagar con tarjeta en revisión' }).click(),
    ]);
    t.match(await page.textContent('h1.state-title'), 'Estamos confirmando su pago');
    t.match(await page.getByRole('status').textContent(), 'Esta página se actualiza sola');
    t.equal(await page.getByRole('button').count(), 0, 'no Pay button while the payment is pending');
    t.match(await state(c.checkout_id), { status: 'pending', payment_status: 'unpaid' });
    // Mercado Pago approves it, its notification lost: the page's own reload finds it approved.
    const [payment] = [...mp.payments.values()].filter((p) => p.preference_id === preference);
    mp.payments.get(payment!.id)!.status = 'approved';
    await page.waitForURL(shop.success, { timeout: 15_000 });
    t.match(await state(c.checkout_id), { status: 'completed', payment_status: 'paid' });
    await page.close();
  });

  t.test("the invoice page's Pay → checkout page → init_point → pay → back to the invoice, Pagada", async (t) => {
    const inv = await sentInvoice(h, key);
    const page = await browser.newPage();
    await page.goto(inv.public_url);
    await Promise.all([page.waitForURL(/\/checkout\/[A-Za-z0-9_-]+$/), payButton(page).click()]);
    await toMercadoPago(page);
    await Promise.all([page.waitForURL(inv.public_url), page.getByRole('button', { name: 'Pagar', exact: true }).click()]);
    t.match(await page.textContent('.badge'), 'Pagada', 'the invoice page says paid');
    t.equal(await payButton(page).count(), 0, 'and offers no Pay button');
    t.equal(await invoiceStatus(inv.invoice_id), 'paid');
    await page.close();
  });

  t.test('no Content-Security-Policy violation on any page', async (t) => {
    t.same(violations, []);
  });
});
