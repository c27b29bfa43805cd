import t from 'tap';
import { testApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';
import { startSmtpSink } from './helpers/smtp.js';
import { createMailer } from '../src/email/transport.js';
import { deliverEmail } from '../jobs/email-send.js';

t.test('invoice e-mail arrives through SMTP with the PDF attached', async (t) => {
  const smtp = await startSmtpSink(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  await h.startWorker();
  const { key } = await h.key(['*']);
  const res = await h.api('POST', '/invoices', {
    key,
    body: {
      client: { name: 'Juan Pérez', email: 'juan@example.cl', rut: '12.345.678-5' },
      due_date: '2099-12-31',
      items: [{ description: 'Consultoría', quantity: 2, unit_price: 5000 }],
      send_immediately: true,
    },
  });
  t.equal(res.status, 201);
  const [mail] = await smtp.waitFor(1);
  t.equal(mail!.to, 'juan@example.cl');
  t.match(mail!.subject, /^Factura INV-000001 de /);
  t.equal(mail!.headers.get('x-email-kind'), 'invoice');
  t.equal(mail!.headers.get('x-invoice-id'), res.body.invoice_id);
  t.equal(mail!.attachments.length, 1);
  t.equal(mail!.attachments[0]!.contentType, 'application/pdf');
});

t.test('delivery failures: each attempt counted with its error, the last one marks the row failed', async (t) => {
  const smtp = await startSmtpSink(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const mailer = createMailer(h.ctx.config);
  t.teardown(() => mailer.close());
  const deps = { config: h.ctx.config, sql: h.sql, boss: h.ctx.boss, mailer, secrets: h.ctx.secrets };
  const { key } = await h.key(['*']);
  const emailFor = async (invoiceId: string) => {
    const [row] = await h.sql<{ id: string; status: string; attempts: number; last_error: string | null }[]>`
      SELECT id, status, attempts, last_error FROM emails WHERE invoice_id = ${invoiceId}`;
    return row!;
  };
  const sent = async () => (await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) })).body.invoice_id as string;

  smtp.refusing = true;
  const recovers = await sent();
  const { id: recoversEmail } = await emailFor(recovers);
  await t.rejects(deliverEmail(deps, { email_id: recoversEmail }, false), /try again later/);
  t.match(await emailFor(recovers), { status: 'queued', attempts: 1, last_error: /try again later/ }, 'a failed attempt leaves the row queued for the retry');
  smtp.refusing = false;
  await deliverEmail(deps, { email_id: recoversEmail }, false);
  t.match(await emailFor(recovers), { status: 'sent', attempts: 2, last_error: null }, 'the retry sends it and clears the error');
  t.equal(smtp.messages.length, 1);

  smtp.refusing = true;
  const gives = await sent();
  const { id: givesEmail } = await emailFor(gives);
  await t.rejects(deliverEmail(deps, { email_id: givesEmail }, false), /try again later/);
  await t.rejects(deliverEmail(deps, { email_id: givesEmail }, true), /try again later/);
  t.match(await emailFor(gives), { status: 'failed', attempts: 2, last_error: /try again later/ }, 'the final attempt marks it failed');
  smtp.refusing = false;
  await deliverEmail(deps, { email_id: givesEmail }, false);
  t.match(await emailFor(gives), { status: 'failed', attempts: 2 }, 'failed is final');
  t.equal(smtp.messages.length, 1, 'nothing more was sent');
});
