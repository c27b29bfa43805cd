// The support console as a support desk uses it (issue 19), in headless Chromium: a refused token
// then the right one leaves no refusal on screen, and any error goes once an action succeeds; the
// list opens on every delivery not yet delivered (a delivery retrying for a day included); rows
// made within the same minute are told apart; merchants are shown by name, their ids on hover.
// With SCREENSHOTS_DIR set, the console at 1200 px wide is saved there as admin-console.png.
import path from 'node:path';
import t from 'tap';
import type { Locator, Page } from 'playwright-core';
import { openConsole, text } from './helpers/admin-console.js';
import { testApp } from './helpers/app.js';
import { browserProblem } from './helpers/browser.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { until } from './helpers/until.js';
import { newId } from '../src/ids.js';

const TOKEN = 'adm_desk_0123456789abcdefghijklmnopqrstuvwxyz';

/** What hovering over the element (or something in it) shows. */
function hover(locator: Locator): Promise<string | null> {
  return locator.evaluate((el) => (el.getAttribute('title') ?? el.querySelector('[title]')?.getAttribute('title')) || null);
}

/** The `dd` after the `dt` naming it in a facts list. */
function fact(page: Page, list: string, term: string) {
  return page.locator(`${list} dt:text-is("${term}") + dd`);
}

const problem = browserProblem();
if (problem) {
  t.fail(problem);
} else {
  t.test('the admin console at a support desk', async (t) => {
    // One attempt, then the retry a day later: a failing receiver leaves its delivery `retrying`.
    const h = await testApp(t, { ADMIN_TOKEN: TOKEN, WEBHOOK_RETRY_SCHEDULE: '86400', WEBHOOK_DISABLE_AFTER_FAILURES: '1000' });
    await h.startWorker();
    const receiver = await startHttpsReceiver(t);
    receiver.reply((req) => (req.path === '/down' ? { status: 503, body: 'maintenance' } : req.path === '/gone' ? { status: 410, body: 'gone' } : { status: 200, body: 'ok' }));

    async function merchantWithEndpoint(name: string, receiverPath: string, clients: number) {
      const m = await h.key(['*'], { merchantId: (await h.merchant({ name })).id });
      const ep = (await h.api('POST', '/webhooks/endpoints', { key: m.key, body: { url: receiver.url(receiverPath), events: ['client.created'] } })).body as { id: string; url: string };
      for (let i = 0; i < clients; i++) await h.api('POST', '/clients', { key: m.key, body: { name: `${name} cliente ${i}`, email: `c${i}@example.cl` } });
      return { merchantId: m.merchantId, endpointId: ep.id, url: ep.url };
    }
    const andes = await merchantWithEndpoint('Andes SpA', '/ok', 2);
    const pacifico = await merchantWithEndpoint('Pacífico Ltda', '/down', 1);
    const gone = await merchantWithEndpoint('Gone SpA', '/gone', 1);

    const settled = await until('every delivery to settle', async () => {
      const rows = await h.sql<{ id: string; endpoint_id: string; status: string }[]>`SELECT id, endpoint_id, status FROM webhook_deliveries ORDER BY created_at`;
      return rows.length === 4 && rows.every((r) => r.status !== 'pending') ? rows : null;
    });
    const of = (ep: { endpointId: string }, status: string) => settled.filter((r) => r.endpoint_id === ep.endpointId && r.status === status).map((r) => r.id);
    const delivered = of(andes, 'success');
    const [retrying] = of(pacifico, 'retrying');
    const [failed] = of(gone, 'failed');
    t.equal(delivered.length, 2);
    t.ok(retrying && failed, 'one delivery retrying for a day, one failed');
    // Not attempted yet: made as a fan-out makes it, with no attempt queued.
    const pending = newId();
    await h.sql`
      INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, event_type, payload, max_attempts, created_at, updated_at)
      SELECT ${pending}, merchant_id, endpoint_id, ${newId()}, event_type, payload, max_attempts, now(), now() FROM webhook_deliveries WHERE id = ${delivered[0]!}`;

    const { page, pageErrors } = await openConsole(t, h, { width: 1200, height: 900 });

    const listed = () => page.locator('#delivery-rows tr[data-id]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-id')));

    t.test('a refused token, then the right one: the refusal goes', async (t) => {
      await page.locator('#login').waitFor({ state: 'visible' });
      await page.fill('#token', 'not-the-admin-token');
      await page.click('#login-form button');
      await until('the refusal', async () => /refused/.test(await text(page, '#problem')));
      await page.fill('#token', TOKEN);
      await page.click('#login-form button');
      await page.locator('#console').waitFor({ state: 'visible' });
      await until('the list', async () => (await listed()).length > 0);
      t.equal(await text(page, '#problem'), '', 'no refusal left on screen');
      t.notOk(await page.locator('#problem').isVisible(), 'nor an empty red banner');
    });

    t.test('the list opens on every delivery not delivered, retrying ones included', async (t) => {
      t.equal(await page.inputValue('#f-status'), 'pending,retrying,failed');
      t.match(await page.locator('#f-status option:checked').textContent(), /not delivered/);
      t.same((await listed()).sort(), [pending, retrying, failed].sort(), 'pending, retrying and failed; nothing delivered');

      await page.selectOption('#f-status', 'success');
      await page.click('#filters button[type=submit]');
      await until('the delivered ones', async () => (await listed()).sort().join() === [...delivered].sort().join());
      t.pass('one status still filters alone');
    });

    t.test('each row tells its delivery apart, the full id on hover', async (t) => {
      await page.selectOption('#f-status', '');
      await page.click('#filters button[type=submit]');
      await until('every delivery', async () => (await listed()).length === 5);
      const links = await page.locator('#delivery-rows tr[data-id]').evaluateAll((rows) =>
        rows.map((r) => {
          const b = r.querySelector('td button')!;
          return { id: r.getAttribute('data-id')!, shown: b.textContent, title: b.getAttribute('title') };
        }),
      );
      // Five deliveries made within seconds: a UUIDv7's first characters are that time, the same for all.
      t.equal(new Set(links.map((l) => l.shown)).size, 5, 'no two rows show the same delivery name');
      for (const l of links) {
        t.equal(l.title, l.id, 'the full id on hover');
        t.ok(l.id.endsWith(l.shown!.replace('…', '')), `${l.shown} is the end of ${l.id}`);
      }
    });

    t.test('merchants by name, their ids on hover', async (t) => {
      const cell = page.locator(`#delivery-rows tr[data-id="${retrying}"] td:nth-child(3)`);
      t.equal(await cell.textContent(), 'Pacífico Ltda');
      t.equal(await hover(cell), pacifico.merchantId);

      await page.locator(`#delivery-rows tr[data-id="${failed}"] td button`).click();
      await until('the delivery panel', async () => (await text(page, '#delivery-facts')).includes(failed!));
      for (const list of ['#delivery-facts', '#endpoint-facts']) {
        const merchant = fact(page, list, 'Merchant');
        t.equal(await merchant.textContent(), 'Gone SpA', `${list}: the name, not the id`);
        t.equal(await hover(merchant), gone.merchantId, `${list}: the id on hover`);
      }

      await page.selectOption('#f-endpoint', pacifico.endpointId);
      await until('that endpoint', async () => (await text(page, '#endpoint-facts')).includes(pacifico.url));
      t.equal(await fact(page, '#endpoint-facts', 'Merchant').textContent(), 'Pacífico Ltda', 'an endpoint picked from the list');
    });

    t.test('an error goes once an action succeeds', async (t) => {
      await page.locator(`#delivery-rows tr[data-id="${failed}"] td button`).click();
      // The panel still shows that delivery: its endpoint, in place of the one picked since, says it opened anew.
      await until('the delivery panel', async () => (await text(page, '#delivery-facts')).includes(failed!) && (await text(page, '#endpoint-facts')).includes(gone.url));
      // The 410 disabled the endpoint: a replay is refused until it is enabled again.
      await page.click('#replay');
      await until('the refusal', async () => /endpoint is disabled/.test(await text(page, '#problem')));

      await page.click('#filters button[type=submit]');
      await until('the error to go', async () => (await text(page, '#problem')) === '');
      t.pass('a search that succeeds clears it');

      await page.click('#endpoint-toggle');
      await until('the endpoint enabled', async () => /Stateenabled/.test(await text(page, '#endpoint-facts')));
      t.equal(await fact(page, '#endpoint-facts', 'Merchant').textContent(), 'Gone SpA', 'still by name after enabling');
      t.same(pageErrors, [], 'no script error on the page');
    });

    t.test('the screenshot', { skip: process.env.SCREENSHOTS_DIR ? false : 'SCREENSHOTS_DIR is not set' }, async (t) => {
      await page.reload();
      await until('the default list', async () => (await listed()).length === 3);
      await page.locator(`#delivery-rows tr[data-id="${retrying}"] td button`).click();
      await until('the delivery panel', async () => (await text(page, '#delivery-facts')).includes(retrying!));
      await page.screenshot({ path: path.resolve(process.env.SCREENSHOTS_DIR!, 'admin-console.png'), fullPage: true });
      t.pass();
    });
  });
}
