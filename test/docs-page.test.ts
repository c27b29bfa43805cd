// The reference page as a reader sees it (issue 19): in Chromium, at a desk's and a phone's
// width, the sidebar shows every path whole (the long webhook paths were cut off); and a field's
// bound is said once, not by its description and again by the notes after it.
// With SCREENSHOTS_DIR set, the sidebar is saved there as docs-sidebar.png.
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { testApp } from './helpers/app.js';
import { browserProblem, launchBrowser } from './helpers/browser.js';
import { API_PREFIX } from '../src/http/urls.js';

/** A bound as the notes word it: "1 to 255 characters", "at most 16 items". */
const BOUND = /\b(?:\d+ to \d+|at least \d+|at most \d+) (?:characters|items)\b/g;

t.test('no table cell of the page says a bound twice', async (t) => {
  const h = await testApp(t);
  const { raw } = await h.api('GET', '/docs');
  const cells = [...raw.matchAll(/<td>(.*?)<\/td>/gs)].map((m) => m[1]!);
  const idempotencyKey = cells.filter((c) => c.includes('Replays the first answer'));
  t.ok(idempotencyKey.length > 0, 'the Idempotency-Key parameter is on the page');
  for (const c of idempotencyKey) t.equal(c.match(/1 to 255 characters/g)?.length, 1, 'its length is said once');
  const repeated = cells.filter((c) => {
    const bounds = c.match(BOUND) ?? [];
    return new Set(bounds).size < bounds.length;
  });
  t.same(repeated, [], 'no other cell repeats a bound either');
});

const problem = browserProblem();
if (problem) {
  t.fail(problem);
} else {
  t.test('the sidebar shows every link whole', async (t) => {
    const h = await testApp(t);
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}${API_PREFIX}/docs`;

    for (const viewport of [
      { width: 1200, height: 2000 },
      { width: 390, height: 844 },
    ]) {
      const browser = await launchBrowser(viewport);
      t.teardown(() => browser.dispose());
      const page = await browser.newPage();
      await page.goto(url);
      // A list item is a block as wide as the sidebar: content wider than it is cut off or scrolls.
      const overflowing = await page.evaluate(() =>
        [document.querySelector('nav')!, ...document.querySelectorAll('nav li')]
          .filter((el) => el.scrollWidth > el.clientWidth)
          .map((el) => `${el.tagName.toLowerCase()} "${el.querySelector('a')?.textContent ?? ''}": ${el.scrollWidth} > ${el.clientWidth}`),
      );
      t.same(overflowing, [], `nothing in the sidebar overflows at ${viewport.width}px`);
      const longest = page.locator('nav a', { hasText: '/rotate-secret' });
      t.equal(await longest.count(), 1, 'the longest webhook path is in the sidebar');
      t.ok(await longest.isVisible());

      // The whole sidebar: the viewport is tall enough for it not to scroll.
      if (process.env.SCREENSHOTS_DIR && viewport.width === 1200) {
        await page.locator('nav').screenshot({ path: path.resolve(process.env.SCREENSHOTS_DIR, 'docs-sidebar.png') });
      }
    }
  });
}
