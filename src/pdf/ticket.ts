// A boleta on a receipt printer's roll (docs/decisions.md §20, `?format=ticket`): the same document as its
// A4 print, in one column 80 mm wide, as tall as its content. A receipt printer prints one colour,
// so the SII's red box is black here.
import type { MerchantRow } from '../merchants/queries.js';
import { legalProfile } from '../merchants/legal-profile.js';
import { openDocument } from './document.js';
import { drawRedBox, RED_BOX_WIDTH, timbre, type PrintedDte } from './dte-box.js';
import type { Sheet } from './sheet.js';
import { pdfLabels, pdfText } from './text.js';
import { CharWidths, wrapLines } from './wrap.js';

/** 80 mm in points. */
export const TICKET_WIDTH = 226.77;
// An 80 mm printer prints 72 mm of its roll: 4 mm (11.3 pt) of each side stay blank.
const MARGIN = 12;
// The tallest page a PDF reader is sure to show (Acrobat's limit, 200 inches): a longer ticket
// goes on as more pages of the roll.
const MAX_HEIGHT = 14_400;
const INK = '#000000';
const MUTED = '#4b5563';
const SIZE = 8;
const SMALL = 7;
const GAP = 6;

/** The boleta's ticket: laid out once to measure how tall its pages need to be, then printed on pages that tall. */
export function printTicket(sheet: Sheet, merchant: MerchantRow, dte: PrintedDte): Promise<Buffer> {
  const measured = layTicket(sheet, merchant, dte, null);
  const { doc, done } = openDocument({ size: [TICKET_WIDTH, measured[0]!], margin: MARGIN }, sheet.locale, ticketInfo(sheet, merchant));
  layTicket(sheet, merchant, dte, doc, measured);
  doc.end();
  return done;
}

const ticketInfo = (sheet: Sheet, merchant: MerchantRow) => ({ ...sheet.info, author: legalProfile(merchant)?.razon_social ?? merchant.name });

/**
 * Lays the ticket out on `into` (pages as tall as `heights` says), or, without it, on pages of the
 * largest height, and returns each page's height: its content and the bottom margin. A page
 * breaks where the content would pass MAX_HEIGHT in both, so the two agree.
 */
function layTicket(sheet: Sheet, merchant: MerchantRow, dte: PrintedDte, into: PDFKit.PDFDocument | null, heights?: number[]): number[] {
  const doc = into ?? openDocument({ size: [TICKET_WIDTH, MAX_HEIGHT], margin: MARGIN }, sheet.locale, ticketInfo(sheet, merchant)).doc;
  const profile = legalProfile(merchant);
  if (!profile) throw new Error(`merchant ${merchant.id} has a DTE but no legal profile to print with it`);
  const L = pdfLabels(sheet.locale);
  const left = MARGIN;
  const width = TICKET_WIDTH - 2 * MARGIN;
  const limit = MAX_HEIGHT - MARGIN;
  const used: number[] = [];
  let y = MARGIN;
  /** Room for `h` more points on this page, or a new page. */
  const need = (h: number) => {
    if (y + h <= limit) return;
    used.push(Math.ceil(y) + MARGIN);
    doc.addPage({ size: [TICKET_WIDTH, heights?.[used.length] ?? MAX_HEIGHT], margin: MARGIN });
    y = MARGIN;
  };
  const line = (text: string, opts: { font?: 'regular' | 'bold'; size?: number; colour?: string; align?: 'left' | 'center' | 'right' } = {}) => {
    doc.font(opts.font ?? 'regular').fontSize(opts.size ?? SIZE);
    const t = pdfText(text);
    need(doc.heightOfString(t, { width }));
    doc.fillColor(opts.colour ?? INK).text(t, left, y, { width, align: opts.align ?? 'left' });
    y = doc.y;
  };
  /** A label on the left and its value on the right, on one line when both fit. */
  const pair = (label: string, value: string, font: 'regular' | 'bold' = 'regular', size = SIZE) => {
    doc.font(font).fontSize(size);
    const valueW = Math.min(width, doc.widthOfString(value) + 1);
    const labelW = width - valueW - 4;
    const h = Math.max(doc.heightOfString(pdfText(label), { width: labelW }), doc.currentLineHeight(true));
    need(h);
    doc.fillColor(INK).text(pdfText(label), left, y, { width: labelW });
    doc.text(value, left + width - valueW, y, { width: valueW, align: 'right', lineBreak: false });
    y += h;
  };
  const rule = () => {
    need(GAP);
    y += GAP / 2;
    doc.moveTo(left, y).lineTo(left + width, y).lineWidth(0.5).dash(1.5, { space: 1.5 }).strokeColor(INK).stroke().undash();
    y += GAP / 2;
  };

  // The issuer, centred.
  line(profile.razon_social, { font: 'bold', size: 10, align: 'center' });
  line(`${L.issuerRut}: ${profile.rut}`, { size: SMALL, align: 'center' });
  line(profile.giro, { size: SMALL, align: 'center' });
  line(`${profile.direccion}, ${profile.comuna}, ${profile.ciudad}`, { size: SMALL, align: 'center' });
  y += GAP;
  // The box is short and printed whole: at most one page break before it.
  need(90);
  y = drawRedBox(doc, dte, profile, left + (width + RED_BOX_WIDTH) / 2, y, true) + GAP;

  for (const [label, value] of sheet.dates) pair(label, value);
  if (sheet.client.name || sheet.client.lines.length > 0) {
    y += GAP / 2;
    line(sheet.client.label.toUpperCase(), { font: 'bold', size: SMALL, colour: MUTED });
    if (sheet.client.name) line(sheet.client.name, { font: 'bold' });
    for (const l of sheet.client.lines) line(l);
  }
  for (const table of sheet.references) {
    y += GAP / 2;
    line(table.labels.title.toUpperCase(), { font: 'bold', size: SMALL, colour: MUTED });
    for (const r of table.rows) line(`${r.type} ${L.number} ${r.folio}, ${r.date}${r.reason ? `: ${r.reason}` : ''}`, { size: SMALL });
  }

  // Items: the description's lines (wrap.ts breaks them as the A4 sheet does), then quantity ×
  // price on the left and the amount on the right, then the line's notes.
  rule();
  const widths = new CharWidths(doc);
  const lineHeight = doc.font('regular').fontSize(SIZE).currentLineHeight(true);
  for (const { cells, notes } of sheet.items) {
    const [description, quantity, price, amount] = cells as [string, string, string, string];
    doc.font('regular').fontSize(SIZE);
    for (const l of wrapLines(doc, widths, description, width)) {
      need(lineHeight);
      doc.font('regular').fontSize(SIZE).fillColor(INK).text(l, left, y, { lineBreak: false });
      y += lineHeight;
    }
    pair(price ? `${quantity} × ${price}` : quantity, amount);
    for (const note of notes) line(note, { size: SMALL, colour: MUTED });
    y += 2;
  }
  rule();
  for (const [label, amount, strong] of sheet.totals) pair(label, amount, strong ? 'bold' : 'regular', strong ? 10 : SIZE);
  if (sheet.vatNotice) {
    y += 2;
    line(sheet.vatNotice);
  }
  y += GAP * 2;

  const stamp = timbre(doc, dte, sheet.locale, width);
  need(stamp.height);
  stamp.draw(left + (width - stamp.width) / 2, y);
  y += stamp.height;
  used.push(Math.ceil(y) + MARGIN);
  return used;
}
