// The PDF417 symbols of a PDF as a reader other than the renderer finds them: its first page
// rendered by poppler at 300 dpi, decoded by ZXing (zxing-wasm).
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { prepareZXingModule, readBarcodes } from 'zxing-wasm/reader';
import { firstPagePng } from './pdftotext.js';

// Node has no fetch for file paths: ZXing's WebAssembly is handed over as bytes.
const wasm = readFileSync(createRequire(import.meta.url).resolve('zxing-wasm/reader/zxing_reader.wasm'));
prepareZXingModule({ overrides: { wasmBinary: wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength) as ArrayBuffer } });

export async function pdf417OnFirstPage(pdf: Buffer) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pdf417-'));
  try {
    const png = path.join(dir, 'page.png');
    await firstPagePng(pdf, png, 300);
    return await readBarcodes(await readFile(png), { formats: ['PDF417'], tryHarder: true });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
