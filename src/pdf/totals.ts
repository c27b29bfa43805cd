// Under a sheet's items: the totals right-aligned under the amount columns, what the tax notices
// say, and the hosted page's link.
import { CELL_PAD, COLS } from './item-table.js';
import { INK, MUTED, PAGE, type Frame } from './page.js';
import type { Sheet } from './sheet.js';
import { pdfText, type PdfLabels } from './text.js';

// The rule over the total spans the unit price and amount columns.
const TOTAL_RULE_X = COLS[0].width + COLS[1].width;

/** The totals from `y`, on a new page when they do not fit, then a tax-inclusive price's notice and a boleta's VAT; returns where the page goes on. */
export function printTotals({ doc, left, width, right, bottom }: Frame, sheet: Sheet, L: PdfLabels, top: number): number {
  let y = top;
  const amountW = COLS[3].width;
  // The labels, right-aligned, may reach left across the row: a global discount's says what it is.
  const labelW = width - amountW;
  if (y + sheet.totals.length * 18 + 60 > bottom()) {
    doc.addPage();
    y = PAGE.margin;
  }
  y += 8;
  for (const [label, amount, strong] of sheet.totals) {
    const font = strong ? 'bold' : 'regular';
    const size = strong ? 12 : 9.5;
    if (strong) {
      doc.moveTo(left + TOTAL_RULE_X, y).lineTo(right, y).lineWidth(0.8).strokeColor(INK).stroke();
      y += 5;
    }
    doc.font(font).fontSize(size).fillColor(INK);
    doc.text(pdfText(label), left, y, { width: labelW - CELL_PAD, align: 'right' });
    const labelBottom = doc.y;
    doc.text(amount, left + labelW, y, { width: amountW - CELL_PAD, align: 'right' });
    y = Math.max(labelBottom, doc.y) + 4;
  }
  if (sheet.taxInclusive) {
    doc.font('italic').fontSize(8.5).fillColor(MUTED).text(L.taxInclusive, left, y + 2, { width, align: 'right' });
    y = doc.y;
  }
  if (sheet.vatNotice) {
    doc.font('regular').fontSize(9.5).fillColor(INK).text(pdfText(sheet.vatNotice), left, y + 4, { width: width - CELL_PAD, align: 'right' });
    y = doc.y;
  }
  return y;
}

/** The hosted page's link under the totals (from `y`), on a new page when it does not fit. */
export function printLink({ doc, left, width, bottom }: Frame, link: NonNullable<Sheet['link']>, top: number): void {
  let y = top + 24;
  if (y + 40 > bottom()) {
    doc.addPage();
    y = PAGE.margin;
  }
  doc.font('bold').fontSize(10).fillColor(INK).text(`${link.label}:`, left, y, { width });
  doc.font('regular').fontSize(9.5).fillColor('#1d4ed8').text(pdfText(link.url), { width, link: link.url, underline: true });
}
