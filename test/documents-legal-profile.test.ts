// What customers see of the issuer (issue 19, docs/decisions.md §11 and §15): the invoice PDF prints the
// merchant's legal profile (razón social, R.U.T. with dots, giro, dirección, comuna, ciudad) when
// it has one and the client's RUT with dots; the e-mails print the razón social and R.U.T. The
// link to the hosted page says "view and pay" only for a merchant that can take the payment, and
// "view the invoice" otherwise. PDFs are read by poppler's pdftotext; e-mails as the real SMTP
// server received them.
import t from 'tap';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { API_PREFIX } from '../src/http/urls.js';
import { setTaxProfile } from '../src/merchants/service.js';
import { testApp, type TestApp } from './helpers/app.js';
import { firstPagePng, pdfToText } from './helpers/pdftotext.js';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from './helpers/smtp.js';
import { until } from './helpers/until.js';
import { LEGAL_PROFILE } from './helpers/fixtures.js';

const PROFILE = LEGAL_PROFILE;
const ISSUER_LINE = {
  es: 'Comercial Los Andes SpA · R.U.T.: 76.086.428-5 · Av. Providencia 1234, of. 56, Ñuñoa, Santiago',
  en: 'Comercial Los Andes SpA · Tax ID (RUT): 76.086.428-5 · Av. Providencia 1234, of. 56, Ñuñoa, Santiago',
};

let seq = 0;

interface Merchant {
  id: string;
  key: string;
  name: string;
}

/** A merchant with a key; with the legal profile and a payment provider as told. */
async function merchantWith(h: TestApp, opts: { profile: boolean; canCharge: boolean }): Promise<Merchant> {
  const name = `Tienda ${opts.profile ? 'Con' : 'Sin'} Perfil ${opts.canCharge ? 'Pago' : 'Vista'}`;
  const m = await h.merchant({ name, payment_provider: opts.canCharge ? 'sandbox' : null });
  if (opts.profile) await setTaxProfile(h.sql, m.id, PROFILE);
  const { key } = await h.key(['*'], { merchantId: m.id });
  return { id: m.id, key, name };
}

async function send(h: TestApp, m: Merchant, locale: 'es' | 'en', extra: Record<string, unknown> = {}): Promise<string> {
  seq += 1;
  const res = await h.api('POST', '/invoices', {
    key: m.key,
    body: {
      client: { name: `Cliente ${seq}`, email: `cliente${seq}@example.cl`, rut: '12345678-5' },
      due_date: '2099-12-31',
      items: [{ description: 'Consultoría', quantity: 1, unit_price: 10000 }],
      locale,
      send_immediately: true,
      ...extra,
    },
  });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
  return res.body.invoice_id;
}

async function pdfOf(h: TestApp, m: Merchant, invoiceId: string): Promise<Buffer> {
  const res = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/invoices/${invoiceId}/pdf`, headers: { 'x-api-key': m.key } });
  if (res.statusCode !== 200) throw new Error(`pdf failed: ${res.statusCode} ${res.body}`);
  return res.rawPayload;
}

async function pdfTextOf(h: TestApp, m: Merchant, invoiceId: string): Promise<string> {
  return pdfToText(await pdfOf(h, m, invoiceId));
}

function mailOf(smtp: SmtpSink, invoiceId: string, kind: string): Promise<ReceivedMail> {
  return until(`the ${kind} e-mail of ${invoiceId}`, () =>
    smtp.messages.find((m) => m.headers.get('x-invoice-id') === invoiceId && m.headers.get('x-email-kind') === kind),
  );
}

/** The HTML e-mail's button: the link to the hosted page and its text. */
function button(mail: ReceivedMail): string | undefined {
  return /<a href="http:\/\/invoicing\.test\/i\/[^"]+"[^>]*>([^<]*)<\/a>/.exec(mail.html)?.[1];
}

t.test('the legal profile and the link text on PDFs and e-mails', async (t) => {
  const smtp = await startSmtpSink(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  await h.startWorker();
  const profiled = await merchantWith(h, { profile: true, canCharge: false });
  const plain = await merchantWith(h, { profile: false, canCharge: true });

  t.test('PDF with a legal profile, merchant that cannot charge: the issuer in full, "Ver la factura"', async (t) => {
    const text = await pdfTextOf(h, profiled, await send(h, profiled, 'es'));
    for (const line of ['Comercial Los Andes SpA', 'R.U.T.: 76.086.428-5', 'Giro: Servicios de consultoría', 'Dirección: Av. Providencia 1234, of. 56', 'Comuna: Ñuñoa', 'Ciudad: Santiago']) {
      t.ok(text.includes(line), `prints "${line}"`);
    }
    t.ok(text.includes('RUT: 12.345.678-5'), "the client's RUT with its dots");
    t.ok(text.includes('Ver la factura en línea:'), 'the link says what the page does');
    t.notOk(text.includes('Ver y pagar'), 'never "Ver y pagar"');

    const en = await pdfTextOf(h, profiled, await send(h, profiled, 'en'));
    for (const line of ['Comercial Los Andes SpA', 'Tax ID (RUT): 76.086.428-5', 'Business activity: Servicios de consultoría', 'Address: Av. Providencia 1234, of. 56', 'Comuna: Ñuñoa', 'City: Santiago']) {
      t.ok(en.includes(line), `en: prints "${line}"`);
    }
    t.ok(en.includes('Tax ID (RUT): 12.345.678-5'), "en: the client's RUT with its dots");
    t.ok(en.includes('View the invoice online:'), 'en: the link says what the page does');
    t.notOk(en.includes('View and pay'), 'en: never "View and pay"');
  });

  t.test('PDF without a profile, merchant that can charge: name and e-mail as before, "Ver y pagar"', async (t) => {
    const text = await pdfTextOf(h, plain, await send(h, plain, 'es'));
    t.ok(text.includes(plain.name), "the merchant's name");
    t.ok(text.includes('facturacion@test.cl'), "the merchant's e-mail");
    t.notOk(text.includes('R.U.T.'), 'no legal profile to print');
    t.notOk(text.includes('Giro'), 'no giro');
    t.ok(text.includes('RUT: 12.345.678-5'), "the client's RUT with its dots");
    t.ok(text.includes('Ver y pagar en línea:'), 'the hosted page takes the payment');

    const en = await pdfTextOf(h, plain, await send(h, plain, 'en'));
    t.ok(en.includes('View and pay online:'), 'en: the hosted page takes the payment');
  });

  t.test("a draft's preview follows the profile as it is now", async (t) => {
    const later = await merchantWith(h, { profile: false, canCharge: false });
    const draft = await send(h, later, 'es', { send_immediately: false });
    t.notOk((await pdfTextOf(h, later, draft)).includes('R.U.T.'), 'before: no profile');
    await setTaxProfile(h.sql, later.id, PROFILE);
    const text = await pdfTextOf(h, later, draft);
    t.ok(text.includes('R.U.T.: 76.086.428-5'), 'rendered anew, with the profile');
    t.ok(text.includes('BORRADOR'), 'still a draft');
  });

  t.test('e-mails of a merchant with a profile that cannot charge: the issuer in the footer, "Ver la factura"', async (t) => {
    const id = await send(h, profiled, 'es');
    const invoice = await mailOf(smtp, id, 'invoice');
    t.equal(button(invoice), 'Ver la factura', 'the button');
    t.match(invoice.text, /^Ver la factura: http:\/\/invoicing\.test\/i\//m, 'the plain-text link');
    t.ok(invoice.text.includes(ISSUER_LINE.es), 'plain text: razón social, R.U.T. and address');
    t.ok(invoice.html.includes(ISSUER_LINE.es), 'HTML: razón social, R.U.T. and address');
    t.notOk(invoice.text.includes('pagar la factura') || invoice.html.includes('pagar la factura'), 'never "Ver y pagar"');
    const attached = await pdfToText(invoice.attachments[0]!.content);
    t.ok(attached.includes('R.U.T.: 76.086.428-5'), 'the attached PDF prints the profile');
    t.ok(attached.includes('Ver la factura en línea:'), 'the attached PDF\'s link text');

    const reminded = await h.api('POST', `/invoices/${id}/remind`, { key: profiled.key, body: {} });
    t.equal(reminded.status, 200, reminded.raw);
    const reminder = await mailOf(smtp, id, 'reminder');
    t.equal(button(reminder), 'Ver la factura', 'the reminder\'s button');
    t.ok(reminder.text.includes(ISSUER_LINE.es), 'the reminder\'s legal line');

    const paid = await h.api('POST', `/invoices/${id}/mark-paid`, { key: profiled.key, body: {} });
    t.equal(paid.status, 200, paid.raw);
    const receipt = await mailOf(smtp, id, 'receipt');
    t.equal(button(receipt), 'Ver la factura', 'the receipt\'s button');
    t.ok(receipt.text.includes(ISSUER_LINE.es), 'the receipt\'s legal line, plain text');
    t.ok(receipt.html.includes(ISSUER_LINE.es), 'the receipt\'s legal line, HTML');

    const en = await mailOf(smtp, await send(h, profiled, 'en'), 'invoice');
    t.equal(button(en), 'View the invoice', 'en: the button');
    t.ok(en.text.includes(ISSUER_LINE.en), 'en: the legal line');
    t.notOk(en.text.includes('View and pay'), 'en: never "View and pay"');
  });

  t.test('e-mails of a merchant without a profile that can charge: "Ver y pagar la factura", no legal line', async (t) => {
    const id = await send(h, plain, 'es');
    const invoice = await mailOf(smtp, id, 'invoice');
    t.equal(button(invoice), 'Ver y pagar la factura', 'the button');
    t.match(invoice.text, /^Ver y pagar la factura: http:\/\/invoicing\.test\/i\//m, 'the plain-text link');
    t.notOk(invoice.text.includes('R.U.T.') || invoice.html.includes('R.U.T.'), 'no legal profile to print');

    const reminded = await h.api('POST', `/invoices/${id}/remind`, { key: plain.key, body: {} });
    t.equal(reminded.status, 200, reminded.raw);
    t.equal(button(await mailOf(smtp, id, 'reminder')), 'Ver y pagar la factura', 'the reminder\'s button');

    const en = await mailOf(smtp, await send(h, plain, 'en'), 'invoice');
    t.equal(button(en), 'View and pay the invoice', 'en: the button');
  });
});

// SCREENSHOTS_DIR=docs/screenshots: the PDF with and without a legal profile, as images for review.
t.test('the PDF as a reader sees it, for docs/screenshots', { skip: process.env.SCREENSHOTS_DIR ? false : 'SCREENSHOTS_DIR is not set' }, async (t) => {
  const h = await testApp(t);
  const dir = path.resolve(process.env.SCREENSHOTS_DIR!);
  for (const [name, opts] of [
    ['invoice-pdf-legal-profile.png', { profile: true, canCharge: false }],
    ['invoice-pdf.png', { profile: false, canCharge: true }],
  ] as const) {
    const m = await merchantWith(h, opts);
    const out = path.join(dir, name);
    await firstPagePng(await pdfOf(h, m, await send(h, m, 'es', { client: { name: 'Łukasz Müller', email: 'lukasz@example.cl', rut: '12345678-5', address: 'Av. Irarrázaval 2401, Ñuñoa' } })), out);
    t.ok((await stat(out)).size > 10_000, `${name} written`);
  }
});
