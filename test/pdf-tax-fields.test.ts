// What a Chilean factura prints beyond §2's figures (docs/decisions.md §17): line discounts and exempt
// lines, the global discount and the SII's totals (Monto neto, Monto exento, IVA, Total), the
// references, the receiver's giro, comuna and ciudad, and the cedible copy of a 33 or 34 with the
// receipt box of Ley 19.983, which is never stored in the original's place. Read back with
// poppler's pdftotext, as a reader other than the renderer.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { clock, dateInZone } from '../src/clock.js';
import { API_PREFIX } from '../src/http/urls.js';
import { getInvoiceWithItems } from '../src/invoices/queries.js';
import { getMerchant } from '../src/merchants/queries.js';
import { renderInvoicePdf } from '../src/pdf/render.js';
import { setRate } from '../src/rates/service.js';
import { testApp, type TestApp } from './helpers/app.js';
import { dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { facturaBody } from './helpers/fixtures.js';
import { firstPagePng, pdfToText } from './helpers/pdftotext.js';

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

const PUBLIC = 'http://invoicing.test';
const LEY_19983 =
  'El acuse de recibo que se declara en este acto, de acuerdo a lo dispuesto en la letra b) del Art. 4°, y la letra c) del Art. 5° de la ' +
  'Ley 19.983, acredita que la entrega de mercaderías o servicio(s) prestado(s) ha(n) sido recibido(s).';

const oneLine = (text: string) => text.replace(/\s+/g, ' ');

/**
 * A factura with every field the SII's set básico exercises. Its figures, half-up to pesos:
 * lines 100.000 − 9 % = 91.000, 30.000 − 5.000 = 25.000, and 20.000 exempt; the global 10 % of
 * the taxable 116.000 is 11.600, so neto 104.400, exento 20.000, IVA 19.836 and total 144.236.
 */
const FULL = {
  items: [
    { description: 'Consultoría de diseño', quantity: 2, unit_price: 50000, discount_percent: 9 },
    { description: 'Licencia anual', quantity: 1, unit_price: 30000, discount_amount: 5000 },
    { description: 'Capacitación (exenta)', quantity: 1, unit_price: 20000, exempt: true },
  ],
  global_discount: { percent: 10, description: 'Cliente frecuente' },
  references: [
    { type: '801', folio: '4500012345', date: '2026-11-20', reason: 'Orden de compra' },
    { type: 'HES', folio: '1001', date: '2026-11-21' },
  ],
};

let seq = 0;

async function create(h: TestApp, key: string, extra: Record<string, unknown> = {}) {
  seq += 1;
  const client = { name: `Distribuidora Ñuble ${seq}`, email: `compras${seq}@nuble.cl`, ...(extra.client as object | undefined) };
  const body = facturaBody({ send_immediately: true, ...extra, client });
  const res = await h.api('POST', '/invoices', { key, body });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
  return res.body as { invoice_id: string; invoice_number: string; public_url: string };
}

/** A sent invoice with no DTE: the SII takes CLP documents only. */
async function usdInvoice(h: TestApp, key: string, merchantId: string) {
  await setRate(h.sql, merchantId, 'USD', dateInZone(clock.now(), 'America/Santiago'), '950.25');
  return create(h, key, { currency: 'USD' });
}

/**
 * The text laid out as on the page (pdftotext -layout): a table's row on one line. Plain
 * pdftotext reads a table's columns one after the other.
 */
async function layoutText(pdf: Buffer): Promise<string> {
  await pdfToText(pdf); // installs poppler when missing
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pdf-tax-'));
  try {
    await writeFile(path.join(dir, 'doc.pdf'), pdf);
    return (await promisify(execFile)('pdftotext', ['-layout', '-enc', 'UTF-8', path.join(dir, 'doc.pdf'), '-'])).stdout;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The totals block laid out, a row each, from the row starting with `first` to the total: "Monto neto $104.400 | IVA (19 %) $19.836 | …". */
async function totalsOf(pdf: Buffer, first: string): Promise<string> {
  const lines = (await layoutText(pdf)).split('\n').map((l) => l.trim().replace(/ {2,}/g, ' '));
  const start = lines.findIndex((l) => l.startsWith(first));
  const end = lines.findIndex((l, i) => i > start && l.startsWith('Total '));
  return start < 0 ? '' : lines.slice(start, end + 1).filter(Boolean).join(' | ');
}

/** The pages pdftotext reads. */
async function pageCount(pdf: Buffer): Promise<number> {
  return (await pdfToText(pdf)).split('\f').filter((p) => p.trim() !== '').length;
}

async function download(h: TestApp, key: string, id: string, query = '') {
  const res = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/invoices/${id}/pdf${query}`, headers: { 'x-api-key': key } });
  return { status: res.statusCode, headers: res.headers, bytes: res.rawPayload, json: res.headers['content-type'] === 'application/pdf' ? null : res.json() };
}

t.test('discounts, exempt lines, totals, references and the receiver', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);

  t.test('in Spanish: each figure printed, the totals as the SII names them', async (t) => {
    const inv = await create(h, key, FULL);
    const resource = (await h.api('GET', `/invoices/${inv.invoice_id}`, { key })).body;
    t.match(resource, { discount_total: '11600', taxable_amount: '104400', exempt_amount: '20000', tax_total: '19836', total: '144236' }, 'the figures the PDF must print');
    const pdf = await download(h, key, inv.invoice_id);
    const text = oneLine(await pdfToText(pdf.bytes));

    t.ok(text.includes('Descuento 9 %: −$9.000'), "the first line's discount, its percent and amount");
    t.ok(text.includes('Descuento: −$5.000'), "the second line's, an amount");
    t.match(text, /Capacitación \(exenta\) Exento/, 'the exempt line marked under its description');
    for (const total of ['$91.000', '$25.000', '$20.000']) t.ok(text.includes(total), `line total ${total}`);

    t.equal(
      await totalsOf(pdf.bytes, 'Descuento global'),
      'Descuento global 10 % (Cliente frecuente) −$11.600 | Monto neto $104.400 | Monto exento $20.000 | IVA (19 %) $19.836 | Total CLP $144.236',
      'the totals block, each label beside its amount',
    );
    t.notOk(text.includes('Subtotal'), 'no subtotal: the neto and exento are its parts');

    t.match(text, /Referencias Tipo de documento Folio Fecha Razón .* Descripción /, 'the references before the items');
    const laidOut = await layoutText(pdf.bytes);
    t.match(laidOut, /Tipo de documento +Folio +Fecha +Razón\n/, 'the column labels');
    t.match(laidOut, /Orden de compra \(801\) +4500012345 +20 de noviembre de 2026 +Orden de compra\n/, 'a row per reference: its name and code, folio, date and reason');
    t.match(laidOut, /Hoja de entrada de +1001 +21 de noviembre de 2026\s*\n\s*servicios \(HES\)\s*\n/, 'one without a reason, its long name wrapped in its column');
    for (const line of ['Giro: Comercio al por mayor', 'Dirección: Av. Vicuña Mackenna 4860', 'Comuna: Macul', 'Ciudad: Santiago']) {
      t.ok(text.includes(line), `the receiver's ${line}`);
    }
  });

  t.test('in English: the same figures under English labels and names', async (t) => {
    const inv = await create(h, key, { ...FULL, locale: 'en' });
    const pdf = await download(h, key, inv.invoice_id);
    const text = oneLine(await pdfToText(pdf.bytes));
    t.ok(text.includes('Discount 9%: −CLP 9,000'));
    t.ok(text.includes('Discount: −CLP 5,000'));
    t.match(text, /Capacitación \(exenta\) Exempt/);
    t.equal(
      await totalsOf(pdf.bytes, 'Overall discount'),
      'Overall discount 10% (Cliente frecuente) −CLP 11,600 | Net amount CLP 104,400 | Exempt amount CLP 20,000 | Tax (19%) CLP 19,836 | Total CLP CLP 144,236',
      'the totals',
    );
    t.match(text, /References Document type Number Date Reason /);
    const laidOut = await layoutText(pdf.bytes);
    t.match(laidOut, /Purchase order \(801\) +4500012345 +November 20, 2026 +Orden de compra\n/, 'the references');
    t.match(laidOut, /Service entry sheet \(HES\) +1001 +November 21, 2026\n/);
    for (const line of ['Business activity: Comercio al por mayor', 'Comuna: Macul', 'City: Santiago']) t.ok(text.includes(line), line);
    t.notOk(/Referencias|Descuento|Monto neto/.test(text), 'no Spanish labels');
  });

  t.test('an amount off the whole: its label without a percent; a line discount alone still shows the neto', async (t) => {
    const amount = await download(h, key, (await create(h, key, { items: FULL.items.slice(0, 1), global_discount: { amount: 1000 } })).invoice_id);
    t.equal(await totalsOf(amount.bytes, 'Descuento global'), 'Descuento global −$1.000 | Monto neto $90.000 | IVA (19 %) $17.100 | Total CLP $107.100', 'no percent, no description, no exento');

    const lineOnly = await download(h, key, (await create(h, key, { items: FULL.items.slice(1, 2) })).invoice_id);
    t.equal(await totalsOf(lineOnly.bytes, 'Monto neto'), 'Monto neto $25.000 | IVA (19 %) $4.750 | Total CLP $29.750');
    t.notOk((await pdfToText(lineOnly.bytes)).includes('Descuento global'), 'no global discount');
  });

  t.test('without discounts, exempt lines or references: the invoice as before', async (t) => {
    const inv = await create(h, key, { client: { giro: undefined, comuna: undefined, ciudad: undefined } });
    const pdf = await download(h, key, inv.invoice_id);
    const text = oneLine(await pdfToText(pdf.bytes));
    t.equal(await totalsOf(pdf.bytes, 'Subtotal'), 'Subtotal $10.000 | IVA (19 %) $1.900 | Total CLP $11.900', "today's totals");
    for (const absent of ['Descuento', 'Exento', 'Monto neto', 'Monto exento', 'Referencias', 'Giro', 'Comuna', 'Ciudad']) {
      t.notOk(text.includes(absent), `no "${absent}"`);
    }
  });

  t.test('an exempt invoice: every line exempt, none marked; its discount off the exempt amount', async (t) => {
    const inv = await create(h, key, { is_tax_exempt: true, items: FULL.items.slice(0, 1), global_discount: { percent: 10 } });
    const pdf = await download(h, key, inv.invoice_id);
    const text = oneLine(await pdfToText(pdf.bytes));
    t.equal(await totalsOf(pdf.bytes, 'Descuento global'), 'Descuento global 10 % −$9.100 | Monto exento $81.900 | Exento de impuestos $0 | Total CLP $81.900');
    t.notOk(/Consultoría de diseño Exento/.test(text), 'no line marked: the invoice is');
  });

  t.test('forty references: the table continues on the next page, its labels again', async (t) => {
    const references = Array.from({ length: 40 }, (_, i) => ({ type: '801', folio: `45000${String(i).padStart(5, '0')}`, date: '2026-11-20', reason: `Orden de compra de la sucursal número ${i + 1}` }));
    const res = await download(h, key, (await create(h, key, { references })).invoice_id);
    const pages = (await pdfToText(res.bytes)).split('\f').filter((p) => p.trim() !== '').map(oneLine);
    t.ok(pages.length >= 2, `${pages.length} pages`);
    for (let i = 0; i < 40; i++) t.ok(pages.some((p) => p.includes(`45000${String(i).padStart(5, '0')}`)), `reference ${i + 1}`);
    t.ok(pages[1]!.startsWith('Tipo de documento Folio Fecha Razón'), 'the second page opens with the labels');
    t.ok(pages.at(-1)!.includes('Total CLP'), 'the totals after the table');
  });
});

t.test('the cedible copy of a factura', async (t) => {
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile });
  const { key, merchantId } = await h.key(['*']);
  await dteMerchant(h, merchantId, sii, [
    { type: 33, from: 1, to: 10 },
    { type: 34, from: 1, to: 10 },
  ]);

  t.test('?copy=cedible: CEDIBLE and the receipt box, beside the original it never replaces', async (t) => {
    const inv = await create(h, key, FULL);
    const cedible = await download(h, key, inv.invoice_id, '?copy=cedible');
    t.equal(cedible.status, 200);
    t.equal(cedible.headers['content-type'], 'application/pdf');
    t.match(cedible.headers['content-disposition'], new RegExp(`filename="${inv.invoice_number}-cedible\\.pdf"`));
    const text = oneLine(await pdfToText(cedible.bytes));
    for (const field of ['ACUSE DE RECIBO', 'Nombre:', 'R.U.T.:', 'Fecha:', 'Recinto:', 'Firma:', 'CEDIBLE']) t.ok(text.includes(field), field);
    t.ok(text.includes(LEY_19983), 'the sentence of Ley 19.983, whole');
    for (const sii of ['FACTURA ELECTRÓNICA', 'N.º 1', 'Timbre Electrónico SII']) t.ok(text.includes(sii), `the DTE's ${sii}`);
    t.ok(text.includes('Monto neto $104.400'), 'the same document otherwise');
    t.equal(await pageCount(cedible.bytes), 1, 'the receipt box fits beside the timbre: no page of its own');

    const original = await download(h, key, inv.invoice_id);
    t.equal(original.status, 200);
    t.match(original.headers['content-disposition'], new RegExp(`filename="${inv.invoice_number}\\.pdf"`));
    const originalText = oneLine(await pdfToText(original.bytes));
    t.ok(originalText.includes('Timbre Electrónico SII'));
    t.notOk(originalText.includes('CEDIBLE') || originalText.includes('ACUSE DE RECIBO'), 'the original: no cedible marks');
    const stored = await h.sql<{ sha256: string }[]>`SELECT sha256 FROM invoice_pdfs WHERE invoice_id = ${inv.invoice_id}`;
    t.equal(stored.length, 1, 'one stored document');
    t.equal(stored[0]!.sha256, original.headers['x-content-sha256'], 'and it is the original');
    t.not(cedible.headers['x-content-sha256'], stored[0]!.sha256);

    const again = await download(h, key, inv.invoice_id, '?copy=cedible');
    t.ok(again.bytes.equals(cedible.bytes), 'rendered anew, the same bytes');
    t.ok((await download(h, key, inv.invoice_id)).bytes.equals(original.bytes), 'the original still served after it');
  });

  t.test('a factura exenta (34) has one too', async (t) => {
    const inv = await create(h, key, { is_tax_exempt: true });
    const text = oneLine(await pdfToText((await download(h, key, inv.invoice_id, '?copy=cedible')).bytes));
    t.ok(text.includes('FACTURA NO AFECTA O EXENTA ELECTRÓNICA') && text.includes('CEDIBLE') && text.includes(LEY_19983));
  });

  t.test('refused: a copy that does not exist, an invoice without a factura', async (t) => {
    const inv = await create(h, key);
    const bad = await download(h, key, inv.invoice_id, '?copy=original');
    t.equal(bad.status, 422);
    t.equal(bad.json.code, 'validation_error');
    t.equal(bad.json.details.errors[0].path, 'copy');
    t.match(bad.json.details.errors[0].message, /cedible/, 'names the value allowed');

    const usd = await usdInvoice(h, key, merchantId);
    const draft = await create(h, key, { send_immediately: false });
    for (const [what, id] of [['a USD invoice (no DTE)', usd.invoice_id], ['a draft', draft.invoice_id]] as const) {
      const res = await download(h, key, id, '?copy=cedible');
      t.equal(res.status, 422, what);
      t.same(res.json.details.errors.map((e: { path: string }) => e.path), ['copy'], what);
      t.match(res.json.message, /only a factura \(DTE type 33 or 34\) has a cedible copy/, what);
    }
    t.equal((await download(h, key, '0191e4b2-7c1a-7000-8000-0000000000aa', '?copy=cedible')).status, 404, 'an unknown invoice');
  });

  t.test('the hosted page links the cedible copy of a factura, and serves it', async (t) => {
    const inv = await create(h, key);
    const pageUrl = inv.public_url.slice(PUBLIC.length);
    const html = (await h.app.inject({ method: 'GET', url: pageUrl })).body.replaceAll('&#x3D;', '=');
    t.ok(html.includes(`href="${inv.public_url}/pdf?copy=cedible"`), 'the link');
    t.ok(html.includes('Descargar copia cedible'));
    const res = await h.app.inject({ method: 'GET', url: `${pageUrl}/pdf?copy=cedible` });
    t.equal(res.statusCode, 200);
    t.ok(oneLine(await pdfToText(res.rawPayload)).includes('CEDIBLE'));
    t.equal((await h.app.inject({ method: 'GET', url: `${pageUrl}/pdf?copy=bogus` })).statusCode, 404, 'an unknown copy');
    t.notOk(oneLine(await pdfToText((await h.app.inject({ method: 'GET', url: `${pageUrl}/pdf` })).rawPayload)).includes('CEDIBLE'), 'the plain link: the original');

    const usd = await usdInvoice(h, key, merchantId);
    const usdPage = usd.public_url.slice(PUBLIC.length);
    t.notOk((await h.app.inject({ method: 'GET', url: usdPage })).body.includes('cedible'), 'no link without a factura');
    t.equal((await h.app.inject({ method: 'GET', url: `${usdPage}/pdf?copy=cedible` })).statusCode, 404);
  });

  t.test('the renderer refuses a cedible copy without a factura to print', async (t) => {
    const inv = await usdInvoice(h, key, merchantId);
    const row = (await getInvoiceWithItems(h.sql, merchantId, inv.invoice_id))!;
    const merchant = (await getMerchant(h.sql, merchantId))!;
    t.throws(() => renderInvoicePdf(row, merchant, { draft: false, publicUrl: inv.public_url, copy: 'cedible' }), /cedible copy/);
  });
});

// SCREENSHOTS_DIR=docs/screenshots: a cedible factura with every field, as an image for review.
t.test('the cedible factura as a reader sees it, for docs/screenshots', { skip: process.env.SCREENSHOTS_DIR ? false : 'SCREENSHOTS_DIR is not set' }, async (t) => {
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile });
  const { key, merchantId } = await h.key(['*']);
  await dteMerchant(h, merchantId, sii, [{ type: 33, from: 1, to: 10 }]);
  const inv = await create(h, key, FULL);
  const out = path.join(path.resolve(process.env.SCREENSHOTS_DIR!), 'invoice-pdf-cedible.png');
  await firstPagePng((await download(h, key, inv.invoice_id, '?copy=cedible')).bytes, out);
  t.ok((await stat(out)).size > 10_000, 'invoice-pdf-cedible.png written');
});
