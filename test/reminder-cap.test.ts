// docs/decisions.md §19, reminders are not a relay: at most 3 manual reminders of an invoice in 24 hours;
// the next is 429 rate_limited with Retry-After (and after_seconds:N) the seconds until the oldest
// of the three is a day old, and is not counted. Automated reminders neither count nor are capped.
import t, { type Test } from 'tap';
import { isEnvelope, testApp, type ApiResponse, type TestApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';
import { clock, dateInZone } from '../src/clock.js';
import { sendDueReminders } from '../src/invoices/transitions.js';
import { invoiceDeps } from '../src/invoices/routes.js';

const DAY_S = 24 * 60 * 60;

async function sentInvoice(h: TestApp, key: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true, ...extra }) });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
  return res.body.invoice_id;
}

async function counts(h: TestApp, id: string) {
  const [row] = await h.sql<{ reminders: number; manual: number; emails: number; events: number; reminders_sent: number }[]>`
    SELECT (SELECT count(*)::int FROM reminders WHERE invoice_id = ${id}) AS reminders,
           (SELECT count(*)::int FROM reminders WHERE invoice_id = ${id} AND kind = 'manual') AS manual,
           (SELECT count(*)::int FROM emails WHERE invoice_id = ${id} AND kind = 'reminder') AS emails,
           (SELECT count(*)::int FROM events WHERE type = 'invoice.reminder_sent' AND payload->'data'->'object'->>'id' = ${id}) AS events,
           (SELECT reminders_sent FROM invoices WHERE id = ${id}) AS reminders_sent`;
  return row!;
}

function assertRefused(t: Test, res: ApiResponse, expectedWait: number, msg: string): number {
  t.equal(res.status, 429, msg);
  t.ok(isEnvelope(res.body), `${msg}: the envelope`);
  t.equal(res.body.code, 'rate_limited', msg);
  t.equal(res.body.details, null, msg);
  const m = /^after_seconds:(\d+)$/.exec(res.body.retry);
  t.ok(m, `${msg}: retry is after_seconds:N (${res.body.retry})`);
  const n = Number(m?.[1]);
  t.equal(res.headers['retry-after'], String(n), `${msg}: Retry-After equals N`);
  // The request takes a moment: N is the wait computed at the server, rounded up.
  t.ok(n <= expectedWait + 1 && n >= expectedWait - 10, `${msg}: N = ${n}, expected about ${expectedWait}`);
  return n;
}

/** A moment after 09:00 in the zone on some day from now: when the automated schedule runs. */
function afterSendHour(timeZone: string): Date {
  let at = clock.now();
  const hour = () => Number(new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', hourCycle: 'h23' }).format(at));
  while (hour() < 9 || hour() > 22) at = new Date(at.getTime() + 60 * 60 * 1000);
  return at;
}

function plusDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

t.test('manual reminder cap', async (t) => {
  t.teardown(() => clock.reset());
  const h = await testApp(t);
  const { key, merchantId } = await h.key();
  const timezone = (await h.sql<{ timezone: string }[]>`SELECT timezone FROM merchants WHERE id = ${merchantId}`)[0]!.timezone;

  t.test('3 pass, the 4th is 429 until the oldest is a day old; the refused one is not counted; automated ones unaffected', async (t) => {
    // Due in three days from a moment after 09:00, so the schedule's first point (-3 days) is due then.
    const scheduleAt = afterSendHour(timezone);
    const id = await sentInvoice(h, key, { due_date: plusDays(dateInZone(scheduleAt, timezone), 3) });

    const sent: ApiResponse[] = [];
    for (let i = 1; i <= 3; i++) {
      const res = await h.api('POST', `/invoices/${id}/remind`, { key, body: {} });
      t.equal(res.status, 200, `manual reminder ${i} passes`);
      sent.push(res);
      clock.advance(60_000);
    }
    const firstAt = Date.parse(sent[0]!.body.sent_at);
    const untilFirstIsADay = () => Math.ceil((firstAt + DAY_S * 1000 - clock.now().getTime()) / 1000);

    const fourth = await h.api('POST', `/invoices/${id}/remind`, { key, body: { custom_message: 'otra vez' } });
    assertRefused(t, fourth, untilFirstIsADay(), 'the 4th manual reminder');
    t.ok(untilFirstIsADay() > 60, 'the wait is far more than a minute: the window is a day');
    t.same(await counts(h, id), { reminders: 3, manual: 3, emails: 3, events: 3, reminders_sent: 3 }, 'the refused one: no reminder, e-mail, event or count');

    // An automated reminder is sent whatever the manual ones, and does not count toward their cap.
    t.equal(await sendDueReminders(h.sql, scheduleAt, invoiceDeps(h.ctx)), 1, 'the automated reminder is sent');
    t.same(await counts(h, id), { reminders: 4, manual: 3, emails: 4, events: 4, reminders_sent: 4 });
    const again = await h.api('POST', `/invoices/${id}/remind`, { key, body: {} });
    assertRefused(t, again, untilFirstIsADay(), 'still refused after the automated one');

    // Once the first is a day old, one more passes; the next waits for the second.
    clock.advance(untilFirstIsADay() * 1000);
    const fifth = await h.api('POST', `/invoices/${id}/remind`, { key, body: {} });
    t.equal(fifth.status, 200, 'one passes once the first manual reminder is 24 hours old');
    t.equal(fifth.body.reminder_number, 5, 'numbered after the automated one: the refused ones took no number');
    const secondAt = Date.parse(sent[1]!.body.sent_at);
    const next = await h.api('POST', `/invoices/${id}/remind`, { key, body: {} });
    assertRefused(t, next, Math.ceil((secondAt + DAY_S * 1000 - clock.now().getTime()) / 1000), 'the next waits for the second');
    t.same(await counts(h, id), { reminders: 5, manual: 4, emails: 5, events: 5, reminders_sent: 5 });
  });

  t.test('automated reminders already sent do not use up the manual ones', async (t) => {
    const id = await sentInvoice(h, key);
    const merchant_id = (await h.sql<{ merchant_id: string }[]>`SELECT merchant_id FROM invoices WHERE id = ${id}`)[0]!.merchant_id;
    for (const [n, off] of [[1, -3], [2, 0], [3, 7]] as const) {
      await h.sql`INSERT INTO reminders (id, merchant_id, invoice_id, reminder_number, kind, schedule_offset, sent_at)
                  VALUES (gen_random_uuid(), ${merchant_id}, ${id}, ${n}, 'automated', ${off}, ${clock.now()})`;
    }
    await h.sql`UPDATE invoices SET reminders_sent = 3 WHERE id = ${id}`;
    for (let i = 1; i <= 3; i++) t.equal((await h.api('POST', `/invoices/${id}/remind`, { key, body: {} })).status, 200, `manual ${i}`);
    t.equal((await h.api('POST', `/invoices/${id}/remind`, { key, body: {} })).status, 429, 'the 4th manual');
  });

  t.test('the cap holds under concurrency: of 6 at once, 3 pass', async (t) => {
    const id = await sentInvoice(h, key);
    const answers = await Promise.all(Array.from({ length: 6 }, () => h.api('POST', `/invoices/${id}/remind`, { key, body: {} })));
    t.same(answers.map((a) => a.status).sort(), [200, 200, 200, 429, 429, 429], answers.map((a) => a.raw).join('\n'));
    t.same(await counts(h, id), { reminders: 3, manual: 3, emails: 3, events: 3, reminders_sent: 3 });
  });

  t.test('an invoice that cannot be reminded says why, not 429', async (t) => {
    const id = await sentInvoice(h, key);
    for (let i = 0; i < 3; i++) await h.api('POST', `/invoices/${id}/remind`, { key, body: {} });
    t.equal((await h.api('POST', `/invoices/${id}/mark-paid`, { key, body: {} })).status, 200);
    const res = await h.api('POST', `/invoices/${id}/remind`, { key, body: {} });
    t.equal(res.status, 409);
    t.equal(res.body.code, 'invoice_already_paid');
    const missing = await h.api('POST', `/invoices/00000000-0000-4000-8000-000000000000/remind`, { key, body: {} });
    t.equal(missing.status, 404);
  });
});
