import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import type { TestApp } from './app.js';
import { launchBrowser } from './browser.js';

/** The text of the element the selector names; '' when it has none. */
export async function text(page: Page, selector: string): Promise<string> {
  return (await page.locator(selector).textContent()) ?? '';
}

/**
 * The app's support console at /admin in headless Chromium, closed with the test: the app listens
 * on a free port first. `pageErrors` collects every script error on the page, and every dialog
 * (the console opens none).
 */
export async function openConsole(
  t: { teardown(fn: () => unknown): void },
  h: TestApp,
  viewport?: { width: number; height: number },
): Promise<{ page: Page; pageErrors: string[] }> {
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  const browser = await launchBrowser(viewport);
  t.teardown(() => browser.dispose());
  const page = await browser.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (err) => pageErrors.push(err.message));
  page.on('dialog', (d) => {
    pageErrors.push(`dialog: ${d.message()}`);
    void d.dismiss();
  });
  await page.goto(`${base}/admin`);
  return { page, pageErrors };
}
