// docs/decisions.md §4 and §5 on the merchant's calendar: the overdue sweep and the automated reminders
// (−3, 0 and +7 days from the due date at 09:00 merchant time), driven by the movable clock, with
// the real worker delivering the e-mails to a real SMTP server; and the e-mail job itself: a
// message that lost its reason is skipped, and overlapping runs of one job send it once.
import t from 'tap';
import { testApp, type TestApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from './helpers/smtp.js';
import { clock } from '../src/clock.js';
import { queues } from '../src/queue/boss.js';
import { createMailer } from '../src/email/transport.js';
import { EmailInFlightError } from '../src/email/queries.js';
import { sweepOverdue } from '../jobs/overdue-sweep.js';
import { scheduleReminders } from '../jobs/reminders-schedule.js';
import { deliverEmail } from '../jobs/email-send.js';
import type { WorkerDeps } from '../jobs/worker.js';
import { until } from './helpers/until.js';

/** Business time jumps to `iso` and runs on from there. */
function setNow(iso: string): void {
  clock.reset();
  clock.advance(Date.parse(iso) - Date.now());
}

function mailsFor(smtp: SmtpSink, invoiceId: string, kind: string): ReceivedMail[] {
  return smtp.messages.filter((m) => m.headers.get('x-invoice-id') === invoiceId && m.headers.get('x-email-kind') === kind);
}

async function create(h: TestApp, key: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await h.api('POST', '/invoices', { key, body: invoiceBody(extra) });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
  return res.body.invoice_id;
}

async function post(h: TestApp, key: string, path: string): Promise<void> {
  const res = await h.api('POST', path, { key, body: {} });
  if (res.status !== 200) throw new Error(`${path} failed: ${res.status} ${res.raw}`);
}

async function statusOf(h: TestApp, id: string): Promise<string> {
  const [row] = await h.sql<{ status: string }[]>`SELECT status FROM invoices WHERE id = ${id}`;
  return row!.status;
}

t.test('overdue sweep and automated reminders on the merchant calendar (America/Santiago)', async (t) => {
  t.teardown(() => clock.reset());
  const smtp = await startSmtpSink(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const worker = await h.startWorker();
  // pg-boss's cron follows the real clock, which the test does not move: the test runs the two
  // jobs itself at the business times it sets, and nothing else runs them meanwhile.
  await worker.deps.boss.unschedule(queues.overdueSweep.name);
  await worker.deps.boss.unschedule(queues.remindersSchedule.name);
  const { key } = await h.key(['*']);
  const reminders = () => scheduleReminders(worker.deps);
  const sweep = () => sweepOverdue(worker.deps);

  // Chile keeps UTC−4 in July, so 09:00 in Santiago is 13:00Z and midnight is 04:00Z.
  setNow('2030-07-01T15:00:00Z');
  const due = { due_date: '2030-07-15' };
  const sent = await create(h, key, { ...due, send_immediately: true });
  const viewed = await create(h, key, { ...due, send_immediately: true });
  const paid = await create(h, key, { ...due, send_immediately: true });
  const cancelled = await create(h, key, { ...due, send_immediately: true });
  const checkout = await create(h, key, { ...due, send_immediately: true });
  const draft = await create(h, key, due);
  const { public_token: token } = (await h.sql<{ public_token: string }[]>`SELECT public_token FROM invoices WHERE id = ${viewed}`)[0]!;
  t.equal((await h.app.inject({ url: `/i/${token}` })).statusCode, 200);
  // Delivered before the cancel: the e-mail of an invoice cancelled first would be skipped.
  await until('the five invoice e-mails', () => smtp.messages.length >= 5);
  t.same(
    [sent, viewed, paid, cancelled, checkout, draft].map((id) => mailsFor(smtp, id, 'invoice').length),
    [1, 1, 1, 1, 1, 0],
    'the invoice e-mails went out before the schedule starts',
  );
  await post(h, key, `/invoices/${cancelled}/cancel`);
  // Checkout creates its invoices with this source (docs/decisions.md §11); the planner reads only it.
  await h.sql`UPDATE invoices SET source = 'checkout' WHERE id = ${checkout}`;
  t.same([await statusOf(h, sent), await statusOf(h, viewed)], ['sent', 'viewed']);

  t.test('no reminder the day before the first point, nor on its day before 09:00', async (t) => {
    setNow('2030-07-11T13:30:00Z');
    t.equal(await reminders(), 0, '2030-07-11 09:30: due date − 4');
    setNow('2030-07-12T12:59:00Z');
    t.equal(await reminders(), 0, '2030-07-12 08:59: due date − 3, before 09:00');
  });

  t.test('due date − 3 at 09:00: one reminder per open invoice, through SMTP, once', async (t) => {
    setNow('2030-07-12T13:00:30Z');
    t.equal(await reminders(), 3, 'sent, viewed and the one to be paid');
    t.equal(await reminders(), 0, 'the same minute again: nothing');
    const mails = await until('three reminder e-mails', () => {
      const got = [sent, viewed, paid].map((id) => mailsFor(smtp, id, 'reminder'));
      return got.every((m) => m.length === 1) && got;
    });
    t.match(mails[0]![0]!.subject, /^Recordatorio de pago: factura INV-\d{6} de /);
    t.equal(mails[0]![0]!.attachments.length, 1, 'the PDF is attached');
    const rows = await h.sql<{ invoice_id: string; kind: string; schedule_offset: number; reminder_number: number; sent_at: Date }[]>`
      SELECT invoice_id, kind, schedule_offset, reminder_number, sent_at FROM reminders WHERE invoice_id IN ${h.sql([sent, viewed, paid])}`;
    t.equal(rows.length, 3);
    for (const r of rows) {
      t.match(r, { kind: 'automated', schedule_offset: -3, reminder_number: 1 });
      t.ok(r.sent_at >= new Date('2030-07-12T13:00:30Z') && r.sent_at < new Date('2030-07-12T13:02:00Z'), 'sent at 09:00 Santiago time');
    }
    setNow('2030-07-12T22:00:00Z');
    t.equal(await reminders(), 0, 'later that day: nothing');
    setNow('2030-07-13T13:30:00Z');
    t.equal(await reminders(), 0, 'the next day: nothing');
  });

  t.test('due date at 09:00: the second reminder, none after a payment', async (t) => {
    await post(h, key, `/invoices/${paid}/mark-paid`);
    t.equal(await statusOf(h, paid), 'paid');
    setNow('2030-07-15T12:59:00Z');
    t.equal(await reminders(), 0, '08:59: not yet');
    setNow('2030-07-15T13:00:30Z');
    t.equal(await reminders(), 2, 'sent and viewed');
    await until('the second reminders', () => mailsFor(smtp, sent, 'reminder').length === 2 && mailsFor(smtp, viewed, 'reminder').length === 2);
  });

  t.test('overdue from the first minute after the due date in Santiago, not on UTC’s date', async (t) => {
    setNow('2030-07-16T03:59:00Z');
    t.equal(await sweep(), 0, '23:59 of the due date in Santiago (already the next day in UTC)');
    t.same([await statusOf(h, sent), await statusOf(h, viewed)], ['sent', 'viewed'], 'not overdue yet');
    setNow('2030-07-16T04:01:00Z');
    t.equal(await sweep(), 3, '00:01 the day after: sent, viewed and the checkout invoice');
    t.equal(await sweep(), 0, 'a second sweep moves nothing');
    for (const id of [sent, viewed, checkout]) t.equal(await statusOf(h, id), 'overdue');
    t.same(
      [await statusOf(h, paid), await statusOf(h, cancelled), await statusOf(h, draft)],
      ['paid', 'cancelled', 'draft'],
      'paid, cancelled and draft invoices are left alone',
    );
    const events = await h.sql<{ id: string; status: string }[]>`
      SELECT payload->'data'->'object'->>'id' AS id, payload->'data'->'object'->>'status' AS status
        FROM events WHERE type = 'invoice.overdue' ORDER BY 1`;
    t.same(events, [sent, viewed, checkout].sort().map((id) => ({ id, status: 'overdue' })), 'one invoice.overdue each');
  });

  t.test('due date + 7 at 09:00: the third reminder, to overdue invoices', async (t) => {
    setNow('2030-07-22T12:59:00Z');
    t.equal(await reminders(), 0, '08:59: not yet');
    setNow('2030-07-22T13:00:30Z');
    t.equal(await reminders(), 2, 'sent and viewed, both overdue now');
    setNow('2030-07-23T13:30:00Z');
    t.equal(await reminders(), 0, 'the schedule has no later point');
    await until('the third reminders', () => mailsFor(smtp, sent, 'reminder').length === 3 && mailsFor(smtp, viewed, 'reminder').length === 3);
  });

  t.test('each invoice got its points once, and only open api invoices got any', async (t) => {
    const rows = await h.sql<{ invoice_id: string; offsets: number[]; numbers: number[] }[]>`
      SELECT invoice_id, array_agg(schedule_offset ORDER BY sent_at) AS offsets, array_agg(reminder_number ORDER BY sent_at) AS numbers
        FROM reminders GROUP BY invoice_id`;
    const byInvoice = new Map(rows.map((r) => [r.invoice_id, { offsets: r.offsets, numbers: r.numbers }]));
    for (const id of [sent, viewed]) t.same(byInvoice.get(id), { offsets: [-3, 0, 7], numbers: [1, 2, 3] });
    t.same(byInvoice.get(paid), { offsets: [-3], numbers: [1] }, 'none after the payment');
    t.equal(rows.length, 3, 'none for the cancelled, checkout or draft invoice');
    const status = await h.api('GET', `/invoices/${sent}/status`, { key });
    t.equal(status.body.reminders_sent, 3);
    // Once every e-mail row is sent, a stray extra message would have arrived too.
    await until('every e-mail to be sent', async () => (await h.sql`SELECT 1 FROM emails WHERE status <> 'sent'`).length === 0);
    t.same(
      [sent, viewed, paid, cancelled, checkout, draft].map((id) => mailsFor(smtp, id, 'reminder').length),
      [3, 3, 1, 0, 0, 0],
      'reminder e-mails per invoice',
    );
  });
});

/** The e-mail job's own dependencies, with no worker polling: the test runs the job itself. */
function jobDeps(t: { teardown(fn: () => unknown): void }, h: TestApp): WorkerDeps {
  const mailer = createMailer(h.ctx.config);
  t.teardown(() => mailer.close());
  return { config: h.ctx.config, sql: h.sql, boss: h.ctx.boss, mailer, secrets: h.ctx.secrets };
}

async function emailOf(h: TestApp, invoiceId: string, kind: string) {
  const [row] = await h.sql<{ id: string; status: string; attempts: number; last_error: string | null; sent_at: Date | null }[]>`
    SELECT id, status, attempts, last_error, sent_at FROM emails WHERE invoice_id = ${invoiceId} AND kind = ${kind}`;
  if (!row) throw new Error(`no ${kind} e-mail for ${invoiceId}`);
  return row;
}

const withId = (smtp: SmtpSink, emailId: string) => smtp.messages.filter((m) => m.messageId === `<${emailId}@invoicing>`);

t.test('an e-mail that lost its reason before its job ran is skipped, not sent', async (t) => {
  const smtp = await startSmtpSink(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const deps = jobDeps(t, h);
  const { key } = await h.key(['*']);

  const paid = await create(h, key, { send_immediately: true });
  await post(h, key, `/invoices/${paid}/remind`);
  await post(h, key, `/invoices/${paid}/mark-paid`);
  const reminder = await emailOf(h, paid, 'reminder');
  await deliverEmail(deps, { email_id: reminder.id }, false);
  t.match(await emailOf(h, paid, 'reminder'), { status: 'skipped', attempts: 0, sent_at: null, last_error: /paid/ }, 'a reminder of a paid invoice');
  const receipt = await emailOf(h, paid, 'receipt');
  await deliverEmail(deps, { email_id: receipt.id }, false);
  t.equal((await emailOf(h, paid, 'receipt')).status, 'sent', 'the receipt of that payment still goes out');
  t.equal(withId(smtp, receipt.id).length, 1);

  const cancelled = await create(h, key, { send_immediately: true });
  await post(h, key, `/invoices/${cancelled}/remind`);
  await post(h, key, `/invoices/${cancelled}/cancel`);
  for (const kind of ['invoice', 'reminder']) {
    const email = await emailOf(h, cancelled, kind);
    await deliverEmail(deps, { email_id: email.id }, false);
    t.match(await emailOf(h, cancelled, kind), { status: 'skipped', attempts: 0, last_error: /cancelled/ }, `the ${kind} e-mail of a cancelled invoice`);
    await deliverEmail(deps, { email_id: email.id }, true);
    t.equal((await emailOf(h, cancelled, kind)).status, 'skipped', 'skipped is final: the job again changes nothing');
  }

  t.equal(withId(smtp, reminder.id).length, 0);
  t.same(smtp.messages.map((m) => m.headers.get('x-email-kind')), ['receipt'], 'only the receipt reached the SMTP server');
});

t.test('overlapping runs of one e-mail job send one message', async (t) => {
  // Each message is answered 1.5 s after its data: a delivery long enough to overlap.
  const smtp = await startSmtpSink(t, { delayMs: 1_500 });
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const deps = jobDeps(t, h);
  const { key } = await h.key(['*']);

  t.test('a second run while the first is mid-delivery (a lease that ran out) throws to retry later', async (t) => {
    const id = await create(h, key, { send_immediately: true });
    const { id: emailId } = await emailOf(h, id, 'invoice');
    const first = deliverEmail(deps, { email_id: emailId }, false);
    await until('the first delivery to reach the server', () => smtp.receiving >= 1);
    await t.rejects(deliverEmail(deps, { email_id: emailId }, false), EmailInFlightError, 'the second run refuses');
    t.equal(withId(smtp, emailId).length, 0, 'the second run ended while the first was still in delivery');
    t.match(await emailOf(h, id, 'invoice'), { status: 'queued', attempts: 1, last_error: null }, 'the refused run counted no attempt and recorded no failure');
    await first;
    t.equal(withId(smtp, emailId).length, 1);
    t.match(await emailOf(h, id, 'invoice'), { status: 'sent', attempts: 1, last_error: null });
    await deliverEmail(deps, { email_id: emailId }, false);
    t.equal(withId(smtp, emailId).length, 1, 'the retry after it sends nothing');
    t.equal((await emailOf(h, id, 'invoice')).attempts, 1);
  });

  t.test('two runs started together', async (t) => {
    const id = await create(h, key, { send_immediately: true });
    const { id: emailId } = await emailOf(h, id, 'invoice');
    const results = await Promise.allSettled([1, 2].map(() => deliverEmail(deps, { email_id: emailId }, false)));
    t.ok(results.some((r) => r.status === 'fulfilled'), 'one run delivered');
    for (const r of results) if (r.status === 'rejected') t.type(r.reason, EmailInFlightError, 'the other was told to retry');
    t.equal(withId(smtp, emailId).length, 1, 'one message');
    t.equal((await emailOf(h, id, 'invoice')).status, 'sent');
  });
});
