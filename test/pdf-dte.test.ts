// The invoice PDF as SII's printed representation of a DTE (docs/decisions.md §15): the red box at the top
// right (R.U.T., document name, N.º folio) with the SII unit under it, and near the bottom the
// timbre, the TED as a PDF417 barcode, with its three lines. Read back by other programs than the
// renderer: poppler's pdftotext for the text, pdftoppm for the pixels, and ZXing (zxing-wasm) for
// the barcode, whose bytes must be the TED's ISO-8859-1 bytes exactly.
import t from 'tap';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { prepareZXingModule, readBarcodes } from 'zxing-wasm/reader';
import { getInvoiceWithItems } from '../src/invoices/queries.js';
import { getMerchant } from '../src/merchants/queries.js';
import { setTaxProfile } from '../src/merchants/service.js';
import { renderInvoicePdf, type PrintedDte } from '../src/pdf/render.js';
import { testApp, type TestApp } from './helpers/app.js';
import { firstPagePng, pdfToText } from './helpers/pdftotext.js';
import { LEGAL_PROFILE } from './helpers/fixtures.js';

const run = promisify(execFile);

// Node has no fetch for file paths: ZXing's WebAssembly is handed over as bytes.
const wasm = readFileSync(createRequire(import.meta.url).resolve('zxing-wasm/reader/zxing_reader.wasm'));
prepareZXingModule({ overrides: { wasmBinary: wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength) as ArrayBuffer } });

const PROFILE = { ...LEGAL_PROFILE, resolucion_numero: 80, resolucion_fecha: '2014-08-22' };

/** Base64 of the length a 512-bit CAF key or signature has, from a seed: the same on every run. */
const b64 = (seed: string) => `${createHash('sha512').update(seed).digest('base64').slice(0, 86)}==`;

/**
 * A TED shaped like SII's (Instructivo técnico, anexo 2): the DD with the receiver's name and the
 * first item in Spanish (Ñ, á, í), the CAF, the timestamp and the signature, no whitespace between
 * tags. Its signatures are not real ones: the PDF prints the bytes, whatever they sign.
 */
function tedFor(type: PrintedDte['type'], folio: number): string {
  return (
    `<TED version="1.0"><DD><RE>76086428-5</RE><TD>${type}</TD><F>${folio}</F><FE>2026-03-15</FE><RR>12345678-5</RR>` +
    `<RSR>Comercial Ñandú Pérez Limitada</RSR><MNT>11900</MNT><IT1>Consultoría de diseño, año 2026</IT1>` +
    `<CAF version="1.0"><DA><RE>76086428-5</RE><RS>COMERCIAL LOS ANDES SPA</RS><TD>${type}</TD><RNG><D>1001</D><H>1100</H></RNG>` +
    `<FA>2026-01-10</FA><RSAPK><M>${b64(`M${type}`)}</M><E>Aw==</E></RSAPK><IDK>100</IDK></DA>` +
    `<FRMA algoritmo="SHA1withRSA">${b64(`FRMA${type}`)}</FRMA></CAF><TSTED>2026-03-15T10:38:25</TSTED></DD>` +
    `<FRMT algoritmo="SHA1withRSA">${b64(`FRMT${type}${folio}`)}</FRMT></TED>`
  );
}

/** A printed DTE; a credit note (61) cancels factura electrónica N.º 1042 of 15 March 2026. */
function dteOf(type: PrintedDte['type'], folio = 1042): PrintedDte {
  const dte = { type, folio, ted: tedFor(type, folio), resolutionNumber: 80, resolutionDate: '2014-08-22' };
  return type === 61 ? { ...dte, reference: { type: '33', folio: '1042', date: '2026-03-15' } } : dte;
}

/** pdftoppm's rendering of one page (1-based), in the format asked for. */
async function rasterise(pdf: Buffer, page: number, dpi: number, format: 'png' | 'ppm'): Promise<Buffer> {
  await pdfToText(pdf); // installs poppler when missing
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pdf-dte-'));
  try {
    await writeFile(path.join(dir, 'doc.pdf'), pdf);
    const p = String(page);
    // PPM is pdftoppm's own format, asked for by no flag.
    await run('pdftoppm', [...(format === 'png' ? ['-png'] : []), '-r', String(dpi), '-f', p, '-l', p, '-singlefile', path.join(dir, 'doc.pdf'), path.join(dir, 'page')]);
    return await readFile(path.join(dir, `page.${format}`));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface Pixels {
  width: number;
  height: number;
  data: Buffer;
}

/** A binary PPM (P6, maxval 255), as pdftoppm writes it. */
function parsePpm(ppm: Buffer): Pixels {
  const header = /^P6\s+(\d+)\s+(\d+)\s+255\s/.exec(ppm.subarray(0, 40).toString('latin1'));
  if (!header) throw new Error('not a P6 PPM');
  return { width: Number(header[1]), height: Number(header[2]), data: ppm.subarray(header[0].length) };
}

/** Red pixels (the red box's ink) inside and outside the top right corner of the page. */
function redPixels(px: Pixels): { topRight: number; elsewhere: number } {
  let topRight = 0;
  let elsewhere = 0;
  for (let y = 0; y < px.height; y++) {
    for (let x = 0; x < px.width; x++) {
      const i = 3 * (y * px.width + x);
      const [r, g, b] = [px.data[i]!, px.data[i + 1]!, px.data[i + 2]!];
      if (r < 170 || g > 90 || b > 90) continue;
      if (x > px.width / 2 && y < px.height / 4) topRight++;
      else elsewhere++;
    }
  }
  return { topRight, elsewhere };
}

/** The PDF417 symbols ZXing finds on a page rendered at 300 dpi. */
async function barcodesOn(pdf: Buffer, page: number) {
  const png = await rasterise(pdf, page, 300, 'png');
  return readBarcodes(png, { formats: ['PDF417'], tryHarder: true });
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ');

let seq = 0;

async function issued(h: TestApp, key: string, extra: Record<string, unknown> = {}) {
  seq += 1;
  const res = await h.api('POST', '/invoices', {
    key,
    body: {
      client: { name: `Comercial Ñandú Pérez ${seq}`, email: `pagos${seq}@andes.cl`, rut: '12.345.678-5', address: 'Av. Irarrázaval 2401, Ñuñoa' },
      due_date: '2099-12-31',
      items: [{ description: 'Consultoría de diseño, año 2026', quantity: 2, unit_price: 5000 }],
      send_immediately: true,
      ...extra,
    },
  });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
  return res.body as { invoice_id: string; invoice_number: string; public_url: string };
}

t.test('the printed representation of a DTE', async (t) => {
  const h = await testApp(t);
  const m = await h.merchant({ name: 'Tienda DTE', payment_provider: null });
  await setTaxProfile(h.sql, m.id, PROFILE);
  const { key } = await h.key(['*'], { merchantId: m.id });
  const merchant = (await getMerchant(h.sql, m.id))!;

  /** An issued invoice's PDF, rendered as its DTE's when one is given. */
  async function pdfOf(extra: Record<string, unknown>, dte?: PrintedDte) {
    const inv = await issued(h, key, extra);
    const row = (await getInvoiceWithItems(h.sql, m.id, inv.invoice_id))!;
    const pdf = await renderInvoicePdf(row, merchant, { draft: false, publicUrl: inv.public_url, ...(dte ? { dte } : {}) });
    return { inv, row, pdf };
  }

  t.test('factura electrónica (33) in Spanish: the red box, the SII unit, the timbre and its lines', async (t) => {
    const dte = dteOf(33);
    const { inv, pdf } = await pdfOf({}, dte);
    const text = oneLine(await pdfToText(pdf));
    t.equal(text.split('R.U.T.: 76.086.428-5').length - 1, 2, "the issuer's R.U.T. with dots: in the issuer's lines and in the box");
    t.ok(text.includes('FACTURA ELECTRÓNICA'), 'the document name');
    t.ok(text.includes('N.º 1042'), 'the folio');
    t.ok(text.includes('S.I.I. - ÑUÑOA'), "the SII unit: the issuer's comuna in capitals");
    t.ok(text.includes('Timbre Electrónico SII'));
    t.ok(text.includes('Res. 80 de 22 de agosto de 2014'), 'the resolution, dated in Spanish');
    t.ok(text.includes('Verifique documento: www.sii.cl'));
    t.ok(text.includes('Factura N.º') && text.includes(inv.invoice_number), "the invoice's own number, beside the dates");
    t.notOk(text.includes('NO AFECTA'), 'not the exempt invoice');

    const red = redPixels(parsePpm(await rasterise(pdf, 1, 50, 'ppm')));
    t.ok(red.topRight > 500, `red ink at the top right (${red.topRight} pixels)`);
    t.equal(red.elsewhere, 0, 'and nowhere else');

    const found = await barcodesOn(pdf, 1);
    t.equal(found.length, 1, 'one PDF417 symbol on the page');
    const code = found[0]!;
    t.equal(code.format, 'PDF417');
    t.ok(code.isValid, code.error);
    const expected = Buffer.from(dte.ted, 'latin1');
    t.ok(Buffer.from(code.bytes).equals(expected), "the barcode's bytes are the TED's ISO-8859-1 bytes exactly");
    t.ok(Buffer.from(code.bytes).includes(Buffer.from([0xd1])) && !Buffer.from(code.bytes).includes(Buffer.from('Ñ', 'utf8')), 'Ñ as its one ISO-8859-1 byte, not as UTF-8');
    t.equal(code.text, dte.ted, 'read as ISO-8859-1 (the PDF417 default), the TED as signed');
    // Level 5 adds 64 error-correction codewords; the TED's bytes need between half as many
    // codewords (text compaction) and five sixths (byte compaction) plus a row's padding. Levels
    // 4 (32) and 6 (128) fall outside what ZXing reports as the correction's share.
    const share = Number.parseInt(JSON.parse(code.extra).ECLevel as string, 10);
    const n = expected.length;
    t.ok(share >= Math.floor(6400 / (64 + Math.ceil((5 * n) / 6) + 18)) && share <= Math.ceil(6400 / (64 + n / 2)), `error correction level 5 (${share} % of the codewords)`);

    const { width, height } = parsePpm(await rasterise(pdf, 1, 300, 'ppm'));
    const { topLeft, bottomRight } = code.position;
    t.ok(topLeft.x < width / 4 && bottomRight.x < width / 2, 'the barcode on the left');
    t.ok(topLeft.y > (height * 2) / 3, 'near the bottom');
    const mm = (px: number) => (px / 300) * 25.4;
    t.ok(mm(bottomRight.x - topLeft.x) >= 45 && mm(bottomRight.x - topLeft.x) <= 90, `${mm(bottomRight.x - topLeft.x).toFixed(1)} mm wide`);
    t.ok(mm(bottomRight.y - topLeft.y) >= 20 && mm(bottomRight.y - topLeft.y) <= 40, `${mm(bottomRight.y - topLeft.y).toFixed(1)} mm tall`);
  });

  t.test('factura no afecta o exenta (34) and nota de crédito (61): their names in the box', async (t) => {
    const exempt = await pdfOf({ is_tax_exempt: true }, dteOf(34, 7));
    const text = oneLine(await pdfToText(exempt.pdf));
    t.ok(text.includes('FACTURA NO AFECTA O EXENTA ELECTRÓNICA'), 'the exempt invoice, its name on two lines');
    t.ok(text.includes('N.º 7'));
    const [code] = await barcodesOn(exempt.pdf, 1);
    t.ok(code && Buffer.from(code.bytes).equals(Buffer.from(tedFor(34, 7), 'latin1')), 'its own TED');

    const credit = oneLine(await pdfToText((await pdfOf({}, dteOf(61, 3))).pdf));
    t.ok(credit.includes('NOTA DE CRÉDITO ELECTRÓNICA'));
    t.ok(credit.includes('N.º 3'));
    t.notOk(credit.replace('FACTURA ELECTRÓNICA (33)', '').includes('FACTURA ELECTRÓNICA'), 'no invoice name but the one it cancels');
  });

  t.test("a credit note prints SII's Referencias: the document it cancels, before its lines", async (t) => {
    const { pdf } = await pdfOf({}, dteOf(61, 3));
    const text = oneLine(await pdfToText(pdf));
    const [, block = ''] = /Referencias (.*) Descripción /.exec(text) ?? [];
    t.ok(block, 'a Referencias heading, above the table of items');
    // Each column's label over its value: pdftotext reads the labels, then the values.
    t.equal(block, 'Tipo de documento Folio Fecha Razón FACTURA ELECTRÓNICA (33) 1042 15 de marzo de 2026 Anula documento');
    const [code] = await barcodesOn(pdf, 1);
    t.ok(code && Buffer.from(code.bytes).equals(Buffer.from(tedFor(61, 3), 'latin1')), "the credit note's own TED");

    const english = oneLine(await pdfToText((await pdfOf({ locale: 'en' }, dteOf(61, 4))).pdf));
    t.ok(english.includes('Referencias') && english.includes('March 15, 2026') && english.includes('Anula documento'), "SII's words in Spanish, the date in the document's language");

    const inv = await issued(h, key);
    const row = (await getInvoiceWithItems(h.sql, m.id, inv.invoice_id))!;
    const { reference: _, ...bare } = dteOf(61);
    t.throws(() => renderInvoicePdf(row, merchant, { draft: false, publicUrl: inv.public_url, dte: bare }), /credit note/, 'a credit note without what it cancels');
    t.throws(
      () => renderInvoicePdf(row, merchant, { draft: false, publicUrl: inv.public_url, dte: { ...dteOf(33), reference: { type: '33', folio: '1', date: '2026-03-15' } } }),
      /credit note/,
      'an invoice with a reference',
    );
  });

  t.test('an English invoice: its labels in English, SII texts in Spanish, the date in English', async (t) => {
    const dte = dteOf(33, 1043);
    const { inv, pdf } = await pdfOf({ locale: 'en' }, dte);
    const text = oneLine(await pdfToText(pdf));
    for (const label of ['BILL TO', 'Issue date', 'Description', 'Tax ID (RUT): 76.086.428-5', 'Invoice No.', inv.invoice_number]) {
      t.ok(text.includes(label), `English: ${label}`);
    }
    t.equal(text.split('R.U.T.: 76.086.428-5').length - 1, 1, 'R.U.T. as SII writes it, in the box');
    for (const sii of ['FACTURA ELECTRÓNICA', 'N.º 1043', 'S.I.I. - ÑUÑOA', 'Timbre Electrónico SII', 'Verifique documento: www.sii.cl']) {
      t.ok(text.includes(sii), `Spanish: ${sii}`);
    }
    t.ok(text.includes('Res. 80 de August 22, 2014'), "the resolution's date in the document's language");
    t.notOk(text.includes('Fecha de emisión'), 'no Spanish labels');
    const [code] = await barcodesOn(pdf, 1);
    t.ok(code && Buffer.from(code.bytes).equals(Buffer.from(dte.ted, 'latin1')), 'the TED');
  });

  t.test('a long invoice: the timbre on the last page, clear of the table and totals', async (t) => {
    const items = Array.from({ length: 30 }, (_, i) => ({ description: `Hora de consultoría ${i + 1}`, quantity: 1, unit_price: 1000 }));
    const dte = dteOf(33, 1044);
    const { pdf } = await pdfOf({ items }, dte);
    const pages = (await pdfToText(pdf)).split('\f').filter((p) => p.trim() !== '');
    t.equal(pages.length, 2);
    t.notOk(pages[0]!.includes('Timbre Electrónico SII'), 'not on the first page');
    t.ok(pages[1]!.includes('Timbre Electrónico SII'), 'on the last');
    t.equal((await barcodesOn(pdf, 1)).length, 0, 'no barcode on the first page');
    const [code] = await barcodesOn(pdf, 2);
    t.ok(code && Buffer.from(code.bytes).equals(Buffer.from(dte.ted, 'latin1')), 'the TED, readable on the last page');
  });

  t.test('deterministic: the same invoice and DTE give the same bytes', async (t) => {
    const inv = await issued(h, key);
    const row = (await getInvoiceWithItems(h.sql, m.id, inv.invoice_id))!;
    const opts = { draft: false, publicUrl: inv.public_url, dte: dteOf(33, 1045) };
    const a = await renderInvoicePdf(row, merchant, opts);
    const b = await renderInvoicePdf(row, merchant, opts);
    t.ok(a.equals(b));
  });

  t.test('without a DTE the PDF is the invoice as before; a draft or a TED outside ISO-8859-1 is refused', async (t) => {
    const { row, inv, pdf } = await pdfOf({});
    const text = oneLine(await pdfToText(pdf));
    t.ok(text.includes('FACTURA') && text.includes(`N.º ${inv.invoice_number}`), 'the title and number at the top right');
    for (const absent of ['Timbre Electrónico SII', 'S.I.I.', 'FACTURA ELECTRÓNICA', 'www.sii.cl']) t.notOk(text.includes(absent), `no "${absent}"`);
    t.equal(redPixels(parsePpm(await rasterise(pdf, 1, 50, 'ppm'))).topRight, 0, 'no red box');
    t.equal((await barcodesOn(pdf, 1)).length, 0, 'no barcode');

    t.throws(() => renderInvoicePdf(row, merchant, { draft: true, publicUrl: inv.public_url, dte: dteOf(33) }), /draft/);
    const euro = { ...dteOf(33), ted: tedFor(33, 1042).replace('Limitada', 'Limitada €') };
    t.throws(() => renderInvoicePdf(row, merchant, { draft: false, publicUrl: inv.public_url, dte: euro }), 'a character with no ISO-8859-1 byte');
  });
});

// SCREENSHOTS_DIR=docs/screenshots: a factura electrónica's first page, as an image for review.
t.test('the DTE PDF as a reader sees it, for docs/screenshots', { skip: process.env.SCREENSHOTS_DIR ? false : 'SCREENSHOTS_DIR is not set' }, async (t) => {
  const h = await testApp(t);
  const m = await h.merchant({ name: 'Tienda DTE', payment_provider: 'sandbox' });
  await setTaxProfile(h.sql, m.id, PROFILE);
  const { key } = await h.key(['*'], { merchantId: m.id });
  const inv = await issued(h, key, { client: { name: 'Łukasz Müller', email: 'lukasz@example.cl', rut: '12345678-5', address: 'Av. Irarrázaval 2401, Ñuñoa' } });
  const row = (await getInvoiceWithItems(h.sql, m.id, inv.invoice_id))!;
  const pdf = await renderInvoicePdf(row, (await getMerchant(h.sql, m.id))!, { draft: false, publicUrl: inv.public_url, dte: dteOf(33) });
  const out = path.join(path.resolve(process.env.SCREENSHOTS_DIR!), 'invoice-pdf-dte.png');
  await firstPagePng(pdf, out);
  t.ok((await stat(out)).size > 10_000, 'invoice-pdf-dte.png written');
});
