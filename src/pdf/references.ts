// A document's "Referencias" (docs/decisions.md §17): the other documents it points to (an orden de
// compra, a contract, the factura a note modifies), as the SII's Referencia lines carry them, in a
// table between the client and the items.
import { formatDate } from '../format.js';
import type { DocumentReference } from '../invoices/queries.js';
import type { Locale } from '../invoices/schemas.js';
import { pdfText, type PdfLabels } from './text.js';

/** One reference as printed: each cell's text. */
export interface ReferenceRow {
  type: string;
  folio: string;
  date: string;
  reason: string;
}

export interface ReferenceLabels {
  title: string;
  columns: [type: string, folio: string, date: string, reason: string];
}

/** One table: its labels and a row per reference. */
export interface ReferenceTable {
  labels: ReferenceLabels;
  rows: ReferenceRow[];
}

/** Where the table goes: its column, and the page's top and bottom for a table that continues on the next page. */
export interface ReferenceArea {
  x: number;
  y: number;
  width: number;
  top: number;
  bottom: number;
}

const SIZE = 9.5;
const LABEL_SIZE = SIZE - 1;
const GAP = 12;
const ROW_GAP = 3;
// Shares of the width, in the columns' order: the longest date ("30 de septiembre de 2026") and a
// folio of ten digits fit on one line; a name, an 18-character folio or a reason wrap.
const SHARES = [0.3, 0.18, 0.28, 0.24] as const;

export function referenceLabels(L: PdfLabels): ReferenceLabels {
  return { title: L.references, columns: [L.referenceType, L.referenceFolio, L.referenceDate, L.referenceReason] };
}

/** "Orden de compra (801)": the code alone when it has no name (a DTE type the labels do not list). */
export function referenceRows(references: DocumentReference[], L: PdfLabels, locale: Locale): ReferenceRow[] {
  return references.map((r) => {
    const name = L.referenceTypes[r.type];
    return { type: name ? `${name} (${r.type})` : r.type, folio: r.folio, date: formatDate(r.date, locale), reason: r.reason ?? '' };
  });
}

/**
 * The table in `ink`: its title, the column labels, then a line per reference, each column's text
 * wrapping in its width. The title never stays alone at the bottom of a page, and a row that would
 * cross the bottom opens a new page, where the labels repeat. Returns the y under the last row.
 */
export function drawReferenceTable(doc: PDFKit.PDFDocument, { labels, rows }: ReferenceTable, area: ReferenceArea, ink: string): number {
  const cellWidths = SHARES.map((share) => area.width * share - GAP);
  const title = pdfText(labels.title);
  const columns = labels.columns.map(pdfText);
  const cells = rows.map((row) => [row.type, row.folio, row.date, row.reason].map(pdfText));
  const heightOf = (texts: string[], font: 'bold' | 'regular', size: number) => {
    doc.font(font).fontSize(size);
    return Math.max(...texts.map((text, i) => doc.heightOfString(text, { width: cellWidths[i]! })));
  };
  const labelsHeight = heightOf(columns, 'bold', LABEL_SIZE) + 1;
  const rowHeights = cells.map((texts) => heightOf(texts, 'regular', SIZE));
  const draw = (texts: string[], font: 'bold' | 'regular', size: number, y: number) => {
    doc.font(font).fontSize(size).fillColor(ink);
    let x = area.x;
    texts.forEach((text, i) => {
      doc.text(text, x, y, { width: cellWidths[i]! });
      x += area.width * SHARES[i]!;
    });
  };
  const newPage = () => {
    doc.addPage();
    return area.top;
  };

  let y = area.y;
  const titleHeight = doc.font('bold').fontSize(SIZE).heightOfString(title, { width: area.width }) + 4;
  if (y + titleHeight + labelsHeight + (rowHeights[0] ?? 0) > area.bottom) y = newPage();
  doc.fillColor(ink).text(title, area.x, y, { width: area.width });
  y += titleHeight;
  draw(columns, 'bold', LABEL_SIZE, y);
  y += labelsHeight;
  cells.forEach((texts, i) => {
    if (y + rowHeights[i]! > area.bottom) {
      y = newPage();
      draw(columns, 'bold', LABEL_SIZE, y);
      y += labelsHeight;
    }
    draw(texts, 'regular', SIZE, y);
    y += rowHeights[i]! + ROW_GAP;
  });
  return y - ROW_GAP;
}
