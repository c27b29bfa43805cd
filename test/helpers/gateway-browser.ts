import type { Test } from 'tap';
import { configureProvider } from '../../src/checkout/provider-settings.js';
import { freePort } from '../../src/db/embedded.js';
import { testApp, type TestApp } from './app.js';
import { launchBrowser } from './browser.js';
import { checkoutBody } from './checkout.js';
import { startShop } from './shop.js';

/**
 * What a browser test of a redirect gateway needs: the app listening on 127.0.0.1 (the gateway's
 * stand-in sends the browser back to it) with the stand-in's base URL, a merchant configured for
 * the gateway, a shop for success_url and cancel_url, Chromium recording any Content-Security-Policy
 * refusal, and the reads the tests check payments with.
 */
export async function gatewayBrowser(
  t: Test,
  gateway: { provider: 'webpay' | 'mercadopago'; env: Record<string, string>; credentials: Record<string, string> },
) {
  const shop = await startShop(t);
  const port = await freePort();
  const h: TestApp = await testApp(t, { PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, ...gateway.env });
  await h.app.listen({ host: '127.0.0.1', port });
  const m = await h.merchant({ name: 'Librería Andes' });
  await configureProvider(h.sql, h.ctx.secrets, m.id, gateway.provider, gateway.credentials);
  const { key } = await h.key(['*'], { merchantId: m.id });

  const browser = await launchBrowser();
  t.teardown(() => browser.dispose());
  const violations: string[] = [];
  browser.on('console', (msg) => {
    if (/Content Security Policy|Refused to/i.test(msg.text())) violations.push(msg.text());
  });

  return {
    h,
    shop,
    merchant: m,
    key,
    browser,
    violations,
    async checkout() {
      const res = await h.api('POST', '/checkout', { key, body: checkoutBody({ success_url: shop.success, cancel_url: shop.cancel }) });
      if (res.status !== 201) throw new Error(`checkout create: ${res.status} ${res.raw}`);
      return res.body as { checkout_id: string; checkout_url: string; invoice_id: string };
    },
    state: async (id: string) => (await h.api('GET', `/checkout/${id}/status`, { key })).body,
    invoiceStatus: async (id: string) => (await h.api('GET', `/invoices/${id}`, { key })).body.status,
    paymentsOf: (invoiceId: string) =>
      h.sql<{ status: string; provider: string; transaction_id: string }[]>`
        SELECT status, provider, transaction_id FROM payments WHERE invoice_id = ${invoiceId} ORDER BY created_at, id`,
  };
}
