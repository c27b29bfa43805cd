// Credit and debit notes as the client receives them (docs/decisions.md §17): each note's PDF (GET
// /credit-notes/{id}/pdf, /debit-notes/{id}/pdf) is the SII's printed representation of its DTE (61,
// 56), or, for a note without one, a document titled with its number, read back by poppler and its
// timbre by ZXing; and the client of an API invoice is e-mailed each note with its PDF and XML,
// through a real SMTP server and the worker.
import t, { type Test } from 'tap';
import { formatDate } from '../src/format.js';
import { API_PREFIX } from '../src/http/urls.js';
import { testApp, type TestApp } from './helpers/app.js';
import { submitCheckoutForm, checkoutBody } from './helpers/checkout.js';
import { dteMerchant, readDte, siiAuthority } from './helpers/dte-fixtures.js';
import { facturaBody, invoiceBody } from './helpers/fixtures.js';
import { pdf417OnFirstPage } from './helpers/pdf417.js';
import { pdfToText } from './helpers/pdftotext.js';
import { startSiiStandin } from './helpers/sii-standin.js';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from './helpers/smtp.js';
import { until } from './helpers/until.js';

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

const oneLine = (text: string) => text.replace(/\s+/g, ' ');

/** A GET of the API with the key: the raw bytes and, for an error, its code. */
async function download(h: TestApp, key: string, path: string) {
  const res = await h.app.inject({ method: 'GET', url: `${API_PREFIX}${path}`, headers: { 'x-api-key': key } });
  const code = res.statusCode === 200 ? null : (JSON.parse(res.body) as { code: string }).code;
  return { status: res.statusCode, headers: res.headers, bytes: res.rawPayload, code };
}

/** A note's PDF and its text as pdftotext reads it, on one line. */
async function notePdf(h: TestApp, key: string, notePath: string) {
  const res = await download(h, key, `${notePath}/pdf`);
  if (res.status !== 200) throw new Error(`${notePath}/pdf: ${res.status} ${res.code}`);
  return { ...res, text: oneLine(await pdfToText(res.bytes)) };
}

/** The merchant's e-mails once none is left to deliver, so that the SMTP server holds all there will be. */
async function allDelivered(h: TestApp, smtp: SmtpSink, merchantId: string): Promise<ReceivedMail[]> {
  await until('every e-mail delivered', async () => (await h.sql`SELECT 1 FROM emails WHERE merchant_id = ${merchantId} AND status = 'queued'`).length === 0, 60_000);
  const invoices = new Set((await h.sql<{ id: string }[]>`SELECT id FROM invoices WHERE merchant_id = ${merchantId}`).map((r) => r.id));
  return smtp.messages.filter((m) => invoices.has(String(m.headers.get('x-invoice-id'))));
}

/** The one e-mail with the subject, with its attachments by name and content type. */
function mailWith(t: Test, mails: ReceivedMail[], subject: string) {
  const found = mails.filter((m) => m.subject === subject);
  t.equal(found.length, 1, `one e-mail "${subject}"`);
  const mail = found[0]!;
  return { mail, attachments: mail.attachments.map((a) => [a.filename, a.contentType]) };
}

t.test('notes as documents', async (t) => {
  const smtp = await startSmtpSink(t);
  const standin = await startSiiStandin(t);
  const h = await testApp(t, { SMTP_URL: smtp.url, SII_CERT_FILE: sii.certFile, SII_BASE_URL: standin.url });
  await h.startWorker();

  t.test("a factura's four kinds of note: the SII's printed representation, and an e-mail each with its PDF and XML", async (t) => {
    const { key, merchantId } = await h.key(['*']);
    await dteMerchant(h, merchantId, sii, [
      { type: 33, from: 1, to: 10 },
      { type: 61, from: 1, to: 10 },
      { type: 56, from: 1, to: 10 },
    ]);
    // 4 × 50.000 less 10 % = 180.000 taxed; 30.000 exempt; IVA 34.200; total 244.200.
    const created = await h.api('POST', '/invoices', {
      key,
      body: facturaBody({
        client: { name: 'Peñalolén Diseño Ltda', email: 'pagos@penalolen.cl' },
        items: [
          { description: 'Silla ergonómica', quantity: 4, unit_price: 50000, discount_percent: 10 },
          { description: 'Instalación', quantity: 1, unit_price: 30000, exempt: true },
        ],
        send_immediately: true,
      }),
    });
    t.equal(created.status, 201);
    const invoice = (await h.api('GET', `/invoices/${created.body.invoice_id}`, { key })).body;
    t.match(invoice, { invoice_number: 'INV-000001', total: '244200.00', dte_type: 33, dte_folio: 1 });

    // Two chairs back: 100.000 less 10 % = 90.000; IVA 17.100; total 107.100.
    const ret = await h.api('POST', `/invoices/${invoice.id}/credit-notes`, {
      key,
      body: { reason: 'return', items: [{ item_id: invoice.items[0].id, quantity: 2 }], references: [{ type: '801', folio: '4500012345', date: '2026-03-10' }] },
    });
    const text = await h.api('POST', `/invoices/${invoice.id}/credit-notes`, {
      key,
      body: { reason: 'correct_text', corrected_text: 'Donde dice Av. Vicuña Mackenna 4860 debe decir Av. Vicuña Mackenna 4880' },
    });
    const undo = await h.api('POST', `/credit-notes/${ret.body.id}/debit-notes`, { key, body: { reason: 'cancel' } });
    // 2.500 taxed, 5.000 exempt; IVA 475; total 7.975.
    const charge = await h.api('POST', `/invoices/${invoice.id}/debit-notes`, {
      key,
      body: {
        reason: 'charge',
        description: 'Intereses y flete',
        items: [
          { description: 'Intereses por mora', quantity: 1, unit_price: 2500 },
          { description: 'Flete', quantity: 1, unit_price: 5000, exempt: true },
        ],
      },
    });
    t.same([ret, text, undo, charge].map((r) => [r.status, r.body.number, r.body.dte_folio]), [
      [201, 'CN-000001', 1],
      [201, 'CN-000002', 2],
      [201, 'DN-000001', 1],
      [201, 'DN-000002', 2],
    ]);

    const invoiceDate = formatDate(readDte((await download(h, key, `/invoices/${invoice.id}/dte.xml`)).bytes).value('FchEmis')!, 'es');
    const notes = [
      {
        path: `/credit-notes/${ret.body.id}`,
        name: 'NOTA DE CRÉDITO ELECTRÓNICA',
        number: 'CN-000001',
        type: 61,
        folio: 1,
        total: '$107.100',
        totals: 'Monto neto $90.000 IVA (19 %) $17.100 Total CLP $107.100',
        references: ['Orden de compra (801)', '4500012345', '10 de marzo de 2026', 'Factura electrónica (33)', invoiceDate, 'Devolución de mercaderías'],
        lines: ['Silla ergonómica', 'Descuento 10 %: −$10.000'],
      },
      {
        path: `/credit-notes/${text.body.id}`,
        name: 'NOTA DE CRÉDITO ELECTRÓNICA',
        number: 'CN-000002',
        type: 61,
        folio: 2,
        total: '$0',
        totals: 'Monto neto $0 IVA (19 %) $0 Total CLP $0',
        references: ['Factura electrónica (33)', invoiceDate, 'Corrige texto'],
        lines: ['Donde dice Av. Vicuña Mackenna 4860 debe decir Av. Vicuña Mackenna 4880'],
      },
      {
        path: `/debit-notes/${undo.body.id}`,
        name: 'NOTA DE DÉBITO ELECTRÓNICA',
        number: 'DN-000001',
        type: 56,
        folio: 1,
        total: '$107.100',
        totals: 'Monto neto $90.000 IVA (19 %) $17.100 Total CLP $107.100',
        references: ['Nota de crédito electrónica (61)', 'Anula nota de crédito'],
        lines: ['Silla ergonómica'],
      },
      {
        path: `/debit-notes/${charge.body.id}`,
        name: 'NOTA DE DÉBITO ELECTRÓNICA',
        number: 'DN-000002',
        type: 56,
        folio: 2,
        total: '$7.975',
        totals: 'Monto neto $2.500 Monto exento $5.000 IVA (19 %) $475 Total CLP $7.975',
        references: ['Factura electrónica (33)', invoiceDate, 'Intereses y flete'],
        lines: ['Intereses por mora', 'Flete', 'Exento'],
      },
    ];

    for (const note of notes) {
      t.test(`${note.number}: its PDF`, async (t) => {
        const pdf = await notePdf(h, key, note.path);
        t.equal(pdf.headers['content-type'], 'application/pdf');
        t.equal(pdf.headers['content-disposition'], `inline; filename="${note.number}.pdf"`);
        const { text: page } = pdf;
        t.equal(page.split('R.U.T.: 76.086.428-5').length - 1, 2, "the issuer's R.U.T.: in its lines and in the red box");
        for (const s of [note.name, `N.º ${note.folio}`, 'S.I.I. - PEÑALOLÉN', note.number, 'INV-000001']) t.ok(page.includes(s), `the box and numbers: ${s}`);
        for (const s of ['Peñalolén Diseño Ltda', 'RUT: 77.123.456-9', 'Giro: Comercio al por mayor', 'Dirección: Av. Vicuña Mackenna 4860', 'Comuna: Macul', 'Ciudad: Santiago']) {
          t.ok(page.includes(s), `the receiver as the invoice has it: ${s}`);
        }
        for (const s of note.lines) t.ok(page.includes(s), `the line: ${s}`);
        t.ok(page.includes(note.totals), `the totals: ${note.totals}`);
        if (!note.totals.includes('Monto exento')) t.notOk(page.includes('Monto exento'), 'no exempt amount where it is 0');
        const refs = page.slice(page.indexOf('Referencias'), page.indexOf('Descripción'));
        for (const s of note.references) t.ok(page.includes(s), `the reference: ${s}`);
        // pdftotext reads the table a column at a time: the type column gives the rows' order.
        const types = note.references.filter((s) => / \(\d+\)$/.test(s));
        t.same(types.toSorted((a, b) => refs.indexOf(a) - refs.indexOf(b)), types, 'the note\'s own references, then the document it modifies');
        for (const s of ['Timbre Electrónico SII', 'Res. 0 de 22 de agosto de 2014', 'Verifique documento: www.sii.cl']) t.ok(page.includes(s), s);

        // What the note's own signed DTE says it references, and its timbre, exactly.
        const dte = readDte((await download(h, key, `${note.path}/dte.xml`)).bytes);
        t.equal(dte.value('TipoDTE'), String(note.type));
        t.equal(dte.values('RazonRef').at(-1), note.references.at(-1), 'the reason printed is the last Referencia’s');
        t.ok(page.includes(formatDate(dte.values('FchRef').at(-1)!, 'es')), 'and its date');
        const codes = await pdf417OnFirstPage(pdf.bytes);
        t.equal(codes.length, 1, 'one PDF417 symbol');
        t.ok(Buffer.from(codes[0]!.bytes).equals(Buffer.from(dte.ted, 'latin1')), "the barcode's bytes are the note's TED");

        const again = await download(h, key, `${note.path}/pdf`);
        t.ok(again.bytes.equals(pdf.bytes), 'the same bytes on every download');
      });
    }

    t.test('the corrected text: one line without quantity or price, amount 0', async (t) => {
      const { text: page } = await notePdf(h, key, `/credit-notes/${text.body.id}`);
      const table = page.slice(page.indexOf('Descripción'), page.indexOf('Monto neto'));
      t.same(table.match(/\$[\d.]+/g), ['$0'], 'one amount, 0: no unit price');
      t.notMatch(table.replace(/4860|4880|\$0/g, ''), /\d/, 'no quantity');
    });

    t.test('the client gets one e-mail per note, with its PDF and XML', async (t) => {
      const mails = await allDelivered(h, smtp, merchantId);
      t.same(mails.map((m) => m.headers.get('x-email-kind')).sort(), ['credit_note', 'credit_note', 'debit_note', 'debit_note', 'invoice']);
      for (const note of notes) {
        const kind = note.type === 61 ? 'Nota de crédito' : 'Nota de débito';
        const { mail, attachments } = mailWith(t, mails, `${kind} ${note.number} de Comercial Test SpA`);
        t.equal(mail.to, 'pagos@penalolen.cl');
        t.equal(mail.headers.get('x-email-kind'), note.type === 61 ? 'credit_note' : 'debit_note');
        t.equal(mail.headers.get('x-invoice-id'), invoice.id);
        t.ok(mail.text.includes(`${kind.toLowerCase()} ${note.number} por ${note.total}, de la factura INV-000001`), 'the body names the note, its total and the invoice');
        t.same(attachments, [
          [`${note.number}.pdf`, 'application/pdf'],
          [`DTE-${note.type}-${note.folio}.xml`, 'application/xml'],
        ]);
        t.ok(Buffer.from(mail.attachments[0]!.content).equals((await download(h, key, `${note.path}/pdf`)).bytes), 'the PDF of GET .../pdf');
        t.ok(Buffer.from(mail.attachments[1]!.content).equals((await download(h, key, `${note.path}/dte.xml`)).bytes), 'the XML of GET .../dte.xml');
      }
    });
  });

  t.test('a merchant without DTE: notes titled with their number, in the invoice language, e-mailed with their PDF', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const english = (await h.api('POST', '/invoices', { key, body: invoiceBody({ locale: 'en', send_immediately: true }) })).body;
    const item = (await h.api('GET', `/invoices/${english.invoice_id}`, { key })).body.items[0];
    const credit = await h.api('POST', `/invoices/${english.invoice_id}/credit-notes`, { key, body: { reason: 'return', items: [{ item_id: item.id, quantity: 1 }] } });
    const debit = await h.api('POST', `/credit-notes/${credit.body.id}/debit-notes`, { key, body: { reason: 'cancel' } });
    t.match([credit.body, debit.body], [
      { number: 'CN-000001', dte_type: null },
      { number: 'DN-000001', dte_type: null },
    ]);
    const spanish = (await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) })).body;
    const cancelled = await h.api('POST', `/invoices/${spanish.invoice_id}/cancel`, { key, body: { reason: 'Pedido duplicado' } });
    t.equal(cancelled.status, 200, 'POST /cancel issues its credit note through the same path');
    const [cancelNote] = (await h.api('GET', `/invoices/${spanish.invoice_id}/credit-notes`, { key })).body.data;
    t.equal(cancelNote.number, 'CN-000002');
    const issued = (await h.api('GET', `/invoices/${english.invoice_id}`, { key })).body.issue_date as string;

    const creditPdf = await notePdf(h, key, `/credit-notes/${credit.body.id}`);
    t.equal(creditPdf.headers['content-disposition'], 'inline; filename="CN-000001.pdf"');
    for (const s of ['CREDIT NOTE', 'No. CN-000001', 'BILL TO', 'Issue date', 'Invoice No.', 'References', 'Net amount CLP 5,000 Tax (19%) CLP 950 Total CLP CLP 5,950']) {
      t.ok(creditPdf.text.includes(s), `English: ${s}`);
    }
    t.match(creditPdf.text, `Invoice INV-000001 ${formatDate(issued, 'en')} Devolución de mercaderías`, 'it modifies the invoice, by number');
    for (const s of ['Timbre', 'S.I.I.', 'ELECTRÓNICA', 'Nota de crédito']) t.notOk(creditPdf.text.includes(s), `no "${s}"`);
    t.equal((await pdf417OnFirstPage(creditPdf.bytes)).length, 0, 'no barcode');

    const debitPdf = await notePdf(h, key, `/debit-notes/${debit.body.id}`);
    t.ok(debitPdf.text.includes('DEBIT NOTE') && debitPdf.text.includes('No. DN-000001'));
    t.match(debitPdf.text, /Credit note CN-000001 .* Anula nota de crédito/, 'it modifies the credit note, by number');

    const cancelPdf = await notePdf(h, key, `/credit-notes/${cancelNote.id}`);
    for (const s of ['NOTA DE CRÉDITO', 'N.º CN-000002', 'Factura INV-000002', 'Anula documento', 'Total CLP $11.900']) t.ok(cancelPdf.text.includes(s), `Spanish: ${s}`);

    const mails = await allDelivered(h, smtp, merchantId);
    for (const [subject, pdf, number, body] of [
      ['Credit note CN-000001 from Comercial Test SpA', creditPdf, 'CN-000001', 'credit note CN-000001 for CLP 5,950, on invoice INV-000001'],
      ['Debit note DN-000001 from Comercial Test SpA', debitPdf, 'DN-000001', 'debit note DN-000001 for CLP 5,950, on invoice INV-000001'],
      ['Nota de crédito CN-000002 de Comercial Test SpA', cancelPdf, 'CN-000002', 'nota de crédito CN-000002 por $11.900, de la factura INV-000002'],
    ] as const) {
      const { mail, attachments } = mailWith(t, mails, subject);
      t.ok(mail.text.includes(body), `in the invoice's language: ${body}`);
      t.same(attachments, [[`${number}.pdf`, 'application/pdf']], 'the PDF alone: no DTE, no XML');
      t.ok(Buffer.from(mail.attachments[0]!.content).equals(pdf.bytes), 'the PDF of GET .../pdf');
    }
  });

  t.test("a checkout's invoice: its notes have PDFs but its customer gets no e-mail of them", async (t) => {
    const m = await h.merchant({ payment_provider: 'sandbox' });
    const { key } = await h.key(['*'], { merchantId: m.id });
    const checkout = (await h.api('POST', '/checkout', { key, body: checkoutBody() })).body;
    await submitCheckoutForm(h, checkout.checkout_url, 'pay');
    const item = (await h.api('GET', `/invoices/${checkout.invoice_id}`, { key })).body.items[0];
    const credit = await h.api('POST', `/invoices/${checkout.invoice_id}/credit-notes`, { key, body: { reason: 'return', items: [{ item_id: item.id, quantity: 1 }] } });
    t.equal(credit.status, 201, 'a paid checkout invoice takes a return');
    t.ok((await notePdf(h, key, `/credit-notes/${credit.body.id}`)).text.includes('N.º CN-000001'));
    const kinds = await h.sql<{ kind: string }[]>`SELECT kind FROM emails WHERE invoice_id = ${checkout.invoice_id}`;
    t.same(kinds.map((k) => k.kind), ['receipt'], 'the receipt alone');
  });

  t.test('the routes: 404 for a note of another kind or merchant, scope invoices:read, in the OpenAPI document', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const inv = (await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) })).body;
    const item = (await h.api('GET', `/invoices/${inv.invoice_id}`, { key })).body.items[0];
    const credit = (await h.api('POST', `/invoices/${inv.invoice_id}/credit-notes`, { key, body: { reason: 'return', items: [{ item_id: item.id, quantity: 1 }] } })).body;
    const stranger = await h.key(['*']);
    t.match(await download(h, key, `/debit-notes/${credit.id}/pdf`), { status: 404, code: 'debit_note_not_found' }, 'a credit note is no debit note');
    t.match(await download(h, stranger.key, `/credit-notes/${credit.id}/pdf`), { status: 404, code: 'credit_note_not_found' }, "another merchant's note");
    t.match(await download(h, key, '/credit-notes/01a220f6-84d1-728a-9b46-48f1ef0b354b/pdf'), { status: 404, code: 'credit_note_not_found' });
    const writer = await h.key(['invoices:create'], { merchantId });
    t.match(await download(h, writer.key, `/credit-notes/${credit.id}/pdf`), { status: 403, code: 'insufficient_scope' });
    const reader = await h.key(['invoices:read'], { merchantId });
    t.equal((await download(h, reader.key, `/credit-notes/${credit.id}/pdf`)).status, 200);

    const doc = JSON.parse((await h.app.inject({ method: 'GET', url: `${API_PREFIX}/docs/openapi.json` })).body) as { paths: Record<string, any> };
    for (const [path, operationId, notFound] of [
      ['/credit-notes/{credit_note_id}/pdf', 'getCreditNotePdf', 'credit_note_not_found'],
      ['/debit-notes/{debit_note_id}/pdf', 'getDebitNotePdf', 'debit_note_not_found'],
    ]) {
      const op = doc.paths[API_PREFIX + path]?.get;
      t.equal(op?.operationId, operationId, `${path} is documented`);
      t.ok(op?.responses?.['200']?.content?.['application/pdf'], 'as application/pdf');
      t.ok(JSON.stringify(op?.responses?.['404'] ?? {}).includes(notFound!), `with its 404 ${notFound}`);
    }
  });
});
