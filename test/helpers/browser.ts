import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/**
 * Why the browser tests cannot run, or null when they can. `npm test` (test/run.ts) finds or
 * installs Chromium and passes its path in CHROMIUM_PATH; a missing browser must fail these tests,
 * never let them pass for a page nobody opened.
 */
export function browserProblem(): string | null {
  return process.env.CHROMIUM_PATH ? null : (process.env.CHROMIUM_PROBLEM ?? 'Chromium is not available: run the browser tests through `npm test`, which finds or installs it, or set CHROMIUM_PATH');
}

/** Headless Chromium with a fresh profile, closed and removed by the returned context's `dispose`. */
export async function launchBrowser(viewport?: { width: number; height: number }): Promise<BrowserContext & { dispose(): Promise<void> }> {
  const profile = await mkdtemp(path.join(os.tmpdir(), 'chromium-profile-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH,
    headless: true,
    // Root needs --no-sandbox; the rest keep Chromium from calling out of a closed network.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    ...(viewport ? { viewport } : {}),
  });
  return Object.assign(browser, {
    async dispose() {
      await browser.close();
      await rm(profile, { recursive: true, force: true });
    },
  });
}
