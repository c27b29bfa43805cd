// What turns the invoice PDF into SII's printed representation of a DTE (docs/decisions.md §15): the red
// box at the top right and the timbre, the TED as a PDF417 barcode, near the bottom. Their texts
// are SII's and stay Spanish in a document of any language.
import bwipjs from 'bwip-js';
import { isBoletaType, type BoletaType } from '../dte/boleta.js';
import type { Reference } from '../dte/document.js';
import { formatDate } from '../format.js';
import type { Locale } from '../invoices/schemas.js';
import type { LegalProfile } from '../merchants/legal-profile.js';
import type { ReferenceTable } from './references.js';
import { pdfText } from './text.js';

/** The DTE a PDF prints: what the red box and the timbre show. */
export interface PrintedDte {
  type: 33 | 34 | 39 | 41 | 56 | 61;
  folio: number;
  /** The TED element exactly as signed (text of the ISO-8859-1 bytes, no whitespace between tags): the barcode's content. */
  ted: string;
  resolutionNumber: number;
  /** YYYY-MM-DD */
  resolutionDate: string;
  /**
   * An invoice printed as the credit note (61) that cancels it: the document it cancels, SII's
   * Referencia with CodRef 1. A note's own PDF names what it modifies among its references instead.
   */
  reference?: Reference;
}

const DOCUMENT_NAMES: Record<PrintedDte['type'], string> = {
  33: 'FACTURA ELECTRÓNICA',
  34: 'FACTURA NO AFECTA O EXENTA ELECTRÓNICA',
  39: 'BOLETA ELECTRÓNICA',
  41: 'BOLETA NO AFECTA O EXENTA ELECTRÓNICA',
  56: 'NOTA DE DÉBITO ELECTRÓNICA',
  61: 'NOTA DE CRÉDITO ELECTRÓNICA',
};

const SII_RED = '#d50000';
const INK = '#000000';

/** The red box's width: its three lines fit, the longest name on two. */
export const RED_BOX_WIDTH = 200;
const BOX_PAD = 10;
const BOX_BORDER = 2;

// The barcode. Error-correction level 5 is SII's. A module of 0.72 pt (0.254 mm) is 3 pixels at
// 300 dpi and 2 dots on a 203 dpi printer, so it scans from a render or a print (SII asks for
// over 200 dpi); 16 columns make it 8.7 cm wide and 2.5 to 3.4 cm tall, the longest TED (its
// names at the schema's 40 characters) taking 44 rows: above the 2 × 4.5 cm SII asks at least.
const MODULE = 0.72;
const COLUMNS = 16;
const ECLEVEL = 5;
const TEXT_SIZE = 8;
const TEXT_GAP = 5;

/** A boleta (docs/decisions.md §20): the consumer's document, which may print on a receipt printer's roll. */
export const isBoleta = (dte: PrintedDte): dte is PrintedDte & { type: BoletaType } => isBoletaType(dte.type);

/** "FACTURA ELECTRÓNICA N.º 1042": the document as SII names it. */
export function dteTitle(dte: PrintedDte): string {
  return `${DOCUMENT_NAMES[dte.type]} N.º ${dte.folio}`;
}

/**
 * The red box with its top right corner at (right, top): R.U.T. with dots, the document's name
 * and its folio, red text in a red frame, and under it the SII unit. Returns the y under it all.
 * `monochrome` draws it in black, for a receipt printer that prints one colour (a boleta's ticket).
 */
export function drawRedBox(doc: PDFKit.PDFDocument, dte: PrintedDte, issuer: LegalProfile, right: number, top: number, monochrome = false): number {
  const x = right - RED_BOX_WIDTH;
  const inner = RED_BOX_WIDTH - 2 * BOX_PAD;
  const colour = monochrome ? INK : SII_RED;
  doc.font('bold').fontSize(12).fillColor(colour);
  doc.text(pdfText(`R.U.T.: ${issuer.rut}`), x + BOX_PAD, top + BOX_PAD, { width: inner, align: 'center' });
  doc.moveDown(0.35).text(DOCUMENT_NAMES[dte.type], { width: inner, align: 'center' });
  doc.moveDown(0.35).text(`N.º ${dte.folio}`, { width: inner, align: 'center' });
  const boxBottom = doc.y + BOX_PAD;
  // Inset by half the border, which a stroke centres on its path: the frame stays inside the width.
  const half = BOX_BORDER / 2;
  doc.rect(x + half, top + half, RED_BOX_WIDTH - BOX_BORDER, boxBottom - top - BOX_BORDER).lineWidth(BOX_BORDER).strokeColor(colour).stroke();
  doc.font('bold').fontSize(10).fillColor(colour);
  doc.text(pdfText(`S.I.I. - ${issuer.comuna.toLocaleUpperCase('es-CL')}`), x, boxBottom + 6, { width: RED_BOX_WIDTH, align: 'center' });
  return doc.y;
}

/**
 * The "Referencias" of an invoice printed as its credit note: the type, folio and date of the
 * document it cancels and SII's reason, as the document's Referencia carries them (docs/decisions.md §15).
 */
export function cancelledDocumentTable(reference: Reference, locale: Locale): ReferenceTable {
  return {
    labels: { title: 'Referencias', columns: ['Tipo de documento', 'Folio', 'Fecha', 'Razón'] },
    rows: [
      {
        // What a credit note cancels is a 33 or a 34: a name of the box's.
        type: `${(DOCUMENT_NAMES as Record<string, string>)[reference.type]} (${reference.type})`,
        folio: String(reference.folio),
        date: formatDate(reference.date, locale),
        reason: reference.reason ?? 'Anula documento',
      },
    ],
  };
}

export interface Timbre {
  width: number;
  height: number;
  /** Draws the barcode and its three lines with the top left corner at (x, y). */
  draw(x: number, y: number): void;
}

/**
 * The timbre: the TED's ISO-8859-1 bytes as a PDF417 symbol, drawn as vector rectangles (sharp at
 * any zoom, the same bytes on every render), with "Timbre Electrónico SII", the resolution (its
 * date in the document's language) and where to verify it under the barcode.
 *
 * Within `maxWidth` (a receipt's roll) the symbol has fewer columns and more rows rather than
 * smaller modules: a module stays 2 dots of a 203 dpi printer, which its scanners read.
 */
export function timbre(doc: PDFKit.PDFDocument, dte: PrintedDte, locale: Locale, maxWidth = Infinity): Timbre {
  // A PDF417 row is 17 modules for each data column and for the start pattern and both row
  // indicators, 18 for the stop pattern.
  const columns = Math.min(COLUMNS, Math.floor((maxWidth / MODULE - 18) / 17) - 3);
  if (columns < 1) throw new Error(`a timbre does not fit in ${maxWidth} pt`);
  // binarytext: each character is one byte, as the TED's latin1 text is; bwip-js would otherwise
  // send the UTF-8 of anything past ASCII. A character past U+00FF has no latin1 byte and throws.
  // eclevel and columns are BWIPP's pdf417 options, which bwip-js's types do not list.
  const options: bwipjs.RawOptions & { eclevel: number; columns: number } = { bcid: 'pdf417', text: dte.ted, binarytext: true, eclevel: ECLEVEL, columns };
  const [symbol] = bwipjs.raw(options);
  if (!symbol || !('pixs' in symbol)) throw new Error('bwip-js returned no PDF417 matrix for the TED');
  const rows = symbol.pixs.length / symbol.pixx;
  const rowHeight = (symbol.pixy / rows) * MODULE;
  const barcodeW = symbol.pixx * MODULE;
  if (barcodeW > maxWidth) throw new Error(`a timbre of ${columns} columns is ${barcodeW} pt wide, wider than ${maxWidth} pt`);
  const barcodeH = rows * rowHeight;
  const lines: [string, 'bold' | 'regular'][] = [
    ['Timbre Electrónico SII', 'bold'],
    [`Res. ${dte.resolutionNumber} de ${formatDate(dte.resolutionDate, locale)}`, 'regular'],
    ['Verifique documento: www.sii.cl', 'regular'],
  ];
  doc.fontSize(TEXT_SIZE);
  const textH = lines.reduce((h, [text, font]) => h + doc.font(font).heightOfString(text, { width: barcodeW }), 0);

  return {
    width: barcodeW,
    // Rounded up: text whose last line ends a hair past the page's bottom margin opens a new page.
    height: Math.ceil(barcodeH + TEXT_GAP + textH),
    draw(x, y) {
      // One rectangle per run of dark modules in a row, filled together.
      for (let r = 0; r < rows; r++) {
        const row = symbol.pixs.slice(r * symbol.pixx, (r + 1) * symbol.pixx);
        for (let c = 0; c < row.length; ) {
          if (!row[c]) {
            c++;
            continue;
          }
          const start = c;
          while (c < row.length && row[c]) c++;
          doc.rect(x + start * MODULE, y + r * rowHeight, (c - start) * MODULE, rowHeight);
        }
      }
      doc.fillColor(INK).fill();
      doc.fontSize(TEXT_SIZE).fillColor(INK);
      let lineY = y + barcodeH + TEXT_GAP;
      for (const [text, font] of lines) {
        doc.font(font).text(text, x, lineY, { width: barcodeW, align: 'center' });
        lineY = doc.y;
      }
    },
  };
}
