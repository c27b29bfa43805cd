// The support console at /admin (docs/decisions.md §1), driven in a real headless Chromium: sign in with
// the admin token, find a failed delivery, read its attempt log, replay it (and see the replay
// delivered), re-enable an endpoint and replay its failures, and show that markup in a merchant
// name, a receiver's answer or a delivery error stays text.
import t from 'tap';
import { openConsole, text } from './helpers/admin-console.js';
import { testApp } from './helpers/app.js';
import { browserProblem } from './helpers/browser.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { until } from './helpers/until.js';

const TOKEN = 'adm_console_0123456789abcdefghijklmnopqrstuvwxyz';
const EVIL_NAME = '<img src=x onerror=window.__pwned=1>';
const EVIL_BODY = '<img src=x onerror=window.__pwned=2><script>window.__pwned=3</script>';
const EVIL_ERROR = '<img src=x onerror=window.__pwned=4>';

const problem = browserProblem();
if (problem) {
  t.fail(problem);
} else {
  t.test('the admin console in a real browser', async (t) => {
    const h = await testApp(t, { ADMIN_TOKEN: TOKEN, WEBHOOK_RETRY_SCHEDULE: '1', WEBHOOK_DISABLE_AFTER_FAILURES: '1000' });
    await h.startWorker();
    const receiver = await startHttpsReceiver(t);
    let evilFails = true;
    let goneAnswers410 = true;
    receiver.reply((req) => {
      if (req.path === '/evil' && evilFails) return { status: 500, body: EVIL_BODY };
      if (req.path === '/gone' && goneAnswers410) return { status: 410, body: 'gone' };
      return { status: 200, body: 'ok' };
    });

    const evil = await h.key(['*'], { merchantId: (await h.merchant({ name: EVIL_NAME })).id });
    const gone = await h.key(['*'], { merchantId: (await h.merchant({ name: 'Gone SpA' })).id });
    const evilEp = (await h.api('POST', '/webhooks/endpoints', { key: evil.key, body: { url: receiver.url('/evil'), events: ['client.created'] } })).body;
    const goneEp = (await h.api('POST', '/webhooks/endpoints', { key: gone.key, body: { url: receiver.url('/gone'), events: ['client.created'] } })).body;
    await h.api('POST', '/clients', { key: evil.key, body: { name: 'Cliente', email: 'cliente@example.cl' } });
    await h.api('POST', '/clients', { key: gone.key, body: { name: 'Otro', email: 'otro@example.cl' } });
    const [failed] = await until('the delivery to the evil endpoint to fail', async () => {
      const rows = await h.sql<{ id: string; event_id: string }[]>`SELECT id, event_id FROM webhook_deliveries WHERE endpoint_id = ${evilEp.id} AND status = 'failed'`;
      return rows.length ? rows : null;
    });
    await until('the 410 to disable the other endpoint', async () => {
      const [row] = await h.sql<{ enabled: boolean }[]>`SELECT enabled FROM webhook_endpoints WHERE id = ${goneEp.id}`;
      return row && !row.enabled;
    });
    // A receiver's answer is one way markup reaches the console; a stored error is another.
    await h.sql`UPDATE webhook_deliveries SET last_error = ${EVIL_ERROR} WHERE id = ${failed!.id}`;

    const { page, pageErrors } = await openConsole(t, h);

    t.test('a wrong token is refused; the right one opens the console', async (t) => {
      await page.locator('#login').waitFor({ state: 'visible' });
      await page.fill('#token', 'not-the-admin-token');
      await page.click('#login-form button');
      await until('the refusal', async () => /refused/.test(await text(page, '#problem')));
      t.ok(await page.locator('#login').isVisible(), 'still on the sign-in form');
      t.equal(await page.evaluate(() => sessionStorage.getItem('invoicing-admin-token')), null, 'a refused token is not kept');

      await page.fill('#token', TOKEN);
      await page.click('#login-form button');
      await page.locator('#console').waitFor({ state: 'visible' });
      t.equal(await page.evaluate(() => sessionStorage.getItem('invoicing-admin-token')), TOKEN, 'kept for this tab only');
      t.notOk(await page.locator('#login').isVisible());
    });

    t.test("find a merchant's failed delivery and read its attempt log", async (t) => {
      await page.selectOption('#f-merchant', evil.merchantId);
      await until('the endpoints of the merchant', async () => (await page.locator('#f-endpoint option').count()) === 2);
      await page.selectOption('#f-status', 'failed');
      await page.selectOption('#f-type', 'client.created');
      await page.click('#filters button[type=submit]');
      // The unfiltered list shown at sign-in holds the same row, so wait for the filtered one.
      const row = page.locator(`#delivery-rows tr[data-id="${failed!.id}"]`);
      await until('only that merchant, status and type', async () => (await page.locator('#delivery-rows tr').count()) === 1);
      t.ok(await row.isVisible(), 'the failed delivery is the one listed');
      const cells = await row.locator('td').allTextContents();
      t.equal(cells[2], EVIL_NAME, 'the merchant name, as text');
      t.equal(cells[5], 'failed');
      t.equal(cells[6], '2/2');
      t.equal(cells[7], EVIL_ERROR, 'the stored error, as text');

      await row.locator('button').click();
      await page.locator('#delivery').waitFor({ state: 'visible' });
      const attempts = page.locator('#attempt-rows tr');
      await until('two attempts', async () => (await attempts.count()) === 2);
      const first = await attempts.nth(0).locator('td').allTextContents();
      t.equal(first[0], '1');
      t.equal(first[2], '500');
      t.match(first[3], /^\d+ ms$/);
      t.equal(first[4], 'HTTP 500');
      t.equal(first[5], EVIL_BODY, "the receiver's answer, as text");
      await attempts.nth(0).locator('summary').click();
      const headers = await attempts.nth(0).locator('details pre').textContent();
      t.match(headers, /X-Webhook-Signature: t=\d+,v1=[0-9a-f]{64}/);
      t.match(headers, new RegExp(`X-Webhook-Id: ${failed!.event_id}`));
      t.match(await text(page, '#delivery-facts'), EVIL_ERROR);
      t.match(await text(page, '#delivery-facts'), /Attempts2 of 2/);
      t.match(await text(page, '#endpoint-facts'), evilEp.url);
    });

    t.test('replay it: a new delivery that reaches the receiver', async (t) => {
      evilFails = false;
      const before = receiver.received.filter((r) => r.path === '/evil').length;
      await page.click('#replay');
      const notice = await until('the replay notice', async () => {
        const n = await text(page, '#notice');
        return /Replayed as delivery/.test(n) ? n : null;
      });
      const replayId = /delivery ([0-9a-f-]{36})/.exec(notice)![1]!;
      const [row] = await h.sql<{ replay_of: string; event_id: string }[]>`SELECT replay_of, event_id FROM webhook_deliveries WHERE id = ${replayId}`;
      t.same(row, { replay_of: failed!.id, event_id: failed!.event_id });
      await until('the console to show the replay delivered', async () => /Statussuccess/.test(await text(page, '#delivery-facts')), 30_000);
      t.equal(receiver.received.filter((r) => r.path === '/evil').length, before + 1);
      t.match(await text(page, '#attempt-rows'), /200/);
    });

    t.test('re-enable a disabled endpoint, then replay its failures since a time', async (t) => {
      goneAnswers410 = false;
      await page.selectOption('#f-merchant', gone.merchantId);
      await until('the endpoints of the merchant', async () => /\(disabled\)/.test(await text(page, '#f-endpoint')));
      await page.selectOption('#f-endpoint', goneEp.id);
      await until('the endpoint panel', async () => /disabled \(gone\)/.test(await text(page, '#endpoint-facts')));
      t.equal(await text(page, '#endpoint-toggle'), 'Enable endpoint');
      await page.click('#endpoint-toggle');
      await until('the endpoint enabled', async () => /Stateenabled/.test(await text(page, '#endpoint-facts')));
      t.match(await text(page, '#notice'), /failure streak is cleared/);
      const [ep] = await h.sql<{ enabled: boolean; consecutive_failures: number; disabled_reason: string | null }[]>`
        SELECT enabled, consecutive_failures, disabled_reason FROM webhook_endpoints WHERE id = ${goneEp.id}`;
      t.same(ep, { enabled: true, consecutive_failures: 0, disabled_reason: null });

      t.ok(await page.inputValue('#replay-since'), 'since defaults to a day ago');
      const before = receiver.received.filter((r) => r.path === '/gone').length;
      await page.click('#replay-failed-form button');
      await until('the replay count', async () => /Replayed 1 failed deliveries\./.test(await text(page, '#notice')));
      await until('the failure replayed to the receiver', async () => receiver.received.filter((r) => r.path === '/gone').length === before + 1);
    });

    t.test('nothing shown was ever run as markup', async (t) => {
      t.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined, 'no injected handler or script ran');
      t.equal(await page.locator('img').count(), 0, 'no element was made from data');
      t.equal(await page.locator('#delivery-rows script, #attempt-rows script, #f-merchant script').count(), 0);
      t.ok((await page.locator('#f-merchant option').allTextContents()).some((o) => o.startsWith(EVIL_NAME)), 'the merchant name is listed as text');
      t.same(pageErrors, [], 'no script error on the page');
    });

    t.test('signing out forgets the token', async (t) => {
      await page.click('#sign-out');
      await page.locator('#login').waitFor({ state: 'visible' });
      t.equal(await page.evaluate(() => sessionStorage.getItem('invoicing-admin-token')), null);
      await page.reload();
      await page.locator('#login').waitFor({ state: 'visible' });
      t.notOk(await page.locator('#console').isVisible());
    });
  });
}
