// An invoice printed as its boleta (docs/decisions.md §20): its lines and totals as the DTE states
// them (boleta.ts), VAT included, for the A4 sheet and the receipt printer's ticket alike.
import { boletaDteContent, type BoletaContent, type BoletaLine } from '../dte/boleta.js';
import { formatDate, formatMoney, formatQuantityFor } from '../format.js';
import type { InvoiceWithItems } from '../invoices/queries.js';
import type { Locale } from '../invoices/schemas.js';
import type { MerchantRow } from '../merchants/queries.js';
import { Decimal } from '../money.js';
import { dteTitle, type PrintedDte } from './dte-box.js';
import { referenceLabels, referenceRows } from './references.js';
import { globalDiscountLabel, isZero, type Sheet, type SheetItem, type TotalsRow } from './sheet.js';
import { formatPercent, formatPrice, pdfText, type PdfLabels } from './text.js';

/** What the sheet reads of the render options: the hosted page it links to, and whether it takes payments there. */
export interface BoletaSheetOptions {
  publicUrl: string;
  canCharge?: boolean | undefined;
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
export function boletaSheet(invoice: InvoiceWithItems, merchant: MerchantRow, dte: PrintedDte & { type: 39 | 41 }, opts: BoletaSheetOptions, L: PdfLabels, locale: Locale): Sheet {
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
    // The SII's legend, in Spanish and Chilean pesos whatever the document's language.
    vatNotice: boleta.type === 39 ? `El IVA de esta boleta es ${formatMoney(boleta.totals.tax, 'CLP', 'es')}` : null,
    // Not "view the invoice": the consumer holds a boleta.
    link: { label: opts.canCharge ? L.viewAndPayOnline : L.viewDocumentOnline, url: opts.publicUrl },
    footer: invoice.invoice_number ?? '',
  };
}
