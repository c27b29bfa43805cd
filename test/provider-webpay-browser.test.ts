// Paying a Webpay Plus checkout in a real browser (docs/decisions.md §16), as the customer does it: headless
// Chromium opens the hosted checkout page of a POST /checkout session, presses Pay, which posts
// token_ws to the Webpay stand-in's form (the official transbank-sdk created the transaction
// there), pays or leaves on that form, and is sent back by GET to our return URL, which commits
// and redirects to the shop. It proves what HTTP alone cannot: the page's form reaches another
// origin under its Content-Security-Policy, and the gateway's redirect back lands where §11 says.
import t from 'tap';
import type { Page } from 'playwright-core';
import { browserProblem } from './helpers/browser.js';
import { gatewayBrowser } from './helpers/gateway-browser.js';
import { WEBPAY_API_KEY, WEBPAY_COMMERCE_CODE, startWebpayStandIn } from './helpers/webpay-standin.js';

const problem = browserProblem();
if (problem) t.fail(problem);
else t.test('paying a Webpay checkout in headless Chromium', async (t) => {
  const webpay = await startWebpayStandIn(t);
  const { shop, browser, violations, checkout, state, invoiceStatus, paymentsOf } = await gatewayBrowser(t, {
    provider: 'webpay',
    env: { WEBPAY_BASE_URL: webpay.url },
    credentials: { commerce_code: WEBPAY_COMMERCE_CODE, api_key: WEBPAY_API_KEY },
  });

  /** From our checkout page to Webpay's form: the token the form shows is the transaction's. */
  async function toWebpay(page: Page, checkoutUrl: string): Promise<string> {
    await page.goto(checkoutUrl);
    await Promise.all([page.waitForURL(`${webpay.url}/webpayserver/initTransaction`), page.getByRole('button', { name: 'Pagar $11.900' }).click()]);
    t.match(await page.textContent('h1'), 'Webpay: $11900', "on Webpay's form, for the checkout's amount");
    return (await page.locator('input[name="token_ws"]').first().inputValue()) as string;
  }

  t.test('checkout page → Webpay form → pay → back through our return: paid, completed, on success_url', async (t) => {
    const c = await checkout();
    const page = await browser.newPage();
    const token = await toWebpay(page, c.checkout_url);
    t.equal(webpay.transactions.get(token)?.session_id, c.checkout_id, "the form pays this checkout's transaction");
    await Promise.all([page.waitForURL(shop.success), page.getByRole('button', { name: 'Pagar', exact: true }).click()]);
    t.match(await page.textContent('h1'), 'pedido pagado', "on the shop's success page");
    t.match(await state(c.checkout_id), { status: 'completed', payment_status: 'paid' });
    t.equal(await invoiceStatus(c.invoice_id), 'paid');
    t.same(await paymentsOf(c.invoice_id), [{ status: 'succeeded', provider: 'webpay', transaction_id: token }]);
    t.equal(webpay.transactions.get(token)!.commits, 1, 'committed once');

    await page.goto(c.checkout_url);
    t.match(await page.textContent('body'), 'Total pagado', 'the checkout page now says it was paid');
    t.equal(await page.getByRole('button').count(), 0, 'and offers no Pay button');
    await Promise.all([page.waitForURL(shop.success), page.getByRole('link', { name: 'Volver a la tienda' }).click()]);
    await page.close();
  });

  t.test('abandoned on the form: back on cancel_url, nothing paid; the checkout page offers a new transaction', async (t) => {
    const c = await checkout();
    const page = await browser.newPage();
    const token = await toWebpay(page, c.checkout_url);
    await Promise.all([page.waitForURL(shop.cancel), page.getByRole('button', { name: 'Anular compra y volver' }).click()]);
    t.match(await page.textContent('h1'), 'pedido sin pagar', "on the shop's cancel page");
    t.match(await state(c.checkout_id), { status: 'pending', payment_status: 'unpaid' });
    t.not(await invoiceStatus(c.invoice_id), 'paid');
    t.same(await paymentsOf(c.invoice_id), [], 'nothing recorded');
    t.equal(webpay.transactions.get(token)!.commits, 0, 'nothing committed');

    const next = await toWebpay(page, c.checkout_url);
    t.not(next, token, 'paying again starts a new transaction');
    await page.close();
  });

  t.test('declined at the bank: cancel_url, the page says so; paying again succeeds', async (t) => {
    const c = await checkout();
    const page = await browser.newPage();
    const declined = await toWebpay(page, c.checkout_url);
    await Promise.all([page.waitForURL(shop.cancel), page.getByRole('button', { name: 'Tarjeta rechazada' }).click()]);
    t.match(await state(c.checkout_id), { status: 'pending', payment_status: 'failed' });
    await page.goto(c.checkout_url);
    t.match(await page.getByRole('alert').textContent(), 'El pago fue rechazado');
    const token = await toWebpay(page, c.checkout_url);
    t.not(token, declined);
    await Promise.all([page.waitForURL(shop.success), page.getByRole('button', { name: 'Pagar', exact: true }).click()]);
    t.match(await state(c.checkout_id), { status: 'completed', payment_status: 'paid' });
    t.same(
      (await paymentsOf(c.invoice_id)).map((p) => [p.status, p.transaction_id]),
      [
        ['failed', declined],
        ['succeeded', token],
      ],
    );
    await page.close();
  });

  t.test('no Content-Security-Policy violation on any page', async (t) => {
    t.same(violations, []);
  });
});
