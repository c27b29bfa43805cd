// Screenshots of the hosted invoice and checkout pages as a customer sees them, for people to look
// at (docs/screenshots). Made only when asked:
//   SCREENSHOTS_DIR=docs/screenshots npx tsx test/run.ts test/page-screenshots.test.ts
// Spanish pages get the plain names (invoice-unpaid.png ...), English ones an `-en` suffix.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import type { Page } from 'playwright-core';
import { testApp } from './helpers/app.js';
import { browserProblem, launchBrowser } from './helpers/browser.js';
import { seller, sentInvoice } from './helpers/invoice-pay.js';
import { clock } from '../src/clock.js';
import { freePort } from '../src/db/embedded.js';

const dir = process.env.SCREENSHOTS_DIR;
const problem = browserProblem();

if (!dir) t.plan(0, 'SCREENSHOTS_DIR is not set: no screenshots asked for');
else if (problem) t.fail(problem);
else t.test('screenshots of the hosted pages', async (t) => {
  const out = path.resolve(dir);
  await mkdir(out, { recursive: true });
  const port = await freePort();
  const h = await testApp(t, { PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
  await h.app.listen({ host: '127.0.0.1', port });
  const charging = await seller(h);
  const instructing = await seller(h, {
    provider: null,
    legal: false,
    name: 'Taller Los Aromos',
    instructions: 'Transferencia a:\nBanco Estado, cuenta corriente 123456789\nRUT 76.086.428-5\nEnvíe el comprobante a pagos@aromos.cl',
  });
  const browser = await launchBrowser({ width: 1000, height: 800 });
  t.teardown(() => browser.dispose());
  const payButton = (page: Page) => page.getByRole('button', { name: /^(Pagar|Pay) / });

  for (const locale of ['es', 'en'] as const) {
    const shot = async (page: Page, name: string) => {
      const file = path.join(out, `${name}${locale === 'es' ? '' : '-en'}.png`);
      await page.screenshot({ path: file, fullPage: true });
      t.pass(file);
    };
    const page = await browser.newPage();

    const unpaid = await sentInvoice(h, charging.key, { locale, external_reference: 'Pedido 1001' });
    await page.goto(unpaid.public_url);
    await shot(page, 'invoice-unpaid');
    await Promise.all([page.waitForURL(/\/checkout\//), payButton(page).click()]);
    const checkoutUrl = page.url();
    await shot(page, 'checkout-pending');
    await Promise.all([page.waitForURL(unpaid.public_url), payButton(page).click()]);
    await shot(page, 'invoice-paid');
    await page.goto(checkoutUrl);
    await shot(page, 'checkout-paid');

    const instructed = await sentInvoice(h, instructing.key, { locale });
    await page.goto(instructed.public_url);
    await shot(page, 'invoice-instructions');

    const lapsing = await sentInvoice(h, charging.key, { locale });
    await page.goto(lapsing.public_url);
    await Promise.all([page.waitForURL(/\/checkout\//), payButton(page).click()]);
    clock.advance(h.ctx.config.CHECKOUT_TTL_SECONDS * 1000 + 1000);
    await page.reload();
    await shot(page, 'checkout-expired');
    clock.reset();
    await page.close();
  }
});
