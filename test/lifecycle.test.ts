// The invoice lifecycle (api-spec "States and transitions", docs/decisions.md §4, §5, §7, §10): send,
// mark-paid, remind and cancel through the API, each rejection of the §4 table, the e-mails that
// the real worker delivers to a real SMTP server, and the jobs enqueued in the request transaction.
import t from 'tap';
import { isEnvelope, testApp, type ApiResponse, type TestApp } from './helpers/app.js';
import { TS, UUID, invoiceBody } from './helpers/fixtures.js';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from './helpers/smtp.js';
import type { Worker } from '../jobs/worker.js';
import { sweepOverdue } from '../jobs/overdue-sweep.js';
import { sendInvoice } from '../src/invoices/transitions.js';
import { invoiceDeps } from '../src/invoices/routes.js';
import { until } from './helpers/until.js';

type State = 'draft' | 'sent' | 'viewed' | 'overdue' | 'paid' | 'cancelled';
type Op = 'send' | 'mark-paid' | 'remind' | 'cancel';

interface Ctx {
  h: TestApp;
  smtp: SmtpSink;
  worker: Worker;
}

function mailsFor(smtp: SmtpSink, invoiceId: string, kind?: string): ReceivedMail[] {
  return smtp.messages.filter((m) => m.headers.get('x-invoice-id') === invoiceId && (!kind || m.headers.get('x-email-kind') === kind));
}

async function eventsFor(h: TestApp, invoiceId: string, type?: string): Promise<{ type: string; payload: any }[]> {
  return h.sql<{ type: string; payload: any }[]>`
    SELECT type, payload FROM events
     WHERE payload->'data'->'object'->>'id' = ${invoiceId} ${type ? h.sql`AND type = ${type}` : h.sql``}
     ORDER BY created_at, id`;
}

async function create(h: TestApp, key: string, extra: Record<string, unknown> = {}): Promise<ApiResponse> {
  const res = await h.api('POST', '/invoices', { key, body: invoiceBody(extra) });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
  return res;
}

/** A fresh invoice in the given state, reached through the API (and the sweep for overdue). */
async function inState(c: Ctx, key: string, state: State): Promise<string> {
  const { h } = c;
  if (state === 'draft') return (await create(h, key)).body.invoice_id;
  if (state === 'overdue') {
    const res = await create(h, key, { issue_date: '2020-01-01', due_date: '2020-01-02', send_immediately: true });
    await sweepOverdue(c.worker.deps);
    const got = await h.api('GET', `/invoices/${res.body.invoice_id}`, { key });
    if (got.body.status !== 'overdue') throw new Error(`expected overdue, got ${got.body.status}`);
    return res.body.invoice_id;
  }
  const res = await create(h, key, { send_immediately: true });
  const id = res.body.invoice_id as string;
  if (state === 'viewed') {
    const token = new URL(res.body.public_url).pathname.split('/').pop()!;
    const page = await h.app.inject({ url: `/i/${token}` });
    if (page.statusCode !== 200) throw new Error(`hosted page answered ${page.statusCode}`);
  }
  if (state === 'paid') {
    const r = await h.api('POST', `/invoices/${id}/mark-paid`, { key, body: {} });
    if (r.status !== 200) throw new Error(`mark-paid failed: ${r.raw}`);
  }
  if (state === 'cancelled') {
    const r = await h.api('POST', `/invoices/${id}/cancel`, { key, body: {} });
    if (r.status !== 200) throw new Error(`cancel failed: ${r.raw}`);
  }
  const got = await h.api('GET', `/invoices/${id}`, { key });
  if (got.body.status !== state) throw new Error(`expected ${state}, got ${got.body.status}`);
  return id;
}

function run(h: TestApp, key: string, op: Op, id: string): Promise<ApiResponse> {
  return h.api('POST', `/invoices/${id}/${op}`, { key, body: {} });
}

t.test('invoice lifecycle', async (t) => {
  const smtp = await startSmtpSink(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const worker = await h.startWorker();
  const c: Ctx = { h, smtp, worker };

  t.test('docs/decisions.md §4 rejection table: every operation in every state', async (t) => {
    const { key } = await h.key(['*']);
    const ok = (status: string) => ({ ok: status });
    const table: Record<Op, Record<State, { ok: string } | string>> = {
      send: {
        draft: ok('sent'),
        sent: 'invoice_invalid_state',
        viewed: 'invoice_invalid_state',
        overdue: 'invoice_invalid_state',
        paid: 'invoice_already_paid',
        cancelled: 'invoice_invalid_state',
      },
      'mark-paid': {
        draft: 'invoice_not_sent',
        sent: ok('paid'),
        viewed: ok('paid'),
        overdue: ok('paid'),
        paid: 'invoice_already_paid',
        cancelled: 'invoice_invalid_state',
      },
      remind: {
        draft: 'invoice_not_sent',
        sent: ok('sent'),
        viewed: ok('viewed'),
        overdue: ok('overdue'),
        paid: 'invoice_already_paid',
        cancelled: 'invoice_invalid_state',
      },
      cancel: {
        draft: ok('deleted'),
        sent: ok('cancelled'),
        viewed: ok('cancelled'),
        overdue: ok('cancelled'),
        paid: 'invoice_already_paid',
        cancelled: 'invoice_invalid_state',
      },
    };
    for (const [op, row] of Object.entries(table) as [Op, Record<State, { ok: string } | string>][]) {
      for (const [state, expected] of Object.entries(row) as [State, { ok: string } | string][]) {
        const id = await inState(c, key, state);
        const before = await h.api('GET', `/invoices/${id}`, { key });
        const res = await run(h, key, op, id);
        const after = await h.api('GET', `/invoices/${id}`, { key });
        if (typeof expected === 'string') {
          t.equal(res.status, 409, `${op} on ${state}: 409`);
          t.equal(res.body.code, expected, `${op} on ${state}: ${expected}`);
          t.equal(res.body.retry, 'never');
          t.ok(isEnvelope(res.body), 'the error envelope');
          t.equal(after.body.status, state, `${op} on ${state}: the state is unchanged`);
          t.equal(after.body.updated_at, before.body.updated_at, `${op} on ${state}: nothing was written`);
        } else {
          t.equal(res.status, 200, `${op} on ${state}: 200`);
          if (op === 'remind') {
            t.equal(res.body.reminder_number, 1, `${op} on ${state}: a reminder`);
            t.equal(after.body.status, expected.ok, `${op} on ${state}: stays ${expected.ok}`);
          } else {
            t.equal(res.body.status, expected.ok, `${op} on ${state}: ${expected.ok}`);
            if (expected.ok === 'deleted') t.equal(after.status, 404, 'deleted: gone');
            else t.equal(after.body.status, expected.ok, `${op} on ${state}: GET shows ${expected.ok}`);
          }
        }
      }
    }
  });

  t.test('unknown and foreign invoices are 404 invoice_not_found for every operation', async (t) => {
    const { key } = await h.key(['*']);
    const other = await h.key(['*']);
    const foreign = (await create(h, other.key, { send_immediately: true })).body.invoice_id as string;
    for (const op of ['send', 'mark-paid', 'remind', 'cancel'] as Op[]) {
      for (const id of ['01890a5d-ac96-774b-bcce-b302099a8057', foreign]) {
        const res = await run(h, key, op, id);
        t.equal(res.status, 404, `${op}: 404`);
        t.equal(res.body.code, 'invoice_not_found');
      }
    }
    t.equal((await h.api('GET', `/invoices/${foreign}`, { key: other.key })).body.status, 'sent', 'the foreign invoice is untouched');
  });

  t.test('send', async (t) => {
    t.test('200 with the number, public_url and sent_at; the Spanish e-mail by default', async (t) => {
      const { key } = await h.key(['*']);
      const draft = await create(h, key);
      t.equal(draft.body.status, 'draft');
      t.equal(draft.body.invoice_number, null, 'a draft has no number');
      const id = draft.body.invoice_id as string;
      const res = await h.api('POST', `/invoices/${id}/send`, { key });
      t.equal(res.status, 200);
      t.same(Object.keys(res.body).sort(), ['invoice_id', 'invoice_number', 'public_url', 'sent_at', 'status']);
      t.equal(res.body.invoice_id, id);
      t.equal(res.body.invoice_number, 'INV-000001');
      t.equal(res.body.status, 'sent');
      t.equal(res.body.public_url, draft.body.public_url);
      t.match(res.body.public_url, /^http:\/\/invoicing\.test\/i\/[A-Za-z0-9_-]+$/);
      t.match(res.body.sent_at, TS);
      t.ok(Math.abs(Date.parse(res.body.sent_at) - Date.now()) < 10_000, 'sent_at is now');
      const got = await h.api('GET', `/invoices/${id}`, { key });
      t.equal(got.body.invoice_number, 'INV-000001');
      t.equal(got.body.status, 'sent');
      const [mail] = await until('the invoice e-mail', () => mailsFor(smtp, id, 'invoice').length === 1 && mailsFor(smtp, id, 'invoice'));
      t.match(mail!.subject, /^Factura INV-000001 de /);
      t.equal(mail!.attachments.length, 1, 'the PDF is attached');
      const events = await eventsFor(h, id, 'invoice.sent');
      t.equal(events.length, 1, 'one invoice.sent event');
      t.equal(events[0]!.payload.data.object.invoice_number, 'INV-000001');
    });

    t.test('?locale=en sends the English e-mail; the invoice locale is used without it', async (t) => {
      const { key } = await h.key(['*']);
      const a = (await create(h, key)).body.invoice_id as string;
      const res = await h.api('POST', `/invoices/${a}/send?locale=en`, { key });
      t.equal(res.status, 200);
      const [en] = await until('the English e-mail', () => mailsFor(smtp, a).length === 1 && mailsFor(smtp, a));
      t.match(en!.subject, /^Invoice INV-000001 from /);
      t.match(en!.text, /has sent you invoice INV-000001/);

      const b = (await create(h, key, { locale: 'en' })).body.invoice_id as string;
      t.equal((await h.api('POST', `/invoices/${b}/send`, { key })).status, 200);
      const [en2] = await until('the e-mail of an English invoice', () => mailsFor(smtp, b).length === 1 && mailsFor(smtp, b));
      t.match(en2!.subject, /^Invoice INV-000002 from /);

      const c2 = (await create(h, key, { locale: 'en' })).body.invoice_id as string;
      t.equal((await h.api('POST', `/invoices/${c2}/send?locale=es`, { key })).status, 200);
      const [es] = await until('the Spanish e-mail', () => mailsFor(smtp, c2).length === 1 && mailsFor(smtp, c2));
      t.match(es!.subject, /^Factura INV-000003 de /, '?locale overrides the invoice locale');
    });

    t.test('an unknown locale is 422 and changes nothing', async (t) => {
      const { key } = await h.key(['*']);
      const id = (await create(h, key)).body.invoice_id as string;
      const res = await h.api('POST', `/invoices/${id}/send?locale=fr`, { key });
      t.equal(res.status, 422);
      t.equal(res.body.code, 'validation_error');
      t.match(res.body.details.errors, [{ path: 'locale' }]);
      t.equal((await h.api('GET', `/invoices/${id}`, { key })).body.status, 'draft');
      const ok = await h.api('POST', `/invoices/${id}/send`, { key });
      t.equal(ok.body.invoice_number, 'INV-000001', 'no number was consumed');
    });

    t.test('10 concurrent sends of one draft: one 200, nine 409, one number consumed', async (t) => {
      const { key, merchantId } = await h.key(['*']);
      const id = (await create(h, key)).body.invoice_id as string;
      const results = await Promise.all(Array.from({ length: 10 }, () => h.api('POST', `/invoices/${id}/send`, { key })));
      const oks = results.filter((r) => r.status === 200);
      t.equal(oks.length, 1, 'exactly one 200');
      t.equal(oks[0]!.body.invoice_number, 'INV-000001');
      const rejected = results.filter((r) => r.status !== 200);
      t.equal(rejected.length, 9);
      t.ok(rejected.every((r) => r.status === 409 && r.body.code === 'invoice_invalid_state'), 'the others: 409 invoice_invalid_state');
      const next = await create(h, key, { send_immediately: true });
      t.equal(next.body.invoice_number, 'INV-000002', 'the next invoice gets the next number');
      const [counts] = await h.sql<{ emails: number; events: number }[]>`
        SELECT (SELECT count(*)::int FROM emails WHERE invoice_id = ${id}) AS emails,
               (SELECT count(*)::int FROM events WHERE merchant_id = ${merchantId} AND type = 'invoice.sent'
                   AND payload->'data'->'object'->>'id' = ${id}) AS events`;
      t.same(counts, { emails: 1, events: 1 }, 'one e-mail, one invoice.sent');
    });
  });

  t.test('mark-paid', async (t) => {
    t.test('200 at server time; payment, amount_paid, payment_reference, event and receipt', async (t) => {
      const { key, merchantId } = await h.key(['*']);
      const id = (await create(h, key, { send_immediately: true })).body.invoice_id as string;
      const before = Date.now();
      const res = await h.api('POST', `/invoices/${id}/mark-paid`, {
        key,
        body: { payment_method: 'transfer', paid_at: '2001-01-01T00:00:00Z', notes: 'Transferencia BCI', payment_amount: 11900 },
      });
      t.equal(res.status, 200, res.raw);
      t.same(Object.keys(res.body).sort(), ['invoice_id', 'invoice_number', 'paid_at', 'payment_method', 'status']);
      t.match(res.body, { invoice_id: id, status: 'paid', invoice_number: 'INV-000001', payment_method: 'transfer' });
      t.match(res.body.paid_at, TS);
      const paidAt = Date.parse(res.body.paid_at);
      t.ok(paidAt >= before - 1000 && paidAt <= Date.now() + 1000, 'paid_at is server time, not the body paid_at');

      const payments = await h.sql`SELECT * FROM payments WHERE invoice_id = ${id}`;
      t.equal(payments.length, 1, 'one payment');
      t.match(payments[0], { merchant_id: merchantId, provider: 'manual', status: 'succeeded', currency: 'CLP', method: 'transfer', notes: 'Transferencia BCI' });
      t.equal(Number(payments[0]!.amount), 11900);
      t.equal(new Date(payments[0]!.paid_at).toISOString(), res.body.paid_at);

      const got = await h.api('GET', `/invoices/${id}`, { key });
      t.equal(got.body.status, 'paid');
      t.equal(got.body.amount_paid, '11900.00');
      t.equal(got.body.amount_paid, got.body.total, 'amount_paid = total');
      t.same(got.body.payment_reference, { provider: 'manual', transaction_id: payments[0]!.transaction_id, paid_at: res.body.paid_at });
      const status = await h.api('GET', `/invoices/${id}/status`, { key });
      t.equal(status.body.paid_at, res.body.paid_at);

      const events = await eventsFor(h, id, 'invoice.paid');
      t.equal(events.length, 1, 'one invoice.paid event');
      t.equal(events[0]!.payload.data.object.status, 'paid');
      t.equal(events[0]!.payload.data.object.amount_paid, '11900.00');

      const [receipt] = await until('the receipt', () => mailsFor(smtp, id, 'receipt').length === 1 && mailsFor(smtp, id, 'receipt'));
      t.match(receipt!.subject, /^Recibo de pago: factura INV-000001 de /);
      t.match(receipt!.text, /11\.900/);
    });

    t.test('payment_amount must equal the total at the currency precision', async (t) => {
      const { key } = await h.key(['*']);
      const id = (await create(h, key, { send_immediately: true })).body.invoice_id as string;
      for (const [amount, message] of [
        [11901, /total/],
        [11899, /total/],
        [11900.5, /decimals/],
        [11900.0001, /decimals/],
      ] as const) {
        const res = await h.api('POST', `/invoices/${id}/mark-paid`, { key, body: { payment_amount: amount } });
        t.equal(res.status, 422, `${amount}: 422`);
        t.equal(res.body.code, 'validation_error');
        t.equal(res.body.details.errors.length, 1);
        t.equal(res.body.details.errors[0].path, 'payment_amount', `${amount}: names payment_amount`);
        t.match(res.body.details.errors[0].message, message);
      }
      for (const amount of ['11900', 0, -5]) {
        const res = await h.api('POST', `/invoices/${id}/mark-paid`, { key, body: { payment_amount: amount } });
        t.equal(res.status, 422, `${JSON.stringify(amount)}: 422`);
        t.equal(res.body.details.errors[0].path, 'payment_amount');
      }
      t.equal((await h.sql`SELECT 1 FROM payments WHERE invoice_id = ${id}`).length, 0, 'no payment recorded');
      t.equal((await h.api('GET', `/invoices/${id}`, { key })).body.status, 'sent', 'still sent');
      const ok = await h.api('POST', `/invoices/${id}/mark-paid`, { key, body: { payment_amount: 11900.0 } });
      t.equal(ok.status, 200, 'the exact total passes');

      // More decimals than any currency has is the body's fault, whatever the invoice: 422 before 404 or 409.
      const draft = (await create(h, key)).body.invoice_id as string;
      for (const [what, target] of [['an unknown invoice', '01a22315-71af-7662-9d8d-ac281d6a9c7e'], ['a draft', draft]] as const) {
        const res = await h.api('POST', `/invoices/${target}/mark-paid`, { key, body: { payment_amount: 1.23456 } });
        t.equal(res.status, 422, `5 decimals on ${what}: 422`);
        t.same(res.body.details.errors, [{ path: 'payment_amount', message: 'at most 4 decimals' }]);
      }
      // An invoice of free lines totals 0, and 0 is its amount.
      const free = await create(h, key, { send_immediately: true, items: [{ description: 'Muestra gratis', quantity: 1, unit_price: 0 }] });
      t.equal(free.body.total, '0.00');
      const zero = await h.api('POST', `/invoices/${free.body.invoice_id}/mark-paid`, { key, body: { payment_amount: 0 } });
      t.equal(zero.status, 200, 'a total of 0 paid with 0');
    });

    t.test('10 concurrent mark-paid: one 200, one payment', async (t) => {
      const { key } = await h.key(['*']);
      const id = (await create(h, key, { send_immediately: true })).body.invoice_id as string;
      const results = await Promise.all(Array.from({ length: 10 }, () => h.api('POST', `/invoices/${id}/mark-paid`, { key, body: {} })));
      t.equal(results.filter((r) => r.status === 200).length, 1, 'one 200');
      t.ok(
        results.filter((r) => r.status !== 200).every((r) => r.status === 409 && r.body.code === 'invoice_already_paid'),
        'the others: 409 invoice_already_paid',
      );
      t.equal((await h.sql`SELECT 1 FROM payments WHERE invoice_id = ${id}`).length, 1, 'one payment row');
      t.equal((await h.sql`SELECT 1 FROM emails WHERE invoice_id = ${id} AND kind = 'receipt'`).length, 1, 'one receipt');
      t.equal((await eventsFor(h, id, 'invoice.paid')).length, 1, 'one invoice.paid');
    });

    t.test('Idempotency-Key: the replay is identical and pays nothing twice', async (t) => {
      const { key } = await h.key(['*']);
      const id = (await create(h, key, { send_immediately: true })).body.invoice_id as string;
      const headers = { 'idempotency-key': `pay-${id}` };
      const body = { payment_method: 'cash', payment_amount: 11900 };
      const first = await h.api('POST', `/invoices/${id}/mark-paid`, { key, body, headers });
      t.equal(first.status, 200);
      t.notOk(first.headers['idempotent-replayed'], 'the first answer is not a replay');
      const again = await h.api('POST', `/invoices/${id}/mark-paid`, { key, body, headers });
      t.equal(again.status, 200);
      t.equal(again.headers['idempotent-replayed'], 'true');
      t.equal(again.raw, first.raw, 'byte-identical body');
      t.equal((await h.sql`SELECT 1 FROM payments WHERE invoice_id = ${id}`).length, 1, 'one payment');
      t.equal((await h.sql`SELECT 1 FROM emails WHERE invoice_id = ${id} AND kind = 'receipt'`).length, 1, 'one receipt');
      const changed = await h.api('POST', `/invoices/${id}/mark-paid`, { key, body: { ...body, payment_method: 'card' }, headers });
      t.equal(changed.status, 422, 'the same key with another body');
      const fresh = await h.api('POST', `/invoices/${id}/mark-paid`, { key, body, headers: { 'idempotency-key': `other-${id}` } });
      t.equal(fresh.status, 409, 'a new key runs again: already paid');
      t.equal(fresh.body.code, 'invoice_already_paid');
    });
  });

  t.test('remind', async (t) => {
    t.test('numbers 1 then 2, counted in reminders_sent, announced with data.reminder', async (t) => {
      const { key } = await h.key(['*']);
      const id = (await create(h, key, { send_immediately: true })).body.invoice_id as string;
      t.equal((await h.api('GET', `/invoices/${id}/status`, { key })).body.reminders_sent, 0);
      const first = await h.api('POST', `/invoices/${id}/remind`, { key, body: {} });
      t.equal(first.status, 200);
      t.same(Object.keys(first.body).sort(), ['invoice_id', 'reminder_id', 'reminder_number', 'sent_at']);
      t.match(first.body, { invoice_id: id, reminder_number: 1 });
      t.match(first.body.reminder_id, UUID);
      t.match(first.body.sent_at, TS);
      const second = await h.api('POST', `/invoices/${id}/remind`, { key });
      t.equal(second.status, 200, 'no body at all is fine');
      t.equal(second.body.reminder_number, 2);
      t.not(second.body.reminder_id, first.body.reminder_id);
      t.equal((await h.api('GET', `/invoices/${id}/status`, { key })).body.reminders_sent, 2);

      const events = await eventsFor(h, id, 'invoice.reminder_sent');
      t.equal(events.length, 2);
      t.same(events[0]!.payload.data.reminder, first.body, 'data.reminder is the Reminder');
      t.same(events[1]!.payload.data.reminder, second.body);
      t.equal(events[0]!.payload.data.object.id, id, 'data.object is the Invoice');

      const mails = await until('two reminder e-mails', () => mailsFor(smtp, id, 'reminder').length === 2 && mailsFor(smtp, id, 'reminder'));
      t.match(mails[0]!.subject, /^Recordatorio de pago: factura INV-000001 de /);
      t.match(mails[0]!.text, /Le recordamos que la factura INV-000001/);
      t.equal(mails[0]!.attachments.length, 1, 'the PDF is attached');
    });

    t.test('custom_message replaces the body of the e-mail', async (t) => {
      const { key } = await h.key(['*']);
      const id = (await create(h, key, { send_immediately: true })).body.invoice_id as string;
      const message = 'Estimado cliente: su pago sigue pendiente.\n\nPor favor contáctenos <hoy>.';
      const res = await h.api('POST', `/invoices/${id}/remind`, { key, body: { custom_message: message } });
      t.equal(res.status, 200);
      const [mail] = await until('the reminder', () => mailsFor(smtp, id, 'reminder').length === 1 && mailsFor(smtp, id, 'reminder'));
      t.match(mail!.text, 'Estimado cliente: su pago sigue pendiente.');
      t.match(mail!.text, 'Por favor contáctenos <hoy>.', 'plain text is not HTML-escaped');
      t.notMatch(mail!.text, /Le recordamos que la factura/, 'not the default body');
      t.match(mail!.html, 'Por favor contáctenos &lt;hoy&gt;.', 'escaped in the HTML part');
      const empty = await h.api('POST', `/invoices/${id}/remind`, { key, body: { custom_message: '   ' } });
      t.equal(empty.status, 422, 'a blank custom_message is refused');
      t.equal(empty.body.details.errors[0].path, 'custom_message');
    });
  });

  t.test('cancel', async (t) => {
    t.test('a draft is deleted: status "deleted", later reads 404', async (t) => {
      const { key } = await h.key(['*']);
      const id = (await create(h, key)).body.invoice_id as string;
      const res = await h.api('POST', `/invoices/${id}/cancel`, { key, body: { reason: 'duplicado' } });
      t.equal(res.status, 200);
      t.match(res.body, { invoice_id: id, status: 'deleted', invoice_number: null });
      t.match(res.body.cancelled_at, TS);
      for (const path of [`/invoices/${id}`, `/invoices/${id}/status`]) {
        const got = await h.api('GET', path, { key });
        t.equal(got.status, 404, `${path}: 404`);
        t.equal(got.body.code, 'invoice_not_found');
      }
      const again = await h.api('POST', `/invoices/${id}/cancel`, { key, body: {} });
      t.equal(again.status, 404, 'cancelling it again: 404');
      t.equal((await eventsFor(h, id, 'invoice.cancelled')).length, 0, 'a deleted draft emits no invoice.cancelled');
    });

    t.test('a sent invoice is cancelled, keeps its number, emits invoice.cancelled', async (t) => {
      const { key } = await h.key(['*']);
      const id = (await create(h, key, { send_immediately: true })).body.invoice_id as string;
      const res = await h.api('POST', `/invoices/${id}/cancel`, { key, body: { reason: 'Pedido anulado' } });
      t.equal(res.status, 200);
      t.same(Object.keys(res.body).sort(), ['cancelled_at', 'credit_note', 'invoice_id', 'invoice_number', 'reason', 'status']);
      t.match(res.body, { invoice_id: id, status: 'cancelled', invoice_number: 'INV-000001', reason: 'Pedido anulado' });
      t.match(res.body.cancelled_at, TS);
      const got = await h.api('GET', `/invoices/${id}`, { key });
      t.equal(got.body.status, 'cancelled');
      t.equal(got.body.invoice_number, 'INV-000001', 'keeps its number');
      const events = await eventsFor(h, id, 'invoice.cancelled');
      t.equal(events.length, 1, 'one invoice.cancelled');
      t.equal(events[0]!.payload.data.object.status, 'cancelled');
      const next = await create(h, key, { send_immediately: true });
      t.equal(next.body.invoice_number, 'INV-000002', 'the number is not reused');
    });

    t.test('a paid invoice: 409 invoice_already_paid', async (t) => {
      const { key } = await h.key(['*']);
      const id = await inState(c, key, 'paid');
      const res = await h.api('POST', `/invoices/${id}/cancel`, { key, body: { reason: 'x' } });
      t.equal(res.status, 409);
      t.equal(res.body.code, 'invoice_already_paid');
      t.equal((await h.api('GET', `/invoices/${id}`, { key })).body.status, 'paid');
    });
  });

  t.test('jobs are enqueued in the request transaction', async (t) => {
    const emailJobs = async (merchantId: string) =>
      (
        await h.sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pgboss.job j
           WHERE j.name = 'email-send' AND j.data->>'email_id' IN (SELECT id::text FROM emails WHERE merchant_id = ${merchantId})`
      )[0]!.n;
    const orphanJobs = async () =>
      (
        await h.sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pgboss.job j
           WHERE j.name = 'email-send' AND NOT EXISTS (SELECT 1 FROM emails e WHERE e.id::text = j.data->>'email_id')`
      )[0]!.n;

    t.test('bulk: only the item that succeeded has its e-mail and its job', async (t) => {
      const { key, merchantId } = await h.key(['*']);
      const res = await h.api('POST', '/invoices/bulk', {
        key,
        body: {
          invoices: [
            invoiceBody({ send_immediately: true }),
            invoiceBody({ send_immediately: true, items: [{ description: 'x', unit_price: 'mil' }] }),
            invoiceBody({ send_immediately: true, issue_date: '2030-01-10', due_date: '2030-01-01' }),
            invoiceBody({ send_immediately: true, currency: 'USD' }),
          ],
        },
      });
      t.equal(res.status, 200);
      t.match(res.body, { total: 4, succeeded: 1, failed: 3 });
      t.same(res.body.results.map((r: any) => r.success), [true, false, false, false]);
      const okId = res.body.results[0].invoice.invoice_id as string;
      t.equal(res.body.results[0].invoice.invoice_number, 'INV-000001');
      const emails = await h.sql`SELECT invoice_id FROM emails WHERE merchant_id = ${merchantId}`;
      t.same(emails.map((e) => e.invoice_id), [okId], 'one e-mail row, for the invoice that was created');
      t.equal(await emailJobs(merchantId), 1, 'one email-send job');
      t.equal(await orphanJobs(), 0, 'no job without its e-mail row');
      const invoices = await h.sql`SELECT id FROM invoices WHERE merchant_id = ${merchantId}`;
      t.equal(invoices.length, 1, 'the failed items left no invoice');
      await until('the e-mail of the bulk invoice', () => mailsFor(smtp, okId).length === 1);
      const next = await create(h, key, { send_immediately: true });
      t.equal(next.body.invoice_number, 'INV-000002', 'the failed items consumed no number');
    });

    t.test('a transaction rolled back after sendInvoice leaves no job, no e-mail, no number', async (t) => {
      const { key, merchantId } = await h.key(['*']);
      const auth = (await h.ctx.keys.lookup(key))!;
      const id = (await create(h, key)).body.invoice_id as string;
      await t.rejects(
        h.sql.begin(async (tx) => {
          const row = await sendInvoice(tx, auth.merchant, id, undefined, invoiceDeps(h.ctx));
          t.equal(row.status, 'sent', 'sent inside the transaction');
          const [inside] = await tx<{ n: number }[]>`
            SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'email-send'
               AND data->>'email_id' IN (SELECT id::text FROM emails WHERE invoice_id = ${id})`;
          t.equal(inside!.n, 1, 'the job exists inside the transaction');
          throw new Error('rollback');
        }),
        /rollback/,
      );
      t.equal((await h.sql`SELECT 1 FROM emails WHERE merchant_id = ${merchantId}`).length, 0, 'no e-mail row');
      t.equal(await emailJobs(merchantId), 0, 'no job');
      t.equal(await orphanJobs(), 0, 'no job without its e-mail row');
      t.equal((await eventsFor(h, id, 'invoice.sent')).length, 0, 'no invoice.sent event');

      // The same within a savepoint (how bulk isolates its items): the outer transaction commits.
      await h.sql.begin(async (tx) => {
        await tx
          .savepoint(async (sp) => {
            await sendInvoice(sp, auth.merchant, id, undefined, invoiceDeps(h.ctx));
            throw new Error('item failed');
          })
          .catch(() => {});
      });
      t.equal((await h.sql`SELECT 1 FROM emails WHERE merchant_id = ${merchantId}`).length, 0, 'no e-mail row after the savepoint');
      t.equal(await orphanJobs(), 0, 'no job after the savepoint');
      t.equal((await h.api('GET', `/invoices/${id}`, { key })).body.status, 'draft');
      await new Promise((r) => setTimeout(r, 1_000));
      t.equal(mailsFor(smtp, id).length, 0, 'nothing was delivered');

      const sent = await h.api('POST', `/invoices/${id}/send`, { key });
      t.equal(sent.body.invoice_number, 'INV-000001', 'the rolled back sends consumed no number');
      await until('the e-mail of the real send', () => mailsFor(smtp, id).length === 1);
    });
  });
});
