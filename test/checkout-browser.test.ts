// The hosted checkout in a real browser (docs/decisions.md §11): headless Chromium opens checkout_url on
// the app listening on a real port, pays, declines, cancels and meets an expired session, landing
// each time on a tiny shop of its own. It proves what HTTP alone cannot: the page works under its
// own Content-Security-Policy (forms, their cross-origin 303s, the inline style), the browser's
// own Origin and Sec-Fetch-Site pass the cross-site check, and the page fits a phone's screen.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { Page } from 'playwright-core';
import { testApp } from './helpers/app.js';
import { browserProblem, launchBrowser } from './helpers/browser.js';
import { clock } from '../src/clock.js';
import { freePort } from '../src/db/embedded.js';

/** The merchant's shop: success and cancel pages that say where the customer landed. */
async function startShop(t: { teardown(fn: () => unknown): void }) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(req.url ?? '/');
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>Shop</title><h1 id="landed">${req.url === '/success' ? 'Order paid' : 'Order not paid'}</h1>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { success: `${base}/success`, cancel: `${base}/cancel`, hits };
}

const problem = browserProblem();
if (problem) t.fail(problem);
else t.test('checkout in headless Chromium', async (t) => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const h = await testApp(t, { PUBLIC_BASE_URL: base });
  await h.app.listen({ host: '127.0.0.1', port });
  const shop = await startShop(t);
  const m = await h.merchant({ payment_provider: 'sandbox', name: 'Librería Andes' });
  const { key } = await h.key(['*'], { merchantId: m.id });

  const browser = await launchBrowser({ width: 375, height: 740 });
  t.teardown(() => browser.dispose());
  const violations: string[] = [];
  browser.on('console', (msg) => {
    if (/Content Security Policy|Refused to/i.test(msg.text())) violations.push(msg.text());
  });

  let seq = 0;
  async function checkout() {
    seq += 1;
    const res = await h.api('POST', '/checkout', {
      key,
      body: {
        amount: 24990,
        description: `Libros, pedido ${seq}`,
        customer_email: `lectora${seq}@example.cl`,
        customer_name: 'Lectora',
        success_url: shop.success,
        cancel_url: shop.cancel,
      },
    });
    if (res.status !== 201) throw new Error(`checkout: ${res.status} ${res.raw}`);
    return res.body as { checkout_id: string; checkout_url: string; invoice_id: string };
  }
  const statusOf = async (id: string) => (await h.api('GET', `/checkout/${id}/status`, { key })).body;
  const payButton = (page: Page) => page.getByRole('button', { name: /^Pagar/ });

  t.test('pay: the Pay button lands on success_url, the session is completed and the invoice paid', async (t) => {
    const c = await checkout();
    const page = await browser.newPage();
    const res = await page.goto(c.checkout_url);
    t.equal(res?.status(), 200);
    t.equal(await page.getByRole('heading', { level: 1 }).first().textContent(), 'Librería Andes');
    t.match(await page.textContent('body'), /Libros, pedido \d+/);
    t.match(await page.textContent('body'), /\$24\.990/);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    t.equal(overflow, 0, 'fits a 375 px wide screen');
    const background = await payButton(page).evaluate((b) => getComputedStyle(b).backgroundColor);
    t.equal(background, 'rgb(29, 78, 216)', 'the inline style applies under the CSP');
    await Promise.all([page.waitForURL(shop.success), payButton(page).click()]);
    t.equal(await page.textContent('#landed'), 'Order paid');
    t.match(await statusOf(c.checkout_id), { status: 'completed', payment_status: 'paid' });
    t.equal((await h.api('GET', `/invoices/${c.invoice_id}`, { key })).body.status, 'paid');

    await page.goBack();
    await page.reload();
    t.equal(await payButton(page).count(), 0, 'the page, opened again, has no Pay button');
    t.match(await page.textContent('body'), /Pago recibido/);
    await page.close();
  });

  t.test('decline: lands on cancel_url; the page then says so and offers Pay again', async (t) => {
    const c = await checkout();
    const page = await browser.newPage();
    await page.goto(c.checkout_url);
    await Promise.all([page.waitForURL(shop.cancel), page.getByRole('button', { name: 'Simular un pago rechazado' }).click()]);
    t.equal(await page.textContent('#landed'), 'Order not paid');
    t.match(await statusOf(c.checkout_id), { status: 'pending', payment_status: 'failed' });
    await page.goto(c.checkout_url);
    t.match(await page.getByRole('alert').textContent(), /rechazado/);
    t.equal(await payButton(page).count(), 1);
    await page.close();
  });

  t.test('cancel: the link lands on cancel_url and changes nothing', async (t) => {
    const c = await checkout();
    const page = await browser.newPage();
    await page.goto(c.checkout_url);
    await Promise.all([page.waitForURL(shop.cancel), page.getByRole('link', { name: 'Cancelar y volver a la tienda' }).click()]);
    t.match(await statusOf(c.checkout_id), { status: 'pending', payment_status: 'unpaid' });
    await page.close();
  });

  t.test('expired: the page says so, with no Pay button', async (t) => {
    const c = await checkout();
    const page = await browser.newPage();
    await page.goto(c.checkout_url);
    t.equal(await payButton(page).count(), 1);
    clock.advance(86_400_000 + 1000);
    t.teardown(() => clock.reset());
    await page.reload();
    t.equal(await payButton(page).count(), 0);
    t.match(await page.textContent('body'), /Este enlace de pago expiró/);
    await page.close();
  });

  t.test('no Content-Security-Policy violation on any page', async (t) => {
    t.same(violations, []);
    t.ok(shop.hits.includes('/success') && shop.hits.includes('/cancel'), 'the shop saw both landings');
  });
});
