// Where an issued DTE shows beyond the API (docs/decisions.md §15): the invoice e-mail attaches the signed
// XML beside the PDF, and the PDF is SII's printed representation whose PDF417 barcode, read back
// by a decoder from the registry (ZXing), is the TED exactly.
import t from 'tap';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { prepareZXingModule, readBarcodes } from 'zxing-wasm/reader';
import { testApp } from './helpers/app.js';
import { dteMerchant, readDte, siiAuthority } from './helpers/dte-fixtures.js';
import { facturaBody } from './helpers/fixtures.js';
import { pdfToText } from './helpers/pdftotext.js';
import { startSmtpSink } from './helpers/smtp.js';

const run = promisify(execFile);
// Node has no fetch for file paths: ZXing's WebAssembly is handed over as bytes.
const wasm = readFileSync(createRequire(import.meta.url).resolve('zxing-wasm/reader/zxing_reader.wasm'));
prepareZXingModule({ overrides: { wasmBinary: wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength) as ArrayBuffer } });

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

/** The PDF417 symbols on the PDF's last page, rendered by poppler at 300 dpi. */
async function barcodes(pdf: Buffer) {
  await pdfToText(pdf); // installs poppler when missing
  const dir = await mkdtemp(path.join(os.tmpdir(), 'dte-email-'));
  try {
    await writeFile(path.join(dir, 'doc.pdf'), pdf);
    await run('pdftoppm', ['-png', '-r', '300', '-singlefile', '-f', '1', '-l', '1', path.join(dir, 'doc.pdf'), path.join(dir, 'page')]);
    return await readBarcodes(await readFile(path.join(dir, 'page.png')), { formats: ['PDF417'], tryHarder: true });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

t.test('the invoice e-mail carries the signed XML and a PDF whose timbre scans back to the TED', async (t) => {
  const smtp = await startSmtpSink(t);
  const h = await testApp(t, { SMTP_URL: smtp.url, SII_CERT_FILE: sii.certFile });
  await h.startWorker();
  const { key, merchantId } = await h.key(['*']);
  await dteMerchant(h, merchantId, sii, [{ type: 33, from: 41, to: 60 }]);

  const created = await h.api('POST', '/invoices', {
    key,
    body: facturaBody({ client: { name: 'Peñalolén Diseño Ltda', email: 'pagos@penalolen.cl' }, send_immediately: true }),
  });
  t.equal(created.status, 201);
  const [mail] = await smtp.waitFor(1, 60_000);
  const xml = mail!.attachments.find((a) => a.filename === 'DTE-33-41.xml');
  t.ok(xml, 'the XML is attached, named by type and folio');
  t.equal(xml!.contentType, 'application/xml');
  const download = await h.app.inject({ method: 'GET', url: `/api/v1/external/invoices/${created.body.invoice_id}/dte.xml`, headers: { 'x-api-key': key } });
  t.ok(Buffer.from(xml!.content).equals(download.rawPayload), 'the very bytes of GET dte.xml');
  const dte = readDte(Buffer.from(xml!.content));
  t.ok(dte.dteSignatureValid && dte.envelopeSignatureValid && dte.timbreValid, 'the attached document verifies');

  const pdf = mail!.attachments.find((a) => a.contentType === 'application/pdf');
  t.ok(pdf, 'the PDF is attached too');
  const text = (await pdfToText(Buffer.from(pdf!.content))).replace(/\s+/g, ' ');
  t.match(text, /FACTURA ELECTR[ÓO]NICA/);
  t.match(text, /N\.º 41/);
  t.match(text, /Timbre Electr[óo]nico SII/);
  t.match(text, /Verifique documento: www\.sii\.cl/);
  const codes = await barcodes(Buffer.from(pdf!.content));
  t.equal(codes.length, 1, 'one PDF417 barcode');
  t.ok(Buffer.from(codes[0]!.bytes).equals(Buffer.from(dte.ted, 'latin1')), "the barcode's bytes are the document's TED");
});
