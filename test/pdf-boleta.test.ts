// A boleta printed (docs/decisions.md §20): "BOLETA ELECTRÓNICA" (39) or "BOLETA NO AFECTA O EXENTA
// ELECTRÓNICA" (41) in the SII's box, the consumer and never the generic RUT, prices and totals
// with VAT as the boleta states them, a 39's "El IVA de esta boleta es $X", and the timbre; the
// same boleta as a ticket on an 80 mm roll (?format=ticket), stored apart from the A4 document.
// Read back by poppler (pdftotext, pdfinfo, pdftoppm) and ZXing for the barcode.
// With SCREENSHOTS_DIR set, the A4 boleta and its ticket are saved there as boleta-a4.png and boleta-ticket.png.
import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { boletaDteContent, issueBoleta, type BoletaType } from '../src/dte/boleta.js';
import { parseCaf } from '../src/dte/caf.js';
import { readPkcs12 } from '../src/dte/certificate.js';
import type { IssuerSetup } from '../src/dte/issue.js';
import { getInvoiceWithItems, type InvoiceWithItems } from '../src/invoices/queries.js';
import { getMerchant } from '../src/merchants/queries.js';
import { setTaxProfile } from '../src/merchants/service.js';
import { API_PREFIX } from '../src/http/urls.js';
import { renderInvoicePdf, type PrintedDte } from '../src/pdf/render.js';
import { testApp } from './helpers/app.js';
import { cafFile, DTE_PROFILE, dteMerchant, merchantPkcs12, siiAuthority } from './helpers/dte-fixtures.js';
import { facturaBody, invoiceBody } from './helpers/fixtures.js';
import { pdf417OnFirstPage } from './helpers/pdf417.js';
import { firstPagePng, pdfToText } from './helpers/pdftotext.js';

const run = promisify(execFile);
const sii = siiAuthority();
t.teardown(() => sii.cleanup());

const identity = readPkcs12(merchantPkcs12({ password: 'clave' }), 'clave');
const cafs = { 39: parseCaf(cafFile(sii, { rut: DTE_PROFILE.rut, type: 39, from: 1, to: 10 })), 41: parseCaf(cafFile(sii, { rut: DTE_PROFILE.rut, type: 41, from: 1, to: 10 })) };
const issuer: IssuerSetup = {
  rut: DTE_PROFILE.rut,
  razonSocial: DTE_PROFILE.razon_social,
  giro: DTE_PROFILE.giro,
  acteco: DTE_PROFILE.acteco,
  direccion: DTE_PROFILE.direccion,
  comuna: DTE_PROFILE.comuna,
  ciudad: DTE_PROFILE.ciudad,
  resolucionNumero: DTE_PROFILE.resolucion_numero,
  resolucionFecha: DTE_PROFILE.resolucion_fecha,
  timezone: 'America/Santiago',
};

/** The invoice's boleta as issuance stamps it: its TED is the barcode's content. */
function boletaOf(invoice: InvoiceWithItems, type: BoletaType, folio: number): PrintedDte {
  const content = boletaDteContent(invoice, type, folio, issuer);
  const issued = issueBoleta({ content, issuer, caf: cafs[type], identity, now: new Date('2026-03-02T15:04:05Z') });
  return { type, folio, ted: issued.ted, resolutionNumber: issuer.resolucionNumero, resolutionDate: issuer.resolucionFecha };
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ');

/** Each page's size in points, as pdfinfo reads it. */
async function pageSizes(pdf: Buffer): Promise<{ width: number; height: number }[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'boleta-'));
  try {
    await writeFile(path.join(dir, 'doc.pdf'), pdf);
    const { stdout } = await run('pdfinfo', ['-f', '1', '-l', '999', path.join(dir, 'doc.pdf')]);
    return [...stdout.matchAll(/Page +\d+ size: +([\d.]+) x ([\d.]+) pts/g)].map((m) => ({ width: Number(m[1]), height: Number(m[2]) }));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function checkTimbre(t: Test, pdf: Buffer, dte: PrintedDte) {
  const found = await pdf417OnFirstPage(pdf);
  t.equal(found.length, 1, 'one PDF417 symbol');
  t.ok(found[0] && Buffer.from(found[0].bytes).equals(Buffer.from(dte.ted, 'latin1')), "the barcode's bytes are the boleta's TED exactly");
}

t.test('the printed boleta, rendered', async (t) => {
  const h = await testApp(t);
  const m = await h.merchant({ name: 'Tienda Boleta', payment_provider: null });
  await setTaxProfile(h.sql, m.id, DTE_PROFILE);
  const { key } = await h.key(['*'], { merchantId: m.id });
  const merchant = (await getMerchant(h.sql, m.id))!;

  /** A consumer's invoice as the API stores it: 2 × $5.000 and 1 × $990, net, 19 % VAT. */
  async function consumerInvoice(extra: Record<string, unknown> = {}) {
    const res = await h.api('POST', '/invoices', {
      key,
      body: invoiceBody({
        client: { name: 'Ana Muñoz', email: 'ana@example.cl' },
        items: [
          { description: 'Café de grano, 1 kg', quantity: 2, unit_price: 5000 },
          { description: 'Filtros de papel', quantity: 1, unit_price: 990 },
        ],
        send_immediately: true,
        ...extra,
      }),
    });
    if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
    return (await getInvoiceWithItems(h.sql, m.id, res.body.invoice_id as string))!;
  }
  const render = (invoice: InvoiceWithItems, dte: PrintedDte, format?: 'ticket') =>
    renderInvoicePdf(invoice, merchant, { draft: false, publicUrl: 'https://pay.example/i/x', dte, ...(format ? { format } : {}) });

  t.test('a 39 in Spanish: the box, the consumer, amounts with VAT, the VAT line and the timbre', async (t) => {
    const invoice = await consumerInvoice();
    const dte = boletaOf(invoice, 39, 7);
    const pdf = await render(invoice, dte);
    const text = oneLine(await pdfToText(pdf));
    t.ok(text.includes('BOLETA ELECTRÓNICA'), 'the document name');
    t.notOk(text.includes('NO AFECTA'));
    t.ok(text.includes('N.º 7'), 'the folio');
    t.equal(text.split('R.U.T.: 76.086.428-5').length - 1, 2, "the issuer's R.U.T.: in its lines and in the box");
    t.ok(text.includes('S.I.I. - PEÑALOLÉN'), 'the SII unit');
    t.ok(text.includes('Fecha de emisión') && text.includes(invoice.invoice_number!), 'the date and the internal number');
    t.notOk(text.includes('Factura'), 'nothing calls it a factura');
    t.ok(text.includes('CLIENTE Ana Muñoz Correo: ana@example.cl'), "the consumer's name and e-mail");
    t.notOk(/66\.?666\.?666/.test(text), 'never the generic RUT');
    // Net 2 × 5000 + 990 = 10990, VAT round(10990 × 0.19) = 2088, total 13078. The boleta's lines
    // carry VAT: 2 × 5950 = 11900 and 990 × 1.19 = 1178.1 → 1178; 11900 + 1178 = 13078.
    t.ok(text.includes('$5.950 $11.900'), 'the first line: unit price and amount with VAT');
    t.ok(text.includes('$1.178'), 'the second line with VAT');
    t.ok(text.includes('Total CLP $13.078'), 'the total');
    t.ok(text.includes('El IVA de esta boleta es $2.088'), 'the VAT it contains, on its own line');
    t.notOk(text.includes('Monto neto'), 'no net amount: a boleta shows prices with VAT');
    t.ok(text.includes('Timbre Electrónico SII'));
    t.ok(text.includes('Res. 0 de 22 de agosto de 2014'), "certificación's resolution 0 prints as 0");
    t.ok(text.includes('Verifique documento: www.sii.cl'));
    await checkTimbre(t, pdf, dte);
    if (process.env.SCREENSHOTS_DIR) await firstPagePng(pdf, path.resolve(process.env.SCREENSHOTS_DIR, 'boleta-a4.png'), 60);
  });

  t.test('a 41: its name, the exempt total and no VAT line', async (t) => {
    const invoice = await consumerInvoice({ is_tax_exempt: true });
    const dte = boletaOf(invoice, 41, 3);
    const pdf = await render(invoice, dte);
    const text = oneLine(await pdfToText(pdf));
    t.ok(text.includes('BOLETA NO AFECTA O EXENTA ELECTRÓNICA'));
    t.ok(text.includes('N.º 3'));
    t.ok(text.includes('$5.000 $10.000'), 'exempt lines as they are');
    t.ok(text.includes('Total CLP $10.990'));
    t.notOk(text.includes('IVA'), 'no VAT line, nor any VAT');
    await checkTimbre(t, pdf, dte);
  });

  t.test("in English: the SII's texts and its VAT legend in Spanish, the rest in English", async (t) => {
    const invoice = await consumerInvoice({ locale: 'en' });
    const text = oneLine(await pdfToText(await render(invoice, boletaOf(invoice, 39, 8))));
    t.ok(text.includes('El IVA de esta boleta es $2.088'), 'the legend as the SII words it, in pesos as Chile writes them');
    t.notOk(text.includes('The VAT included'), 'not translated');
    t.ok(text.includes('CUSTOMER Ana Muñoz'));
    t.ok(text.includes('BOLETA ELECTRÓNICA') && text.includes('Verifique documento: www.sii.cl'));
  });

  t.test('the ticket: 80 mm wide, one column, the same amounts, the timbre scanned', async (t) => {
    const invoice = await consumerInvoice({ items: Array.from({ length: 3 }, (_, i) => ({ description: `Producto ${i + 1} con una descripción que no cabe en una línea del rollo`, quantity: i + 1, unit_price: 1500 })) });
    const dte = boletaOf(invoice, 39, 9);
    const pdf = await render(invoice, dte, 'ticket');
    const sizes = await pageSizes(pdf);
    t.equal(sizes.length, 1, 'one page');
    t.equal(sizes[0]!.width, 226.77, '80 mm wide');
    t.ok(sizes[0]!.height > 300 && sizes[0]!.height < 900, `as tall as its content (${sizes[0]!.height} pt)`);
    const text = oneLine(await pdfToText(pdf));
    // Net 1500 × 6 = 9000, VAT 1710, total 10710; prices with VAT 1785.
    t.ok(text.includes('BOLETA ELECTRÓNICA') && text.includes('N.º 9'));
    t.ok(text.includes('3 × $1.785 $5.355'), 'quantity × price and the amount');
    t.ok(text.includes('Total CLP $10.710'));
    t.ok(text.includes('El IVA de esta boleta es $1.710'));
    t.ok(text.includes('Timbre Electrónico SII') && text.includes('Verifique documento: www.sii.cl'));
    await checkTimbre(t, pdf, dte);
    t.not((await render(invoice, dte)).toString('latin1'), pdf.toString('latin1'), 'another document than the A4 one');
    t.ok((await render(invoice, dte, 'ticket')).equals(pdf), 'the same bytes on every rendering');
    if (process.env.SCREENSHOTS_DIR) await firstPagePng(pdf, path.resolve(process.env.SCREENSHOTS_DIR, 'boleta-ticket.png'), 100);
  });

  t.test('a ticket of 200 long lines goes on as more pages, each as tall as a PDF page may be', async (t) => {
    const description = Array.from({ length: 10 }, () => 'Una línea larga de la descripción de este producto').join('\n');
    const invoice = await consumerInvoice({ items: Array.from({ length: 200 }, () => ({ description, quantity: 1, unit_price: 100 })) });
    const dte = boletaOf(invoice, 39, 10);
    const pdf = await render(invoice, dte, 'ticket');
    const sizes = await pageSizes(pdf);
    t.ok(sizes.length > 1, `${sizes.length} pages`);
    t.ok(sizes.every((s) => s.width === 226.77 && s.height <= 14_400));
    t.ok(sizes.at(-1)!.height < 14_400, 'the last as tall as what is left');
  });

  t.test('a factura does not print as a ticket', async (t) => {
    const invoice = await consumerInvoice();
    const factura: PrintedDte = { ...boletaOf(invoice, 39, 11), type: 33 };
    t.throws(() => render(invoice, factura, 'ticket'), /only a boleta/);
  });
});

t.test('GET /invoices/{id}/pdf?format=ticket', async (t) => {
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile });
  const m = await h.merchant({ payment_provider: null });
  const { key, merchantId } = await h.key(['*'], { merchantId: m.id });
  await dteMerchant(h, merchantId, sii, [
    { type: 33, from: 1, to: 10 },
    { type: 39, from: 1, to: 10 },
  ]);
  const send = async (body: Record<string, unknown>) => {
    const res = await h.api('POST', '/invoices', { key, body: { ...body, send_immediately: true } });
    if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
    return (await h.api('GET', `/invoices/${res.body.invoice_id as string}`, { key })).body as { id: string; dte_type: number };
  };
  const get = async (id: string, query = '') => {
    const res = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/invoices/${id}/pdf${query}`, headers: { 'x-api-key': key } });
    return { status: res.statusCode, headers: res.headers, bytes: res.rawPayload, json: res.headers['content-type']?.toString().startsWith('application/json') ? res.json() : null };
  };

  const boleta = await send(invoiceBody());
  t.equal(boleta.dte_type, 39, "a consumer's invoice has a boleta");
  const letter = await get(boleta.id);
  const ticket = await get(boleta.id, '?format=ticket');
  t.equal(letter.status, 200);
  t.equal(ticket.status, 200);
  t.match(ticket.headers['content-disposition'], /-ticket\.pdf"$/, 'named as the ticket');
  t.not(ticket.headers['x-content-sha256'], letter.headers['x-content-sha256'], 'the ticket is another document');
  t.equal((await pageSizes(ticket.bytes))[0]!.width, 226.77);
  t.equal((await pageSizes(letter.bytes))[0]!.width, 595.28, 'the A4 document');
  for (const [query, first] of [['', letter], ['?format=a4', letter], ['?format=ticket', ticket]] as const) {
    const again = await get(boleta.id, query);
    t.ok(again.bytes.equals(first.bytes), `${query || 'the document'}: the same bytes again`);
  }
  const stored = await h.sql`SELECT variant FROM invoice_pdf_variants WHERE invoice_id = ${boleta.id}`;
  t.same(stored.map((r) => r.variant), ['ticket'], 'the ticket stored apart from the document');
  const cedible = await get(boleta.id, '?copy=cedible');
  t.equal(cedible.status, 422, 'a boleta has no cedible copy');
  t.same(cedible.json.details.errors.map((e: { path: string }) => e.path), ['copy']);

  const factura = await send(facturaBody());
  t.equal(factura.dte_type, 33);
  for (const query of ['?format=ticket', '?format=ticket&copy=cedible']) {
    const res = await get(factura.id, query);
    t.equal(res.status, 422, `a factura's ${query}: 422`);
    t.equal(res.json.code, 'validation_error');
    t.same(res.json.details.errors.map((e: { path: string }) => e.path), ['format']);
  }
  t.equal((await get(factura.id, '?format=a4&copy=cedible')).status, 200, 'the cedible copy on A4 as before');

  const draft = await h.api('POST', '/invoices', { key, body: invoiceBody() });
  t.equal((await get(draft.body.invoice_id as string, '?format=ticket')).status, 422, 'a draft has no boleta yet');
  const unknown = await get(draft.body.invoice_id as string, '?format=receipt');
  t.equal(unknown.status, 422, 'an unknown format');
  t.same(unknown.json.details.errors.map((e: { path: string }) => e.path), ['format']);
});
