// GET /invoices/{id}/pdf (docs/decisions.md §4, §5): the PDF in the invoice's locale, stored once for an
// issued invoice and served as the same bytes ever after; a draft's preview is marked and never stored.
import t from 'tap';
import { createHash } from 'node:crypto';
import { PDFParse } from 'pdf-parse';
import { clock, dateInZone } from '../src/clock.js';
import { API_PREFIX } from '../src/http/urls.js';
import { getInvoiceWithItems } from '../src/invoices/queries.js';
import { getMerchant } from '../src/merchants/queries.js';
import { renderInvoicePdf } from '../src/pdf/render.js';
import { storeInvoicePdf } from '../src/pdf/store.js';
import { setRate } from '../src/rates/service.js';
import { isEnvelope, testApp, type TestApp } from './helpers/app.js';

const UNKNOWN_ID = '0191e4b2-7c1a-7000-8000-0000000000aa';

let seq = 0;
function invoiceBody(extra: Record<string, unknown> = {}): Record<string, any> {
  seq += 1;
  return {
    client: {
      name: `Comercial Ñandú Pérez ${seq}`,
      email: `pagos${seq}@andes.cl`,
      rut: '12.345.678-5',
      phone: '+56 9 1234 5678',
      address: 'Av. Providencia 1234, Ñuñoa',
    },
    due_date: '2099-12-31',
    items: [{ description: 'Consultoría de diseño, año 2026', quantity: 2, unit_price: 5000 }],
    send_immediately: true,
    ...extra,
  };
}

interface PdfResponse {
  status: number;
  headers: Record<string, unknown>;
  bytes: Buffer;
  json: any;
}

async function downloadPdf(h: TestApp, key: string, id: string): Promise<PdfResponse> {
  const res = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/invoices/${id}/pdf`, headers: { 'x-api-key': key } });
  let json: unknown = null;
  try {
    json = JSON.parse(res.body);
  } catch {
    /* a PDF */
  }
  return { status: res.statusCode, headers: res.headers, bytes: res.rawPayload, json };
}

async function textOf(bytes: Buffer): Promise<string> {
  // A copy: pdf.js may take ownership of (detach) the array it is given.
  const parser = new PDFParse({ data: new Uint8Array(bytes) });
  try {
    return (await parser.getText()).text;
  } finally {
    await parser.destroy();
  }
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function storedRows(h: TestApp, invoiceId: string): Promise<{ sha256: string; content: Buffer }[]> {
  return h.sql<{ sha256: string; content: Buffer }[]>`SELECT sha256, content FROM invoice_pdfs WHERE invoice_id = ${invoiceId}`;
}

async function create(h: TestApp, key: string, extra: Record<string, unknown> = {}) {
  const res = await h.api('POST', '/invoices', { key, body: invoiceBody(extra) });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
  return res.body as { invoice_id: string; invoice_number: string | null; public_url: string; status: string };
}

t.test('invoice PDF', async (t) => {
  const h = await testApp(t);
  const { key, merchantId } = await h.key(['*']);

  t.test('a sent invoice in Spanish: number, client, RUT, totals as es-CL, Spanish labels, payment link', async (t) => {
    const inv = await create(h, key);
    t.equal(inv.status, 'sent');
    t.match(inv.invoice_number, /^INV-\d{6}$/);
    const res = await downloadPdf(h, key, inv.invoice_id);
    t.equal(res.status, 200);
    t.equal(res.headers['content-type'], 'application/pdf');
    t.equal(res.headers['content-disposition'], `inline; filename="${inv.invoice_number}.pdf"`);
    t.equal(res.bytes.subarray(0, 5).toString('latin1'), '%PDF-', 'a PDF document');
    t.equal(res.headers['x-content-sha256'], sha256(res.bytes), 'X-Content-SHA256 is the hash of the body');

    const text = await textOf(res.bytes);
    t.match(text, inv.invoice_number!, 'invoice number');
    t.match(text, 'Comercial Ñandú Pérez', 'client name with Spanish characters intact');
    t.match(text, '12.345.678-5', 'client RUT printed with its dots');
    t.match(text, 'pagos', 'client e-mail');
    t.match(text, 'Av. Providencia 1234, Ñuñoa', 'client address');
    t.match(text, '+56 9 1234 5678', 'client phone');
    t.match(text, 'Consultoría de diseño, año 2026', 'item description');
    t.match(text, '$11.900', 'total formatted for es-CL');
    t.match(text, '$10.000', 'subtotal formatted for es-CL');
    t.match(text, '$1.900', 'tax formatted for es-CL');
    t.match(text, '$5.000', 'unit price');
    for (const label of ['FACTURA', 'N.º', 'Facturar a'.toUpperCase(), 'RUT', 'Teléfono', 'Dirección', 'Fecha de emisión', 'Fecha de vencimiento', 'Descripción', 'Cantidad', 'Precio unitario', 'Subtotal', 'IVA (19 %)', 'Moneda']) {
      t.match(text, label, `Spanish label ${label}`);
    }
    t.match(text, '31 de diciembre de 2099', 'due date in Spanish');
    t.match(text, inv.public_url, 'payment link: the hosted page');
    t.notMatch(text, /BORRADOR|DRAFT/, 'no draft mark');
    t.notMatch(text, 'Issue date', 'no English labels');

    const rows = await storedRows(h, inv.invoice_id);
    t.equal(rows.length, 1, 'stored once');
    t.equal(rows[0]!.sha256, sha256(res.bytes), 'stored hash');
    t.ok(Buffer.from(rows[0]!.content).equals(res.bytes), 'stored bytes are the bytes served');
    // Its streams are deflated already: the database keeps the bytes out of line as they are and
    // spends no time trying to compress them again (pglz, which found nothing to take).
    const [column] = await h.sql<{ attstorage: string }[]>`
      SELECT attstorage FROM pg_attribute WHERE attrelid = 'invoice_pdfs'::regclass AND attname = 'content'`;
    t.equal(column?.attstorage, 'e', 'stored external, uncompressed');
  });

  t.test('a second download returns the same bytes and hash', async (t) => {
    const inv = await create(h, key);
    const first = await downloadPdf(h, key, inv.invoice_id);
    clock.advance(5_000);
    t.teardown(() => clock.reset());
    const second = await downloadPdf(h, key, inv.invoice_id);
    t.equal(second.status, 200);
    t.ok(second.bytes.equals(first.bytes), 'byte-identical');
    t.equal(second.headers['x-content-sha256'], first.headers['x-content-sha256']);
    t.equal((await storedRows(h, inv.invoice_id)).length, 1);
  });

  t.test('an English invoice: English labels and CLP 11,900', async (t) => {
    const inv = await create(h, key, { locale: 'en' });
    const res = await downloadPdf(h, key, inv.invoice_id);
    t.equal(res.status, 200);
    const text = await textOf(res.bytes);
    t.match(text, inv.invoice_number!);
    t.match(text, '12.345.678-5');
    t.match(text, 'CLP 11,900', 'total formatted for en');
    t.match(text, 'CLP 10,000');
    for (const label of ['INVOICE', 'BILL TO', 'Issue date', 'Due date', 'Description', 'Quantity', 'Unit price', 'Subtotal', 'Tax (19%)', 'Total', 'View the invoice online']) {
      t.match(text, label, `English label ${label}`);
    }
    t.match(text, 'December 31, 2099');
    t.notMatch(text, /Fecha de emisi|FACTURA|\$11\.900/, 'no Spanish labels or es-CL amounts');
  });

  t.test('a draft: rendered on demand with the draft mark, never stored', async (t) => {
    const es = await create(h, key, { send_immediately: false });
    t.equal(es.status, 'draft');
    const res = await downloadPdf(h, key, es.invoice_id);
    t.equal(res.status, 200);
    t.equal(res.headers['content-type'], 'application/pdf');
    t.equal(res.headers['content-disposition'], `inline; filename="borrador-${es.invoice_id}.pdf"`);
    t.equal(res.headers['x-content-sha256'], sha256(res.bytes));
    const text = await textOf(res.bytes);
    t.match(text, 'BORRADOR');
    t.match(text, '$11.900');
    t.notMatch(text, /INV-\d{6}/, 'no number yet');
    t.notMatch(text, '/i/', 'no payment link: a draft has no public page');
    t.equal((await storedRows(h, es.invoice_id)).length, 0, 'not stored');

    const en = await create(h, key, { send_immediately: false, locale: 'en' });
    const enRes = await downloadPdf(h, key, en.invoice_id);
    t.equal(enRes.headers['content-disposition'], `inline; filename="draft-${en.invoice_id}.pdf"`);
    t.match(await textOf(enRes.bytes), 'DRAFT');
    t.equal((await storedRows(h, en.invoice_id)).length, 0);

    // Once sent, the issued document is rendered without the mark and stored.
    const sent = await h.api('POST', `/invoices/${es.invoice_id}/send`, { key });
    t.equal(sent.status, 200);
    const issued = await downloadPdf(h, key, es.invoice_id);
    const issuedText = await textOf(issued.bytes);
    t.notMatch(issuedText, 'BORRADOR');
    t.match(issuedText, sent.body.invoice_number);
    t.equal((await storedRows(h, es.invoice_id)).length, 1);
  });

  t.test('the stored document does not change when the invoice does', async (t) => {
    const inv = await create(h, key);
    const before = await downloadPdf(h, key, inv.invoice_id);
    const paid = await h.api('POST', `/invoices/${inv.invoice_id}/mark-paid`, { key, body: {} });
    t.equal(paid.status, 200, `mark-paid: ${paid.raw}`);
    const after = await downloadPdf(h, key, inv.invoice_id);
    t.ok(after.bytes.equals(before.bytes), 'same bytes after mark-paid');
  });

  t.test('concurrent first downloads and the e-mail job store one document and all serve it', async (t) => {
    const inv = await create(h, key);
    const [viaJob, ...downloads] = await Promise.all([
      storeInvoicePdf(h.sql, inv.invoice_id, h.ctx.config.publicBaseUrl),
      ...Array.from({ length: 6 }, () => downloadPdf(h, key, inv.invoice_id)),
    ]);
    const rows = await storedRows(h, inv.invoice_id);
    t.equal(rows.length, 1);
    t.ok(viaJob, 'the job gets the document');
    t.equal(viaJob!.sha256, rows[0]!.sha256);
    t.ok(viaJob!.content.equals(Buffer.from(rows[0]!.content)));
    for (const d of downloads) {
      t.equal(d.status, 200);
      t.equal(d.headers['x-content-sha256'], rows[0]!.sha256);
    }
  });

  t.test('storeInvoicePdf: given only the id; null for a draft or an unknown id', async (t) => {
    const sent = await create(h, key);
    const stored = await storeInvoicePdf(h.sql, sent.invoice_id, h.ctx.config.publicBaseUrl);
    t.ok(stored);
    t.equal(stored!.draft, false);
    t.equal(stored!.filename, `${sent.invoice_number}.pdf`);
    const download = await downloadPdf(h, key, sent.invoice_id);
    t.ok(download.bytes.equals(stored!.content), 'the API serves what the job stored');

    const draft = await create(h, key, { send_immediately: false });
    t.equal(await storeInvoicePdf(h.sql, draft.invoice_id, h.ctx.config.publicBaseUrl), null);
    t.equal((await storedRows(h, draft.invoice_id)).length, 0);
    t.equal(await storeInvoicePdf(h.sql, UNKNOWN_ID, h.ctx.config.publicBaseUrl), null);
  });

  t.test('rendering is deterministic: the creation date comes from the invoice', async (t) => {
    const inv = await create(h, key);
    const full = await getInvoiceWithItems(h.sql, merchantId, inv.invoice_id);
    const merchant = await getMerchant(h.sql, merchantId);
    const opts = { draft: false, publicUrl: inv.public_url };
    const a = await renderInvoicePdf(full!, merchant!, opts);
    clock.advance(60_000);
    t.teardown(() => clock.reset());
    await new Promise((r) => setTimeout(r, 20));
    const b = await renderInvoicePdf(full!, merchant!, opts);
    t.ok(a.equals(b), 'same bytes');
  });

  t.test('foreign currency: the exchange rate is printed', async (t) => {
    await setRate(h.sql, merchantId, 'USD', dateInZone(clock.now(), 'America/Santiago'), '950.25');
    const inv = await create(h, key, { currency: 'USD', items: [{ description: 'Licencia', quantity: 1, unit_price: 100 }] });
    const text = await textOf((await downloadPdf(h, key, inv.invoice_id)).bytes);
    t.match(text, 'Tipo de cambio');
    t.match(text, '1 USD = 950,25 CLP');
    t.match(text, 'USD 119,00', 'USD total in es');
  });

  t.test('characters outside the embedded font degrade instead of breaking the document', async (t) => {
    const inv = await create(h, key, {
      client: { name: 'Zoë Őrs 東京 Ltd.', email: `intl${seq}@example.com` },
      items: [{ description: 'Line – “quotes” € ½', quantity: 1, unit_price: 1000 }],
    });
    const res = await downloadPdf(h, key, inv.invoice_id);
    t.equal(res.status, 200);
    const text = await textOf(res.bytes);
    t.match(text, 'Zoë Őrs ?? Ltd.');
    t.match(text, '“quotes” €');
  });

  t.test('unknown, foreign and malformed ids', async (t) => {
    const unknown = await downloadPdf(h, key, UNKNOWN_ID);
    t.equal(unknown.status, 404);
    t.ok(isEnvelope(unknown.json));
    t.equal(unknown.json.code, 'invoice_not_found');

    const inv = await create(h, key);
    const other = await h.key(['*']);
    const foreign = await downloadPdf(h, other.key, inv.invoice_id);
    t.equal(foreign.status, 404, "another merchant's invoice is absent");
    t.equal(foreign.json.code, 'invoice_not_found');

    const malformed = await downloadPdf(h, key, 'not-a-uuid');
    t.equal(malformed.status, 400);
    t.equal(malformed.json.code, 'validation_error');
  });

  t.test('scope invoices:read is required', async (t) => {
    const inv = await create(h, key);
    const writer = await h.key(['invoices:create', 'invoices:send'], { merchantId });
    const denied = await downloadPdf(h, writer.key, inv.invoice_id);
    t.equal(denied.status, 403);
    t.equal(denied.json.code, 'insufficient_scope');
    t.equal(denied.json.details.required_scope, 'invoices:read');

    const reader = await h.key(['invoices:read'], { merchantId });
    t.equal((await downloadPdf(h, reader.key, inv.invoice_id)).status, 200);

    const res = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/invoices/${inv.invoice_id}/pdf` });
    t.equal(res.statusCode, 401);
    t.equal(JSON.parse(res.body).code, 'missing_api_key');
  });

  t.test('the reference documents the route as application/pdf', async (t) => {
    const res = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/docs/openapi.json` });
    t.equal(res.statusCode, 200);
    const paths = (JSON.parse(res.body).paths ?? {}) as Record<string, any>;
    const op = Object.entries(paths).find(([p]) => p.endsWith('/invoices/{invoice_id}/pdf'))?.[1]?.get;
    t.ok(op, 'operation present');
    t.equal(op?.operationId, 'getInvoicePdf');
    t.ok(op?.responses?.['200']?.content?.['application/pdf'], 'success response is application/pdf');
  });
});

