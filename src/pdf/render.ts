import PDFDocument from 'pdfkit';
import { formatDate, formatMoney, formatQuantityFor } from '../format.js';
import type { InvoiceWithItems } from '../invoices/queries.js';
import type { MerchantRow } from '../merchants/queries.js';
import { formatPercent, formatPrice, formatRateNumber, pdfLabels, pdfText } from './text.js';

export interface RenderOptions {
  /** A draft is marked as such on every page and carries no payment link. */
  draft: boolean;
  /** The hosted invoice page (`public_url`): printed as the payment link. */
  publicUrl: string;
}

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

/**
 * The invoice as a PDF, in the invoice's locale, with pdfkit's built-in Helvetica (WinAnsi, so
 * Spanish text needs no embedded font). Deterministic: the same invoice gives the same bytes, as
 * the creation date (and so the file id) comes from the invoice, not from the clock.
 */
export function renderInvoicePdf(invoice: InvoiceWithItems, merchant: MerchantRow, opts: RenderOptions): Promise<Buffer> {
  const locale = invoice.locale === 'en' ? 'en' : 'es';
  const L = pdfLabels(locale);
  const money = (amount: string) => formatMoney(amount, invoice.currency, locale);
  const numberText = opts.draft ? L.draft : `${L.number} ${invoice.invoice_number ?? ''}`;

  const doc = new PDFDocument({
    size: PAGE.size,
    margin: PAGE.margin,
    bufferPages: true,
    lang: locale === 'es' ? 'es-CL' : 'en-US',
    info: {
      Title: pdfText(`${L.title} ${opts.draft ? L.draft : (invoice.invoice_number ?? '')}`.trim()),
      Author: pdfText(merchant.name),
      Subject: pdfText(`${L.title} - ${invoice.client_name}`),
      Creator: 'invoicing-api',
      Producer: 'invoicing-api (PDFKit)',
      CreationDate: invoice.sent_at ?? invoice.created_at,
    },
  });
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
    doc.font('Helvetica-Bold').fontSize(96).fillColor(ACCENT).fillOpacity(0.12);
    doc.text(L.draft, 0, h / 2 - 48, { width: w, align: 'center', lineBreak: false });
    doc.restore();
    doc.fillOpacity(1).fillColor(INK);
    doc.x = left;
    doc.y = PAGE.margin;
  };
  watermark();
  doc.on('pageAdded', watermark);

  // Header: merchant on the left, title and number on the right.
  const top = PAGE.margin;
  doc.font('Helvetica-Bold').fontSize(18).fillColor(INK).text(pdfText(merchant.name), left, top, { width: width * 0.6 });
  doc.font('Helvetica').fontSize(10).fillColor(MUTED).text(pdfText(merchant.email), { width: width * 0.6 });
  const merchantBottom = doc.y;
  doc.font('Helvetica-Bold').fontSize(22).fillColor(INK).text(L.title.toUpperCase(), left, top, { width, align: 'right' });
  doc.font('Helvetica-Bold').fontSize(12).fillColor(opts.draft ? ACCENT : INK).text(pdfText(numberText), { width, align: 'right' });
  if (opts.draft) {
    doc.font('Helvetica').fontSize(8).fillColor(ACCENT).text(L.draftNotice, left + width * 0.45, doc.y + 2, { width: width * 0.55, align: 'right' });
  }
  let y = Math.max(merchantBottom, doc.y) + 18;
  doc.moveTo(left, y).lineTo(right, y).lineWidth(0.5).strokeColor(RULE).stroke();
  y += 14;

  // Client (left) and dates (right).
  const colW = width / 2 - 10;
  doc.font('Helvetica-Bold').fontSize(9).fillColor(MUTED).text(L.billTo.toUpperCase(), left, y, { width: colW });
  doc.font('Helvetica-Bold').fontSize(11).fillColor(INK).text(pdfText(invoice.client_name), { width: colW });
  doc.font('Helvetica').fontSize(9.5).fillColor(INK);
  const clientLines: [string, string | null][] = [
    [L.email, invoice.client_email],
    [L.rut, invoice.client_rut],
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
  if (invoice.exchange_rate !== null && invoice.base_currency) {
    dateLines.push([L.exchangeRate, `1 ${invoice.currency} = ${formatRateNumber(invoice.exchange_rate, locale)} ${invoice.base_currency}`]);
  }
  if (invoice.external_reference) dateLines.push([L.reference, invoice.external_reference]);
  let dy = y;
  for (const [label, value] of dateLines) {
    doc.font('Helvetica').fontSize(9.5).fillColor(MUTED).text(pdfText(label), dateX, dy, { width: 110 });
    doc.font('Helvetica').fontSize(9.5).fillColor(INK).text(pdfText(value), dateX + 110, dy, { width: colW - 110, align: 'right' });
    dy = Math.max(doc.y, dy + 14);
  }
  y = Math.max(clientBottom, dy) + 22;

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
  const rowHeight = (cells: string[], font: string) => {
    doc.font(font).fontSize(9.5);
    return Math.max(...cells.map((text, i) => doc.heightOfString(text, { width: COLS[i]!.width - 2 * CELL_PAD }))) + 2 * CELL_PAD;
  };
  const drawRow = (cells: string[], font: string, shade: boolean) => {
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
  const drawHeader = () => drawRow(header, 'Helvetica-Bold', true);
  drawHeader();
  for (const item of invoice.items) {
    const cells = COLS.map((c) => cellText(c.key, item));
    if (y + rowHeight(cells, 'Helvetica') > bottom()) {
      doc.addPage();
      y = PAGE.margin;
      drawHeader();
    }
    drawRow(cells, 'Helvetica', false);
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
    const font = strong ? 'Helvetica-Bold' : 'Helvetica';
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
    doc.font('Helvetica-Oblique').fontSize(8.5).fillColor(MUTED).text(L.taxInclusive, left, y + 2, { width, align: 'right' });
    y = doc.y;
  }

  // The payment link: the hosted page (a draft has none yet).
  if (!opts.draft) {
    y += 24;
    if (y + 40 > bottom()) {
      doc.addPage();
      y = PAGE.margin;
    }
    doc.font('Helvetica-Bold').fontSize(10).fillColor(INK).text(`${L.payOnline}:`, left, y, { width });
    doc.font('Helvetica').fontSize(9.5).fillColor('#1d4ed8').text(pdfText(opts.publicUrl), { width, link: opts.publicUrl, underline: true });
  }

  // Footer on every page: "Página 1 de 2" and the number.
  const range = doc.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    doc.switchToPage(i);
    const pageBottom = doc.page.margins.bottom;
    doc.page.margins.bottom = 0; // writing inside the bottom margin must not open a new page
    const footer = `${opts.draft ? L.draft : (invoice.invoice_number ?? '')}   ${L.page} ${i + 1 - range.start} ${L.of} ${range.count}`;
    doc.font('Helvetica').fontSize(8).fillColor(MUTED).text(pdfText(footer.trim()), left, doc.page.height - PAGE.margin + 15, {
      width,
      align: 'right',
      lineBreak: false,
    });
    doc.page.margins.bottom = pageBottom;
  }
  doc.end();
  return done;
}
