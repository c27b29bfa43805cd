// A sheet on A4 pages, part after part down the page: page.ts (margins, watermark, footer),
// header.ts (issuer, title or red box, client and dates), references.ts, item-table.ts and
// totals.ts, then a DTE's timbre (dte-box.ts) and a cedible copy's receipt box (cedible.ts).
import type { Locale } from '../invoices/schemas.js';
import type { MerchantRow } from '../merchants/queries.js';
import { cedibleBlock } from './cedible.js';
import { openDocument } from './document.js';
import { timbre, type PrintedDte } from './dte-box.js';
import { issuerBlock, printHeading, printParties } from './header.js';
import { printItemTable } from './item-table.js';
import { frameOf, INK, markDraftPages, PAGE, printFooters, type Frame } from './page.js';
import { drawReferenceTable } from './references.js';
import type { Sheet } from './sheet.js';
import { pdfLabels, type PdfCopy } from './text.js';
import { printLink, printTotals } from './totals.js';

// Between the last of the content and a DTE's timbre; between the timbre and a cedible copy's receipt box.
const TIMBRE_GAP = 20;

/** How the sheet is printed: a draft's marks, a DTE's red box and timbre, a factura's cedible copy. */
export interface PrintOptions {
  draft: boolean;
  dte: PrintedDte | null;
  copy?: PdfCopy | undefined;
}

/**
 * The sheet on A4 pages: the issuer (with its legal profile when it has one) and the title or a
 * DTE's red box, the client and the dates, the references, the items (their header repeated on each
 * page), the totals, the link, a DTE's timbre at the bottom of the last page, and the footer.
 */
export function printSheet(sheet: Sheet, merchant: MerchantRow, opts: PrintOptions): Promise<Buffer> {
  const { locale } = sheet;
  const L = pdfLabels(locale);
  const issuer = issuerBlock(merchant, L);
  const { dte } = opts;
  if (dte && !issuer.profile) throw new Error(`merchant ${merchant.id} has a DTE but no legal profile to print with it`);

  const { doc, done } = openDocument(PAGE, locale, { ...sheet.info, author: issuer.name });
  const frame = frameOf(doc);
  if (opts.draft) markDraftPages(frame, L);

  let y = printHeading(frame, sheet, issuer, merchant, opts, L);
  y = printParties(frame, sheet, y);
  for (const table of sheet.references) {
    y = drawReferenceTable(doc, table, { x: frame.left, y, width: frame.width, top: PAGE.margin, bottom: frame.bottom() }, INK) + 22;
  }
  y = printItemTable(frame, sheet.items, L, y);
  y = printTotals(frame, sheet, L, y);
  if (sheet.link) printLink(frame, sheet.link, y);
  if (dte) printStamps(frame, dte, opts.copy, locale);
  printFooters(frame, sheet.footer, L);
  doc.end();
  return done;
}

/**
 * The timbre at the bottom left of the last page (a cedible copy's receipt box and CEDIBLE at the
 * bottom right, beside it), on a page of its own when the content reaches it.
 */
function printStamps({ doc, left, width, right, bottom }: Frame, dte: PrintedDte, copy: PdfCopy | undefined, locale: Locale): void {
  const stamp = timbre(doc, dte, locale);
  const receiptW = width - stamp.width - TIMBRE_GAP;
  const receipt = copy === 'cedible' ? cedibleBlock(doc, receiptW) : null;
  const height = Math.max(stamp.height, receipt?.height ?? 0);
  if (doc.y + TIMBRE_GAP > bottom() - height) doc.addPage();
  stamp.draw(left, bottom() - stamp.height);
  receipt?.draw(right - receiptW, bottom() - receipt.height);
}
