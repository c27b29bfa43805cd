// The top of a sheet's first page: the issuer (with its legal profile when it has one) on the left
// and the title and number, or a DTE's red box, on the right; under a rule, the client and the dates.
import type { LegalProfile } from '../merchants/legal-profile.js';
import { legalProfile } from '../merchants/legal-profile.js';
import type { MerchantRow } from '../merchants/queries.js';
import { drawRedBox, RED_BOX_WIDTH, type PrintedDte } from './dte-box.js';
import { ACCENT, INK, MUTED, PAGE, RULE, type Frame } from './page.js';
import type { Sheet } from './sheet.js';
import { pdfText, type PdfLabels } from './text.js';

// The header's two columns: the issuer on the left, the title, number and draft notice (or a
// DTE's red box) on the right.
const ISSUER_SHARE = 0.6;
const TITLE_SHARE = 0.38;
const TITLE_SIZE = 22;
const RED_BOX_GAP = 15;

export interface Issuer {
  name: string;
  legal: string[];
  profile: LegalProfile | null;
}

/** The issuer as the header prints it: its legal profile when it has one, else its name alone. */
export function issuerBlock(merchant: MerchantRow, L: PdfLabels): Issuer {
  const profile = legalProfile(merchant);
  if (!profile) return { name: merchant.name, legal: [], profile };
  return {
    profile,
    name: profile.razon_social,
    legal: [
      `${L.issuerRut}: ${profile.rut}`,
      `${L.giro}: ${profile.giro}`,
      `${L.address}: ${profile.direccion}`,
      `${L.comuna}: ${profile.comuna}`,
      `${L.ciudad}: ${profile.ciudad}`,
    ],
  };
}

/** The issuer on the left, title and number (or the red box) on the right, and the rule under them; returns where the page goes on. */
export function printHeading(
  { doc, left, width, right }: Frame,
  sheet: Sheet,
  issuer: Issuer,
  merchant: MerchantRow,
  opts: { draft: boolean; dte: PrintedDte | null },
  L: PdfLabels,
): number {
  const { dte } = opts;
  const top = PAGE.margin;
  const issuerW = dte ? width - RED_BOX_WIDTH - RED_BOX_GAP : width * ISSUER_SHARE;
  // A razón social is often long: a smaller size keeps it to fewer lines.
  doc.font('bold').fontSize(issuer.legal.length > 0 ? 14 : 18).fillColor(INK).text(pdfText(issuer.name), left, top, { width: issuerW });
  doc.moveDown(0.2);
  doc.font('regular').fontSize(9).fillColor(INK);
  for (const line of issuer.legal) doc.text(pdfText(line), { width: issuerW });
  doc.fillColor(MUTED).text(pdfText(merchant.email), { width: issuerW });
  const merchantBottom = doc.y;
  let titleBottom: number;
  if (dte && issuer.profile) {
    titleBottom = drawRedBox(doc, dte, issuer.profile, right, top);
  } else {
    // A long title ("NOTA DE CRÉDITO") is made smaller, not wrapped nor run into the issuer.
    const titleSize = Math.min(TITLE_SIZE, (TITLE_SIZE * width * TITLE_SHARE) / doc.font('bold').fontSize(TITLE_SIZE).widthOfString(sheet.title));
    doc.fontSize(titleSize).fillColor(INK).text(sheet.title, left, top, { width, align: 'right' });
    doc.font('bold').fontSize(12).fillColor(opts.draft ? ACCENT : INK).text(pdfText(sheet.number), { width, align: 'right' });
    if (opts.draft) {
      const noticeW = width * TITLE_SHARE;
      doc.font('regular').fontSize(8).fillColor(ACCENT).text(L.draftNotice, left + width - noticeW, doc.y + 2, { width: noticeW, align: 'right' });
    }
    titleBottom = doc.y;
  }
  const y = Math.max(merchantBottom, titleBottom) + 18;
  doc.moveTo(left, y).lineTo(right, y).lineWidth(0.5).strokeColor(RULE).stroke();
  return y + 14;
}

/** The client (left) and the dates (right) from `y`; returns where the page goes on. */
export function printParties({ doc, left, width }: Frame, sheet: Sheet, y: number): number {
  const colW = width / 2 - 10;
  doc.font('bold').fontSize(9).fillColor(MUTED).text(sheet.client.label.toUpperCase(), left, y, { width: colW });
  if (sheet.client.name) doc.font('bold').fontSize(11).fillColor(INK).text(pdfText(sheet.client.name), { width: colW });
  doc.font('regular').fontSize(9.5).fillColor(INK);
  for (const line of sheet.client.lines) doc.text(pdfText(line), { width: colW });
  const clientBottom = doc.y;

  const dateX = left + width / 2 + 10;
  let dy = y;
  for (const [label, value] of sheet.dates) {
    doc.font('regular').fontSize(9.5).fillColor(MUTED).text(pdfText(label), dateX, dy, { width: 110 });
    doc.font('regular').fontSize(9.5).fillColor(INK).text(pdfText(value), dateX + 110, dy, { width: colW - 110, align: 'right' });
    dy = Math.max(doc.y, dy + 14);
  }
  return Math.max(clientBottom, dy) + 22;
}
