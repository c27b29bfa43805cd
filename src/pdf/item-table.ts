// A sheet's item table: its header repeated on each page, a row per line with its notes (discount,
// exemption) under the description, and rows kept to one page each (docs/limits.md).
import { INK, MUTED, PAGE, RULE, SHADE, type Frame } from './page.js';
import type { SheetItem } from './sheet.js';
import type { PdfLabels } from './text.js';
import { CharWidths, wrapLines } from './wrap.js';

// Item table columns, left to right; widths add up to the 495 pt between A4's 50 pt margins.
export const COLS = [
  { key: 'description', width: 215, align: 'left' },
  { key: 'quantity', width: 60, align: 'right' },
  { key: 'unitPrice', width: 105, align: 'right' },
  { key: 'lineTotal', width: 115, align: 'right' },
] as const;
export const CELL_PAD = 5;
// The item table's text, and the smallest a description prints at to keep its row on one page.
const ROW_SIZE = 9.5;
const MIN_ROW_SIZE = 6;
const NOTE_SIZE = 8;
const NOTE_GAP = 2;

/**
 * The items from `y`; returns where the page goes on. Each description is broken into its lines
 * once (wrap.ts) and printed as those lines, so a row's height is its lines'. A row never spans
 * more than one page (docs/limits.md): one taller than a page prints its description smaller until
 * it fits, down to MIN_ROW_SIZE; only a description longer than the field limits allow (stored
 * before them) is split between pages by its lines, the quantity and amounts printed with its
 * first part and its notes with its last.
 */
export function printItemTable({ doc, left, width, right, bottom }: Frame, items: SheetItem[], L: PdfLabels, top: number): number {
  let y = top;
  const descriptionW = COLS[0].width - 2 * CELL_PAD;
  const widths = new CharWidths(doc);
  const lineHeightAt = (size: number) => doc.font('regular').fontSize(size).currentLineHeight(true);
  // A line's notes (its discount, its exemption) under its description, smaller and muted.
  const notesHeight = (notes: string[]) =>
    notes.length === 0 ? 0 : NOTE_GAP + doc.font('regular').fontSize(NOTE_SIZE).heightOfString(notes.join('\n'), { width: descriptionW });
  const cellHeight = (text: string, i: number) => doc.heightOfString(text, { width: COLS[i]!.width - 2 * CELL_PAD });
  const rule = () => doc.moveTo(left, y).lineTo(right, y).lineWidth(0.5).strokeColor(RULE).stroke();
  const drawHeader = () => {
    const cells = COLS.map((c) => L[c.key]);
    doc.font('bold').fontSize(9.5);
    const h = Math.max(...cells.map(cellHeight)) + 2 * CELL_PAD;
    doc.rect(left, y, width, h).fillColor(SHADE).fill();
    let x = left;
    doc.fillColor(INK);
    cells.forEach((text, i) => {
      const col = COLS[i]!;
      doc.text(text, x + CELL_PAD, y + CELL_PAD, { width: col.width - 2 * CELL_PAD, align: col.align });
      x += col.width;
    });
    y += h;
    rule();
  };
  /** A row of description lines, the other cells (quantity, prices, amount) and the notes under the lines. */
  const tableRow = (lines: string[], rest: string[], notes: string[], size: number) => {
    const lineHeight = lineHeightAt(size);
    doc.font('regular').fontSize(ROW_SIZE);
    const others = rest.map((text, i) => (text ? cellHeight(text, i + 1) : 0));
    const described = lines.length * lineHeight + notesHeight(notes);
    return {
      height: Math.max(described, ...others) + 2 * CELL_PAD,
      draw() {
        doc.font('regular').fontSize(size).fillColor(INK);
        // Already broken into lines that fit: each is printed as it is, where the row puts it.
        lines.forEach((line, i) => doc.text(line, left + CELL_PAD, y + CELL_PAD + i * lineHeight, { lineBreak: false }));
        doc.fontSize(ROW_SIZE);
        let x = left + COLS[0].width;
        rest.forEach((text, i) => {
          const col = COLS[i + 1]!;
          if (text) doc.text(text, x + CELL_PAD, y + CELL_PAD, { width: col.width - 2 * CELL_PAD, align: col.align });
          x += col.width;
        });
        if (notes.length > 0) {
          const notesY = y + CELL_PAD + lines.length * lineHeight + NOTE_GAP;
          doc.font('regular').fontSize(NOTE_SIZE).fillColor(MUTED).text(notes.join('\n'), left + CELL_PAD, notesY, { width: descriptionW });
        }
        y += this.height;
        rule();
      },
    };
  };
  const newPage = () => {
    doc.addPage();
    y = PAGE.margin;
    drawHeader();
  };
  drawHeader();
  // What a fresh page holds under its header.
  const pageRoom = bottom() - y;
  for (const { cells, notes } of items) {
    const wrapAt = (size: number) => {
      doc.font('regular').fontSize(size);
      return wrapLines(doc, widths, cells[0]!, descriptionW);
    };
    let size = ROW_SIZE;
    let lines = wrapAt(size);
    let rest = cells.slice(1);
    while (size > MIN_ROW_SIZE && tableRow(lines, rest, notes, size).height > pageRoom) {
      size -= 0.5;
      lines = wrapAt(size);
    }
    for (;;) {
      const row = tableRow(lines, rest, notes, size);
      if (y + row.height <= bottom()) {
        row.draw();
        break;
      }
      if (row.height <= pageRoom) {
        newPage();
        continue;
      }
      // Taller than a page: as many lines as the page has room for, at least a few, the rest after.
      const fit = Math.floor((bottom() - y - 2 * CELL_PAD) / lineHeightAt(size));
      if (fit < 3) {
        newPage();
        continue;
      }
      tableRow(lines.slice(0, fit), rest, [], size).draw();
      lines = lines.slice(fit);
      rest = rest.map(() => '');
      newPage();
    }
  }
  return y;
}
