// What a document prints, every text ready (`Sheet`): an invoice, its boleta and a note differ
// there and share the page's layout. Beside it, the rows an invoice and a note build alike: the
// receiver, the item lines and the totals.
import { formatRut } from '../clients/rut.js';
import { formatMoney, formatQuantityFor } from '../format.js';
import type { NoteItemRow } from '../invoices/note-queries.js';
import type { InvoiceRow } from '../invoices/queries.js';
import type { Locale } from '../invoices/schemas.js';
import { Decimal } from '../money.js';
import type { ReferenceTable } from './references.js';
import { formatPercent, formatPrice, pdfText, type PdfLabels } from './text.js';

export interface SheetItem {
  /** In the columns' order (COLS, item-table.ts). */
  cells: string[];
  notes: string[];
}

export type TotalsRow = [label: string, amount: string, strong: boolean];

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

export const isZero = (amount: string) => new Decimal(amount).isZero();

/** A line of an invoice or of a note; a note's corrected text has no quantity or price. */
type Item = Pick<NoteItemRow, 'description' | 'quantity' | 'unit_price' | 'discount_percent' | 'discount_amount' | 'exempt' | 'line_total'>;

/** How a document's amounts are taxed: its invoice's currency and treatment, which its notes share. */
export type Treatment = Pick<InvoiceRow, 'currency' | 'is_tax_exempt' | 'tax_rate'>;

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
export function itemRow(item: Item, treatment: Treatment, L: PdfLabels, locale: Locale): SheetItem {
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
export function globalDiscountLabel(doc: Pick<InvoiceRow, 'global_discount_percent' | 'global_discount_description'>, L: PdfLabels, locale: Locale): string {
  const percent = doc.global_discount_percent === null ? '' : ` ${formatPercent(doc.global_discount_percent, locale)}`;
  const description = doc.global_discount_description ? ` (${doc.global_discount_description})` : '';
  return `${L.globalDiscount}${percent}${description}`;
}

/**
 * The totals block. Without discounts or exempt lines an invoice's is the subtotal, the tax and the
 * total; with them, and always on a note, it shows how the total is made, as the SII's Totales do:
 * the global discount, the net (taxed) amount, the exempt amount, the tax and the total (docs/decisions.md §17).
 */
export function totalsRows(doc: Totalled, L: PdfLabels, locale: Locale, opts: { itemised: boolean }): TotalsRow[] {
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
export function clientBlock(invoice: InvoiceRow, L: PdfLabels): Sheet['client'] {
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
