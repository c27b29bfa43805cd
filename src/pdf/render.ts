import { formatRut } from '../clients/rut.js';
import { boletaDteContent, type BoletaContent, type BoletaLine } from '../dte/boleta.js';
import { formatDate, formatMoney, formatQuantityFor } from '../format.js';
import type { NoteItemRow, NoteRow } from '../invoices/note-queries.js';
import type { InvoiceRow, InvoiceWithItems } from '../invoices/queries.js';
import type { Locale } from '../invoices/schemas.js';
import type { MerchantRow } from '../merchants/queries.js';
import { legalProfile, type LegalProfile } from '../merchants/legal-profile.js';
import { Decimal } from '../money.js';
import { cedibleBlock } from './cedible.js';
import { openDocument } from './document.js';
import { cancelledDocumentTable, drawRedBox, dteTitle, isBoleta, RED_BOX_WIDTH, timbre, type PrintedDte } from './dte-box.js';
import { drawReferenceTable, referenceLabels, referenceRows, type ReferenceRow, type ReferenceTable } from './references.js';
import { formatPercent, formatPrice, formatRateNumber, pdfLabels, pdfText, type PdfCopy, type PdfFormat, type PdfLabels } from './text.js';
import { printTicket } from './ticket.js';
import { CharWidths, wrapLines } from './wrap.js';

export interface RenderOptions {
  /** A draft is marked as such on every page and carries no payment link. */
  draft: boolean;
  /** The hosted invoice page (`public_url`): printed as the payment link. */
  publicUrl: string;
  /** The merchant can take payments on that page (`can_charge`): the link says "view and pay", else "view". */
  canCharge?: boolean;
  /** An issued DTE: the PDF becomes SII's printed representation of it (docs/decisions.md §15). Never on a draft. */
  dte?: PrintedDte;
  /** The SII's cedible copy of a factura (a `dte` of type 33 or 34): the receipt box and CEDIBLE beside the timbre (docs/decisions.md §17). */
  copy?: PdfCopy;
  /** `ticket`: a boleta (a `dte` of type 39 or 41) on a receipt printer's 80 mm roll (docs/decisions.md §20); A4 otherwise. */
  format?: PdfFormat;
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
// The item table's text, and the smallest a description prints at to keep its row on one page.
const ROW_SIZE = 9.5;
const MIN_ROW_SIZE = 6;
const NOTE_SIZE = 8;
const NOTE_GAP = 2;

// The header's two columns: the issuer on the left, the title, number and draft notice (or a
// DTE's red box) on the right.
const ISSUER_SHARE = 0.6;
const TITLE_SHARE = 0.38;
const TITLE_SIZE = 22;
const RED_BOX_GAP = 15;
// Between the last of the content and a DTE's timbre; between the timbre and a cedible copy's receipt box.
const TIMBRE_GAP = 20;
// The rule over the total spans the unit price and amount columns.
const TOTAL_RULE_X = COLS[0].width + COLS[1].width;

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

const isZero = (amount: string) => new Decimal(amount).isZero();

/** A line of an invoice or of a note; a note's corrected text has no quantity or price. */
type Item = Pick<NoteItemRow, 'description' | 'quantity' | 'unit_price' | 'discount_percent' | 'discount_amount' | 'exempt' | 'line_total'>;

/** How a document's amounts are taxed: its invoice's currency and treatment, which its notes share. */
type Treatment = Pick<InvoiceRow, 'currency' | 'is_tax_exempt' | 'tax_rate'>;

/** What a line prints under its description: its discount, and its exemption on a taxed invoice (on an exempt one every line is). */
function lineNotes(item: Item, treatment: Treatment, L: PdfLabels, locale: Locale): string[] {
  const notes: string[] = [];
  if (!isZero(item.discount_amount)) {
    const percent = item.discount_percent === null ? '' : ` ${formatPercent(item.discount_percent, locale)}`;
    notes.push(`${L.discount}${percent}: −${formatPrice(item.discount_amount, treatment.currency, locale)}`);
  }
  if (item.exempt && !treatment.is_tax_exempt) notes.push(L.exemptLine);
  return notes;
}

/** A line of the item table: its cells in the columns' order and its notes. */
function itemRow(item: Item, treatment: Treatment, L: PdfLabels, locale: Locale): SheetItem {
  return {
    cells: [
      pdfText(item.description),
      item.quantity === null ? '' : formatQuantityFor(item.quantity, locale),
      item.unit_price === null ? '' : formatPrice(item.unit_price, treatment.currency, locale),
      formatMoney(item.line_total, treatment.currency, locale),
    ],
    notes: lineNotes(item, treatment, L, locale),
  };
}

/** The amounts a document adds up to, an invoice's or a note's, with what its totals block reads of its lines. */
type Totalled = Treatment &
  Pick<InvoiceRow, 'subtotal' | 'taxable_amount' | 'exempt_amount' | 'discount_total' | 'global_discount_percent' | 'global_discount_description' | 'tax_total' | 'total'> & {
    items: Pick<Item, 'discount_amount'>[];
  };

/** "Descuento global 10 % (Cliente frecuente)": the percent when it was one, and the merchant's description. */
function globalDiscountLabel(doc: Totalled, L: PdfLabels, locale: Locale): string {
  const percent = doc.global_discount_percent === null ? '' : ` ${formatPercent(doc.global_discount_percent, locale)}`;
  const description = doc.global_discount_description ? ` (${doc.global_discount_description})` : '';
  return `${L.globalDiscount}${percent}${description}`;
}

type TotalsRow = [label: string, amount: string, strong: boolean];

/**
 * The totals block. Without discounts or exempt lines an invoice's is the subtotal, the tax and the
 * total; with them, and always on a note, it shows how the total is made, as the SII's Totales do:
 * the global discount, the net (taxed) amount, the exempt amount, the tax and the total (docs/decisions.md §17).
 */
function totalsRows(doc: Totalled, L: PdfLabels, locale: Locale, opts: { itemised: boolean }): TotalsRow[] {
  const money = (amount: string) => formatMoney(amount, doc.currency, locale);
  const taxLabel = doc.is_tax_exempt ? L.taxExempt : `${L.tax} (${formatPercent(doc.tax_rate, locale)})`;
  const tail: TotalsRow[] = [
    [taxLabel, money(doc.tax_total), false],
    [`${L.total} ${doc.currency}`, money(doc.total), true],
  ];
  const discounted = !isZero(doc.discount_total) || doc.items.some((item) => !isZero(item.discount_amount));
  const exemptLines = !doc.is_tax_exempt && !isZero(doc.exempt_amount);
  if (!opts.itemised && !discounted && !exemptLines) return [[L.subtotal, money(doc.subtotal), false], ...tail];
  const rows: TotalsRow[] = [];
  if (!isZero(doc.discount_total)) rows.push([globalDiscountLabel(doc, L, locale), `−${money(doc.discount_total)}`, false]);
  if (!doc.is_tax_exempt) rows.push([L.netAmount, money(doc.taxable_amount), false]);
  if (!isZero(doc.exempt_amount)) rows.push([L.exemptAmount, money(doc.exempt_amount), false]);
  return [...rows, ...tail];
}

/** The client as a Chilean factura, and each of its notes, prints its receiver: the name, then RUT, giro, address, comuna, ciudad. */
function clientBlock(invoice: InvoiceRow, L: PdfLabels): Sheet['client'] {
  const lines: [string, string | null][] = [
    [L.email, invoice.client_email],
    [L.rut, invoice.client_rut === null ? null : formatRut(invoice.client_rut)],
    [L.giro, invoice.client_giro],
    [L.phone, invoice.client_phone],
    [L.address, invoice.client_address],
    [L.comuna, invoice.client_comuna],
    [L.ciudad, invoice.client_ciudad],
  ];
  return { label: L.billTo, name: invoice.client_name, lines: lines.flatMap(([label, value]) => (value ? [`${label}: ${value}`] : [])) };
}

export interface SheetItem {
  /** In the columns' order (COLS). */
  cells: string[];
  notes: string[];
}

/** What a document prints, every text ready: an invoice and a note differ here, and share the page's layout. */
export interface Sheet {
  locale: Locale;
  /** The title at the top right, and the number under it, where no DTE's red box takes their place. */
  title: string;
  number: string;
  /** The PDF's Title and Subject; its creation date is the document's, not the clock's, so the same document gives the same bytes. */
  info: { title: string; subject: string; created: Date };
  /** Its heading ("Facturar a", a boleta's "Cliente"), the name (empty when not known) and the lines under it. */
  client: { label: string; name: string; lines: string[] };
  /** The dates and numbers beside the client. */
  dates: [label: string, value: string][];
  /** Between the client and the items, in the order of the DTE's Referencia lines. */
  references: ReferenceTable[];
  items: SheetItem[];
  totals: TotalsRow[];
  /** Prices include the tax: said under the totals. */
  taxInclusive: boolean;
  /** A boleta's "El IVA de esta boleta es $X", on its own line under the totals; null on any other document. */
  vatNotice: string | null;
  /** The hosted page, printed under the totals. */
  link: { label: string; url: string } | null;
  /** What the footer names the document by on every page. */
  footer: string;
}

/** How the sheet is printed: a draft's marks, a DTE's red box and timbre, a factura's cedible copy. */
interface PrintOptions {
  draft: boolean;
  dte: PrintedDte | null;
  copy?: PdfCopy | undefined;
}

/**
 * The invoice as a PDF, in the invoice's locale, in an embedded Unicode font (fonts.ts). The
 * issuer prints with its legal profile when it has one; the hosted page's link says "view and pay"
 * only when the merchant can take payments (docs/decisions.md §11). Deterministic: the same invoice gives
 * the same bytes, as the creation date (and so the file id) comes from the invoice, not from the
 * clock.
 *
 * With `opts.dte` it is SII's printed representation of that DTE: the red box takes the title's
 * place, the invoice's own number moves to the dates, and the timbre closes the last page.
 */
export function renderInvoicePdf(invoice: InvoiceWithItems, merchant: MerchantRow, opts: RenderOptions): Promise<Buffer> {
  const locale = invoice.locale === 'en' ? 'en' : 'es';
  const L = pdfLabels(locale);
  const dte = opts.dte ?? null;
  if (dte && opts.draft) throw new Error('a draft carries no DTE');
  if (dte && (dte.type === 61) !== (dte.reference !== undefined)) throw new Error('a credit note, and only a credit note, prints the document it cancels');
  if (dte?.type === 56) throw new Error('a debit note prints as a note (renderNotePdf), never as its invoice');
  if (opts.copy === 'cedible' && dte?.type !== 33 && dte?.type !== 34) throw new Error('only a factura (a DTE of type 33 or 34) has a cedible copy');
  if (opts.format === 'ticket' && !(dte && isBoleta(dte))) throw new Error('only a boleta (a DTE of type 39 or 41) prints as a ticket');
  if (dte && isBoleta(dte)) {
    const sheet = boletaSheet(invoice, merchant, dte, opts, L, locale);
    return opts.format === 'ticket' ? printTicket(sheet, merchant, dte) : printSheet(sheet, merchant, { draft: false, dte });
  }

  // What the PDF's title and the footer call the invoice.
  const shownAs = opts.draft ? L.draft : (invoice.invoice_number ?? '');
  const dates: [string, string][] = [
    [L.issueDate, formatDate(invoice.issue_date, locale)],
    [L.dueDate, formatDate(invoice.due_date, locale)],
    [L.currency, invoice.currency],
  ];
  // The red box shows the folio: the invoice's own number, which its page and e-mails show, goes here.
  if (dte) dates.unshift([`${L.title} ${L.number}`, invoice.invoice_number ?? '']);
  if (invoice.exchange_rate !== null && invoice.base_currency) {
    dates.push([L.exchangeRate, `1 ${invoice.currency} = ${formatRateNumber(invoice.exchange_rate, locale)} ${invoice.base_currency}`]);
  }
  if (invoice.external_reference) dates.push([L.reference, invoice.external_reference]);
  // The documents this one points to (an orden de compra), then the one a credit note cancels.
  const references: ReferenceTable[] = [];
  if (invoice.references.length > 0) references.push({ labels: referenceLabels(L), rows: referenceRows(invoice.references, L, locale) });
  if (dte?.reference) references.push(cancelledDocumentTable(dte.reference, locale));

  const sheet: Sheet = {
    locale,
    title: L.title.toUpperCase(),
    number: opts.draft ? L.draft : `${L.number} ${invoice.invoice_number ?? ''}`,
    info: {
      title: dte ? dteTitle(dte) : `${L.title} ${shownAs}`.trim(),
      subject: `${L.title} - ${invoice.client_name}`,
      created: invoice.sent_at ?? invoice.created_at,
    },
    client: clientBlock(invoice, L),
    dates,
    references,
    items: invoice.items.map((item) => itemRow(item, invoice, L, locale)),
    totals: totalsRows(invoice, L, locale, { itemised: false }),
    taxInclusive: invoice.tax_inclusive && !invoice.is_tax_exempt,
    vatNotice: null,
    // The payment link: the hosted page (a draft has none yet). What a merchant that cannot charge
    // offers on its page is a view, not a payment.
    link: opts.draft ? null : { label: opts.canCharge ? L.viewAndPayOnline : L.viewOnline, url: opts.publicUrl },
    footer: shownAs,
  };
  return printSheet(sheet, merchant, { draft: opts.draft, dte, copy: opts.copy });
}

/**
 * The boleta the SII received (docs/decisions.md §20): its lines and totals as boleta.ts states them, VAT
 * included and adding up to the peso, so what the consumer reads is what the DTE says.
 */
function boletaOf(invoice: InvoiceWithItems, merchant: MerchantRow, dte: PrintedDte & { type: 39 | 41 }): BoletaContent {
  const { rut, razon_social, giro, acteco, direccion, comuna, ciudad } = merchant;
  if (!rut || !razon_social || !giro || !direccion || !comuna || !ciudad) throw new Error(`merchant ${merchant.id} has a boleta but no legal profile to print with it`);
  // The issuer is stated in the DTE, not in what the lines and totals print: its acteco is not read.
  return boletaDteContent(invoice, dte.type, dte.folio, { rut, razonSocial: razon_social, giro, acteco: acteco ?? '', direccion, comuna, ciudad });
}

/** A boleta's line: its description, the invoice's quantity, the price and amount with VAT, its discount and exemption. */
function boletaItemRow(line: BoletaLine, quantity: string, boleta: BoletaContent, L: PdfLabels, locale: Locale): SheetItem {
  const notes: string[] = [];
  if (line.discountAmount !== '0') {
    const percent = line.discountPercent === null ? '' : ` ${formatPercent(line.discountPercent, locale)}`;
    notes.push(`${L.discount}${percent}: −${formatMoney(line.discountAmount, 'CLP', locale)}`);
  }
  // On a 41 every line is exempt, as its name says.
  if (line.exempt && boleta.type === 39) notes.push(L.exemptLine);
  return {
    // A line with no price that gives its amount exactly states the amount alone (boleta.ts): the quantity sold still prints.
    cells: [pdfText(line.description), formatQuantityFor(line.quantity ?? quantity, locale), line.unitPrice === null ? '' : formatPrice(line.unitPrice, 'CLP', locale), formatMoney(line.amount, 'CLP', locale)],
    notes,
  };
}

/**
 * The invoice printed as its boleta (docs/decisions.md §20): the consumer's name and e-mail when known and
 * never the generic RUT 66666666-6 the DTE addresses, prices and totals with VAT as the boleta
 * states them, and for a 39 the VAT it contains on a line of its own, which the SII asks a boleta
 * to show.
 */
function boletaSheet(invoice: InvoiceWithItems, merchant: MerchantRow, dte: PrintedDte & { type: 39 | 41 }, opts: RenderOptions, L: PdfLabels, locale: Locale): Sheet {
  const boleta = boletaOf(invoice, merchant, dte);
  const money = (amount: string) => formatMoney(amount, 'CLP', locale);
  const totals: TotalsRow[] = [];
  // A 39 states its global discount in pesos with VAT; a 41's is the invoice's, on exempt amounts.
  const discount = boleta.type === 39 ? (boleta.globalDiscount?.value ?? '0') : invoice.discount_total;
  if (!isZero(discount)) totals.push([globalDiscountLabel(invoice, L, locale), `−${money(new Decimal(discount).toFixed(0))}`, false]);
  if (boleta.type === 39 && !isZero(boleta.totals.exempt)) totals.push([L.exemptAmount, money(boleta.totals.exempt), false]);
  totals.push([`${L.total} CLP`, money(boleta.totals.total), true]);
  const dates: [string, string][] = [
    [L.internalNumber, invoice.invoice_number ?? ''],
    [L.issueDate, formatDate(boleta.issueDate, locale)],
    [L.dueDate, formatDate(invoice.due_date, locale)],
  ];
  if (invoice.external_reference) dates.push([L.reference, invoice.external_reference]);
  return {
    locale,
    title: dteTitle(dte),
    number: `${L.internalNumber} ${invoice.invoice_number ?? ''}`,
    info: { title: dteTitle(dte), subject: `${dteTitle(dte)} - ${invoice.client_name}`, created: invoice.sent_at ?? invoice.created_at },
    client: { label: L.consumer, name: boleta.consumer.name ?? '', lines: boleta.consumer.email ? [`${L.email}: ${boleta.consumer.email}`] : [] },
    dates,
    references: invoice.references.length > 0 ? [{ labels: referenceLabels(L), rows: referenceRows(invoice.references, L, locale) }] : [],
    items: boleta.lines.map((line, i) => boletaItemRow(line, invoice.items[i]!.quantity, boleta, L, locale)),
    totals,
    taxInclusive: false,
    vatNotice: boleta.type === 39 ? L.boletaVat.replace('{amount}', money(boleta.totals.tax)) : null,
    // Not "view the invoice": the consumer holds a boleta.
    link: { label: opts.canCharge ? L.viewAndPayOnline : L.viewDocumentOnline, url: opts.publicUrl },
    footer: invoice.invoice_number ?? '',
  };
}

/** The document a note modifies, as its last reference names it: by its DTE, or by its own number when it has none. */
export type ModifiedDocument = { date: string } & ({ dteType: number; folio: number } | { kind: 'invoice' | 'credit'; number: string });

/** A credit or debit note as its PDF prints it (docs/decisions.md §17). */
export interface PrintedNote {
  note: NoteRow;
  /** The note's invoice: its client, language, tax treatment and number. */
  invoice: InvoiceRow;
  /** YYYY-MM-DD: its DTE's issue date, or the merchant's date of the note. */
  issueDate: string;
  modifies: ModifiedDocument;
}

/** The row of the document a note modifies, with the note's reason: the SII's RazonRef. */
function modifiedRow(modifies: ModifiedDocument, reason: string, L: PdfLabels, locale: Locale): ReferenceRow {
  if ('dteType' in modifies) return referenceRows([{ type: String(modifies.dteType), folio: String(modifies.folio), date: modifies.date, reason }], L, locale)[0]!;
  return { type: modifies.kind === 'invoice' ? L.title : L.creditNote, folio: modifies.number, date: formatDate(modifies.date, locale), reason };
}

/**
 * A credit or debit note as a PDF, in its invoice's locale: the invoice's client, the note's lines
 * and totals, its references and last the document it modifies with the note's reason. With `dte`
 * (a 61 for a credit note, a 56 for a debit note) it is SII's printed representation of it, as an
 * invoice's is; without, its title and number stand at the top right. No payment link: a note is
 * not paid on the invoice's page. Deterministic, as the invoice's PDF is.
 */
export function renderNotePdf({ note, invoice, issueDate, modifies }: PrintedNote, merchant: MerchantRow, dte: PrintedDte | null): Promise<Buffer> {
  const locale = invoice.locale === 'en' ? 'en' : 'es';
  const L = pdfLabels(locale);
  if (dte && dte.type !== (note.kind === 'credit' ? 61 : 56)) throw new Error(`a ${note.kind} note does not print as a DTE of type ${dte.type}`);
  if (dte?.reference) throw new Error('a note names the document it modifies among its references, not on its DTE');
  const name = note.kind === 'credit' ? L.creditNote : L.debitNote;
  const dates: [string, string][] = [
    [L.issueDate, formatDate(issueDate, locale)],
    [`${L.title} ${L.number}`, invoice.invoice_number ?? ''],
    [L.currency, note.currency],
  ];
  // The red box shows the folio: the note's own number goes here, as an invoice's does.
  if (dte) dates.unshift([`${name} ${L.number}`, note.number]);
  const treatment: Treatment = { currency: note.currency, is_tax_exempt: invoice.is_tax_exempt, tax_rate: invoice.tax_rate };
  const sheet: Sheet = {
    locale,
    title: name.toUpperCase(),
    number: `${L.number} ${note.number}`,
    info: { title: dte ? dteTitle(dte) : `${name} ${note.number}`, subject: `${name} - ${invoice.client_name}`, created: note.created_at },
    client: clientBlock(invoice, L),
    dates,
    references: [{ labels: referenceLabels(L), rows: [...referenceRows(note.references, L, locale), modifiedRow(modifies, note.description, L, locale)] }],
    items: note.items.map((item) => itemRow(item, treatment, L, locale)),
    totals: totalsRows({ ...note, ...treatment }, L, locale, { itemised: true }),
    taxInclusive: invoice.tax_inclusive && !invoice.is_tax_exempt,
    vatNotice: null,
    link: null,
    footer: note.number,
  };
  return printSheet(sheet, merchant, { draft: false, dte });
}

/**
 * The sheet on A4 pages: the issuer (with its legal profile when it has one) and the title or a
 * DTE's red box, the client and the dates, the references, the items (their header repeated on each
 * page), the totals, the link, a DTE's timbre at the bottom of the last page, and the footer.
 */
function printSheet(sheet: Sheet, merchant: MerchantRow, opts: PrintOptions): Promise<Buffer> {
  const { locale } = sheet;
  const L = pdfLabels(locale);
  const issuer = issuerBlock(merchant, L);
  const { dte } = opts;
  if (dte && !issuer.profile) throw new Error(`merchant ${merchant.id} has a DTE but no legal profile to print with it`);

  const { doc, done } = openDocument(PAGE, locale, { ...sheet.info, author: issuer.name });

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
  let y = Math.max(merchantBottom, titleBottom) + 18;
  doc.moveTo(left, y).lineTo(right, y).lineWidth(0.5).strokeColor(RULE).stroke();
  y += 14;

  // Client (left) and dates (right).
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
  y = Math.max(clientBottom, dy) + 22;
  for (const table of sheet.references) {
    y = drawReferenceTable(doc, table, { x: left, y, width, top: PAGE.margin, bottom: bottom() }, INK) + 22;
  }

  // Items. Each description is broken into its lines once (wrap.ts) and printed as those lines,
  // so a row's height is its lines'. A row never spans more than one page (docs/limits.md): one
  // taller than a page prints its description smaller until it fits, down to MIN_ROW_SIZE; only a
  // description longer than the field limits allow (stored before them) is split between pages by
  // its lines, the quantity and amounts printed with its first part and its notes with its last.
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
  const itemRow = (lines: string[], rest: string[], notes: string[], size: number) => {
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
  for (const { cells, notes } of sheet.items) {
    const wrapAt = (size: number) => {
      doc.font('regular').fontSize(size);
      return wrapLines(doc, widths, cells[0]!, descriptionW);
    };
    let size = ROW_SIZE;
    let lines = wrapAt(size);
    let rest = cells.slice(1);
    while (size > MIN_ROW_SIZE && itemRow(lines, rest, notes, size).height > pageRoom) {
      size -= 0.5;
      lines = wrapAt(size);
    }
    for (;;) {
      const row = itemRow(lines, rest, notes, size);
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
      itemRow(lines.slice(0, fit), rest, [], size).draw();
      lines = lines.slice(fit);
      rest = rest.map(() => '');
      newPage();
    }
  }

  // Totals, right-aligned under the amount columns.
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

  if (sheet.link) {
    y += 24;
    if (y + 40 > bottom()) {
      doc.addPage();
      y = PAGE.margin;
    }
    doc.font('bold').fontSize(10).fillColor(INK).text(`${sheet.link.label}:`, left, y, { width });
    doc.font('regular').fontSize(9.5).fillColor('#1d4ed8').text(pdfText(sheet.link.url), { width, link: sheet.link.url, underline: true });
  }

  // The timbre at the bottom left of the last page (a cedible copy's receipt box and CEDIBLE at the
  // bottom right, beside it), on a page of its own when the content reaches it.
  if (dte) {
    const stamp = timbre(doc, dte, locale);
    const receiptW = width - stamp.width - TIMBRE_GAP;
    const receipt = opts.copy === 'cedible' ? cedibleBlock(doc, receiptW) : null;
    const height = Math.max(stamp.height, receipt?.height ?? 0);
    if (doc.y + TIMBRE_GAP > bottom() - height) doc.addPage();
    stamp.draw(left, bottom() - stamp.height);
    receipt?.draw(right - receiptW, bottom() - receipt.height);
  }

  // Footer on every page: "Página 1 de 2" and the number.
  const range = doc.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    doc.switchToPage(i);
    const pageBottom = doc.page.margins.bottom;
    doc.page.margins.bottom = 0; // writing inside the bottom margin must not open a new page
    const footer = `${sheet.footer}   ${L.page} ${i + 1 - range.start} ${L.of} ${range.count}`;
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
