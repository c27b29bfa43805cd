// The A4 page a sheet prints on: its margins and colours, the area between the margins, a draft's
// watermark on every page and the footer that numbers the pages.
import { pdfText, type PdfLabels } from './text.js';

export const PAGE = { size: 'A4' as const, margin: 50 };
export const INK = '#1f2933';
export const MUTED = '#6b7280';
export const RULE = '#d1d5db';
export const SHADE = '#f3f4f6';
export const ACCENT = '#b91c1c';

/** The document and the area between the page's margins that every part of the sheet prints in. */
export interface Frame {
  doc: PDFKit.PDFDocument;
  left: number;
  width: number;
  right: number;
  /** The lowest the content may reach on the current page. */
  bottom(): number;
}

export function frameOf(doc: PDFKit.PDFDocument): Frame {
  const left = PAGE.margin;
  const width = doc.page.width - 2 * PAGE.margin;
  return { doc, left, width, right: left + width, bottom: () => doc.page.height - PAGE.margin };
}

/** A draft's watermark across this page and every page added after it. */
export function markDraftPages({ doc, left }: Frame, L: PdfLabels): void {
  const watermark = () => {
    const { width: w, height: h } = doc.page;
    doc.save();
    doc.rotate(-35, { origin: [w / 2, h / 2] });
    // As large as fits across the page: a word wider than its box would be broken in two.
    const size = Math.min(96, (96 * 0.85 * w) / doc.font('bold').fontSize(96).widthOfString(L.draft));
    doc.fontSize(size).fillColor(ACCENT).fillOpacity(0.12);
    doc.text(L.draft, 0, h / 2 - size / 2, { width: w, align: 'center', lineBreak: false });
    doc.restore();
    doc.fillOpacity(1).fillColor(INK);
    doc.x = left;
    doc.y = PAGE.margin;
  };
  watermark();
  doc.on('pageAdded', watermark);
}

/** Footer on every page: "Página 1 de 2" and what the document is named by. */
export function printFooters({ doc, left, width }: Frame, footer: string, L: PdfLabels): void {
  const range = doc.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    doc.switchToPage(i);
    const pageBottom = doc.page.margins.bottom;
    doc.page.margins.bottom = 0; // writing inside the bottom margin must not open a new page
    const text = `${footer}   ${L.page} ${i + 1 - range.start} ${L.of} ${range.count}`;
    doc.font('regular').fontSize(8).fillColor(MUTED).text(pdfText(text.trim()), left, doc.page.height - PAGE.margin + 15, {
      width,
      align: 'right',
      lineBreak: false,
    });
    doc.page.margins.bottom = pageBottom;
  }
}
