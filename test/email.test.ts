import t from 'tap';
import { testApp } from './helpers/app.js';
import { startSmtpSink } from './helpers/smtp.js';

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
