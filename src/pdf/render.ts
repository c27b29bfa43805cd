import PDFDocument from 'pdfkit';
import { formatRut } from '../clients/rut.js';
import { formatDate, formatMoney, formatQuantityFor } from '../format.js';
import type { InvoiceWithItems } from '../invoices/queries.js';
import type { MerchantRow } from '../merchants/queries.js';
import { legalProfile, type LegalProfile } from '../merchants/legal-profile.js';
import { drawRedBox, drawReferences, dteTitle, RED_BOX_WIDTH, timbre, type PrintedDte } from './dte-box.js';
import { pdfFonts, type FontStyle } from './fonts.js';
import { formatPercent, formatPrice, formatRateNumber, pdfLabels, pdfText, type PdfLabels } from './text.js';

export interface RenderOptions {
  /** A draft is marked as such on every page and carries no payment link. */
  draft: boolean;
  /** The hosted invoice page (`public_url`): printed as the payment link. */
  publicUrl: string;
  /** The merchant can take payments on that page (`can_charge`): the link says "view and pay", else "view". */
  canCharge?: boolean;
  /** An issued DTE: the PDF becomes SII's printed representation of it (decisions §15). Never on a draft. */
  dte?: PrintedDte;
}

export type { PrintedDte };

const PAGE = { size: 'A4' as const, margin: 50 };
const INK = '#1f2933';
const MUTED = '#6b7280';
const RULE = '#d1d5db';
const SHADE = '#f3f4f6';
const ACCENT = '#b91c1c';

// Item table columns, left to right; widths add up to the 495 pt between A4's 50 pt margins.
const COLS = [
  { key: 'description', width: 215, align: 'left' },
  { key: 'quantity', width: 60, align: 'right' },
  { key: 'unitPrice', width: 105, align: 'right' },
  { key: 'lineTotal', width: 115, align: 'right' },
] as const;
const CELL_PAD = 5;

// The header's two columns: the issuer on the left, the title, number and draft notice (or a
// DTE's red box) on the right.
const ISSUER_SHARE = 0.6;
const TITLE_SHARE = 0.38;
const RED_BOX_GAP = 15;
// Between the last of the content and a DTE's timbre.
const TIMBRE_GAP = 20;

/** The issuer as the header prints it: its legal profile when it has one, else its name alone. */
function issuerBlock(merchant: MerchantRow, L: PdfLabels): { name: string; legal: string[]; profile: LegalProfile | null } {
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

/**
 * The invoice as a PDF, in the invoice's locale, in an embedded Unicode font (fonts.ts). The
 * issuer prints with its legal profile when it has one; the hosted page's link says "view and pay"
 * only when the merchant can take payments (decisions §11). Deterministic: the same invoice gives
 * the same bytes, as the creation date (and so the file id) comes from the invoice, not from the
 * clock.
 *
 * With `opts.dte` it is SII's printed representation of that DTE: the red box takes the title's
 * place, the invoice's own number moves to the dates, and the timbre closes the last page.
 */
export function renderInvoicePdf(invoice: InvoiceWithItems, merchant: MerchantRow, opts: RenderOptions): Promise<Buffer> {
  const locale = invoice.locale === 'en' ? 'en' : 'es';
  const L = pdfLabels(locale);
  const money = (amount: string) => formatMoney(amount, invoice.currency, locale);
  const numberText = opts.draft ? L.draft : `${L.number} ${invoice.invoice_number ?? ''}`;
  // What a merchant that cannot charge offers on its page is a view, not a payment.
  const linkLabel = opts.canCharge ? L.viewAndPayOnline : L.viewOnline;
  const issuer = issuerBlock(merchant, L);
  const dte = opts.dte ?? null;
  if (dte && opts.draft) throw new Error('a draft carries no DTE');
  if (dte && !issuer.profile) throw new Error(`merchant ${merchant.id} has a DTE but no legal profile to print with it`);
  if (dte && (dte.type === 61) !== (dte.reference !== undefined)) throw new Error('a credit note, and only a credit note, prints the document it cancels');

  const doc = new PDFDocument({
    size: PAGE.size,
    margin: PAGE.margin,
    // No first font: pdfkit's default would load and parse Helvetica's metrics for every document,
    // and an unregistered embedded face, once registered under a name too, would be compared with
    // itself by serialising its name tables. The registered regular face is set below.
    font: null as unknown as string,
    bufferPages: true,
    lang: locale === 'es' ? 'es-CL' : 'en-US',
    info: {
      // pdfkit writes these as UTF-16 text strings: any character is kept.
      Title: dte ? dteTitle(dte) : `${L.title} ${opts.draft ? L.draft : (invoice.invoice_number ?? '')}`.trim(),
      Author: issuer.name,
      Subject: `${L.title} - ${invoice.client_name}`,
      Creator: 'invoicing-api',
      Producer: 'invoicing-api (PDFKit)',
      CreationDate: invoice.sent_at ?? invoice.created_at,
    },
  });
  const fonts = pdfFonts();
  for (const style of Object.keys(fonts) as FontStyle[]) {
    // @types/pdfkit lags pdfkit 0.20, which takes a parsed fontkit font (CHANGELOG 0.20.0).
    doc.registerFont(style, fonts[style] as unknown as Buffer);
  }
  doc.font('regular');
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('data', (c: Buffer) => chunks.push(c));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });

  const left = PAGE.margin;
  const width = doc.page.width - 2 * PAGE.margin;
  const right = left + width;
  const bottom = () => doc.page.height - PAGE.margin;

  const watermark = () => {
    if (!opts.draft) return;
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

  // Header: the issuer on the left, title and number (or the red box) on the right.
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
    doc.font('bold').fontSize(22).fillColor(INK).text(L.title.toUpperCase(), left, top, { width, align: 'right' });
    doc.font('bold').fontSize(12).fillColor(opts.draft ? ACCENT : INK).text(pdfText(numberText), { width, align: 'right' });
    if (opts.draft) {
      const noticeW = width * TITLE_SHARE;
      doc.font('regular').fontSize(8).fillColor(ACCENT).text(L.draftNotice, left + width - noticeW, doc.y + 2, { width: noticeW, align: 'right' });
    }
    titleBottom = doc.y;
  }
  let y = Math.max(merchantBottom, titleBottom) + 18;
  doc.moveTo(left, y).lineTo(right, y).lineWidth(0.5).strokeColor(RULE).stroke();
  y += 14;

  // Client (left) and dates (right).
  const colW = width / 2 - 10;
  doc.font('bold').fontSize(9).fillColor(MUTED).text(L.billTo.toUpperCase(), left, y, { width: colW });
  doc.font('bold').fontSize(11).fillColor(INK).text(pdfText(invoice.client_name), { width: colW });
  doc.font('regular').fontSize(9.5).fillColor(INK);
  const clientLines: [string, string | null][] = [
    [L.email, invoice.client_email],
    [L.rut, invoice.client_rut === null ? null : formatRut(invoice.client_rut)],
    [L.phone, invoice.client_phone],
    [L.address, invoice.client_address],
  ];
  for (const [label, value] of clientLines) {
    if (value) doc.text(pdfText(`${label}: ${value}`), { width: colW });
  }
  const clientBottom = doc.y;

  const dateX = left + width / 2 + 10;
  const dateLines: [string, string][] = [
    [L.issueDate, formatDate(invoice.issue_date, locale)],
    [L.dueDate, formatDate(invoice.due_date, locale)],
    [L.currency, invoice.currency],
  ];
  // The red box shows the folio: the invoice's own number, which its page and e-mails show, goes here.
  if (dte) dateLines.unshift([`${L.title} ${L.number}`, invoice.invoice_number ?? '']);
  if (invoice.exchange_rate !== null && invoice.base_currency) {
    dateLines.push([L.exchangeRate, `1 ${invoice.currency} = ${formatRateNumber(invoice.exchange_rate, locale)} ${invoice.base_currency}`]);
  }
  if (invoice.external_reference) dateLines.push([L.reference, invoice.external_reference]);
  let dy = y;
  for (const [label, value] of dateLines) {
    doc.font('regular').fontSize(9.5).fillColor(MUTED).text(pdfText(label), dateX, dy, { width: 110 });
    doc.font('regular').fontSize(9.5).fillColor(INK).text(pdfText(value), dateX + 110, dy, { width: colW - 110, align: 'right' });
    dy = Math.max(doc.y, dy + 14);
  }
  y = Math.max(clientBottom, dy) + 22;
  // A credit note names the document it cancels before its lines (SII's Referencias).
  if (dte?.reference) y = drawReferences(doc, dte.reference, locale, left, y, width) + 22;

  // Items.
  const cellText = (key: (typeof COLS)[number]['key'], item: InvoiceWithItems['items'][number]): string => {
    switch (key) {
      case 'description':
        return pdfText(item.description);
      case 'quantity':
        return formatQuantityFor(item.quantity, locale);
      case 'unitPrice':
        return formatPrice(item.unit_price, invoice.currency, locale);
      case 'lineTotal':
        return money(item.line_total);
    }
  };
  const rowHeight = (cells: string[], font: FontStyle) => {
    doc.font(font).fontSize(9.5);
    return Math.max(...cells.map((text, i) => doc.heightOfString(text, { width: COLS[i]!.width - 2 * CELL_PAD }))) + 2 * CELL_PAD;
  };
  const drawRow = (cells: string[], font: FontStyle, shade: boolean) => {
    const h = rowHeight(cells, font);
    if (shade) doc.rect(left, y, width, h).fillColor(SHADE).fill();
    let x = left;
    doc.font(font).fontSize(9.5).fillColor(INK);
    cells.forEach((text, i) => {
      const col = COLS[i]!;
      doc.text(text, x + CELL_PAD, y + CELL_PAD, { width: col.width - 2 * CELL_PAD, align: col.align });
      x += col.width;
    });
    y += h;
    doc.moveTo(left, y).lineTo(right, y).lineWidth(0.5).strokeColor(RULE).stroke();
  };
  const header = COLS.map((c) => L[c.key]);
  const drawHeader = () => drawRow(header, 'bold', true);
  drawHeader();
  for (const item of invoice.items) {
    const cells = COLS.map((c) => cellText(c.key, item));
    if (y + rowHeight(cells, 'regular') > bottom()) {
      doc.addPage();
      y = PAGE.margin;
      drawHeader();
    }
    drawRow(cells, 'regular', false);
  }

  // Totals, right-aligned under the amount columns.
  const taxLabel = invoice.is_tax_exempt ? L.taxExempt : `${L.tax} (${formatPercent(invoice.tax_rate, locale)})`;
  const totals: [string, string, boolean][] = [
    [L.subtotal, money(invoice.subtotal), false],
    [taxLabel, money(invoice.tax_total), false],
    [`${L.total} ${invoice.currency}`, money(invoice.total), true],
  ];
  const labelX = left + COLS[0].width + COLS[1].width;
  const labelW = COLS[2].width;
  const amountW = COLS[3].width;
  if (y + totals.length * 18 + 60 > bottom()) {
    doc.addPage();
    y = PAGE.margin;
  }
  y += 8;
  for (const [label, amount, strong] of totals) {
    const font = strong ? 'bold' : 'regular';
    const size = strong ? 12 : 9.5;
    if (strong) {
      doc.moveTo(labelX, y).lineTo(right, y).lineWidth(0.8).strokeColor(INK).stroke();
      y += 5;
    }
    doc.font(font).fontSize(size).fillColor(INK);
    doc.text(pdfText(label), labelX, y, { width: labelW - CELL_PAD, align: 'right' });
    const labelBottom = doc.y;
    doc.text(amount, labelX + labelW, y, { width: amountW - CELL_PAD, align: 'right' });
    y = Math.max(labelBottom, doc.y) + 4;
  }
  if (invoice.tax_inclusive && !invoice.is_tax_exempt) {
    doc.font('italic').fontSize(8.5).fillColor(MUTED).text(L.taxInclusive, left, y + 2, { width, align: 'right' });
    y = doc.y;
  }

  // The payment link: the hosted page (a draft has none yet).
  if (!opts.draft) {
    y += 24;
    if (y + 40 > bottom()) {
      doc.addPage();
      y = PAGE.margin;
    }
    doc.font('bold').fontSize(10).fillColor(INK).text(`${linkLabel}:`, left, y, { width });
    doc.font('regular').fontSize(9.5).fillColor('#1d4ed8').text(pdfText(opts.publicUrl), { width, link: opts.publicUrl, underline: true });
  }

  // The timbre at the bottom left of the last page, on a page of its own when the content reaches it.
  if (dte) {
    const stamp = timbre(doc, dte, locale);
    if (doc.y + TIMBRE_GAP > bottom() - stamp.height) doc.addPage();
    stamp.draw(left, bottom() - stamp.height);
  }

  // Footer on every page: "Página 1 de 2" and the number.
  const range = doc.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    doc.switchToPage(i);
    const pageBottom = doc.page.margins.bottom;
    doc.page.margins.bottom = 0; // writing inside the bottom margin must not open a new page
    const footer = `${opts.draft ? L.draft : (invoice.invoice_number ?? '')}   ${L.page} ${i + 1 - range.start} ${L.of} ${range.count}`;
    doc.font('regular').fontSize(8).fillColor(MUTED).text(pdfText(footer.trim()), left, doc.page.height - PAGE.margin + 15, {
      width,
      align: 'right',
      lineBreak: false,
    });
    doc.page.margins.bottom = pageBottom;
  }
  doc.end();
  return done;
}
