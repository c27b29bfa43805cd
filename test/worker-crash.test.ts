// docs/decisions.md §5: a job held by a worker that died comes back within about a minute, and running an
// e-mail job again never sends its message twice. A real worker process is killed (SIGKILL) in the
// middle of an SMTP delivery and started again: exactly one message arrives. This is the one slow
// test of the suite (the e-mail job's lease is 60 s).
import t from 'tap';
import { testApp } from './helpers/app.js';
import { startWorkerProcess } from './helpers/processes.js';
import { startSmtpSink, type ReceivedMail } from './helpers/smtp.js';
import { until } from './helpers/until.js';

t.test('a worker killed mid-delivery: the job comes back and the e-mail arrives once', async (t) => {
  // The sink answers each message 4 s after its data: time enough to kill the worker while it waits.
  const smtp = await startSmtpSink(t, { delayMs: 4_000 });
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const { key } = await h.key(['*']);

  const workerEnv = { DATABASE_URL: h.dbUrl, SMTP_URL: smtp.url };
  const first = await startWorkerProcess(t, workerEnv);
  const res = await h.api('POST', '/invoices', {
    key,
    body: {
      client: { name: 'Ana Rojas', email: 'ana@example.cl' },
      due_date: '2099-12-31',
      items: [{ description: 'Asesoría', unit_price: 10000 }],
      send_immediately: true,
    },
  });
  t.equal(res.status, 201);
  const invoiceId = res.body.invoice_id as string;

  // The worker has handed the message to the server and waits for its reply.
  await until('the delivery to begin', () => smtp.receiving >= 1, 30_000);
  const [during] = await h.sql<{ status: string; attempts: number }[]>`SELECT status, attempts FROM emails WHERE invoice_id = ${invoiceId}`;
  t.match(during, { status: 'queued', attempts: 1 }, 'the attempt is recorded before the message goes out');
  const killedAt = Date.now();
  first.process.kill('SIGKILL');
  await first.exited;
  // The interrupted transfer never got its 250: the server did not take the message.
  await new Promise((r) => setTimeout(r, 5_000));
  t.equal(smtp.messages.length, 0, 'nothing was accepted from the killed worker');

  await startWorkerProcess(t, workerEnv);
  const forInvoice = (): ReceivedMail[] => smtp.messages.filter((m) => m.headers.get('x-invoice-id') === invoiceId);
  await until('the e-mail to arrive after the restart', () => forInvoice().length >= 1, 150_000);
  const backAfter = (Date.now() - killedAt) / 1000;
  t.ok(backAfter < 110, `the job came back about a minute after its lease ran out (${backAfter.toFixed(0)} s after the kill)`);

  // Wait for the row to settle, then a little longer: no second copy follows.
  const row = await until(
    'the e-mail row to be sent',
    async () => (await h.sql<{ status: string; attempts: number; sent_at: Date | null }[]>`
      SELECT status, attempts, sent_at FROM emails WHERE invoice_id = ${invoiceId} AND status = 'sent'`)[0],
    15_000,
  );
  await new Promise((r) => setTimeout(r, 3_000));
  t.equal(forInvoice().length, 1, 'exactly one e-mail for the invoice');
  t.equal(forInvoice()[0]!.headers.get('x-email-kind'), 'invoice');
  t.equal(row.status, 'sent');
  t.ok(row.sent_at);
  const [job] = await h.sql<{ state: string }[]>`
    SELECT state FROM pgboss.job WHERE name = 'email-send' AND data->>'email_id' = (SELECT id::text FROM emails WHERE invoice_id = ${invoiceId})`;
  t.equal(job?.state, 'completed', 'the job is completed');
});
