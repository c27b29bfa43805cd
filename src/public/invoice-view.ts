import { amountDue } from '../checkout/invoice-session.js';
import { formatRut } from '../clients/rut.js';
import { isBoletaType } from '../dte/boleta.js';
import { formatDate, formatMoment, formatMoney, formatQuantityFor } from '../format.js';
import type { InvoiceWithItems } from '../invoices/queries.js';
import type { ChargingMerchant } from '../checkout/credentials.js';
import { legalProfile } from '../merchants/legal-profile.js';
import { formatPercent, formatPrice, formatRateNumber } from '../pdf/text.js';

export const labelKeys = [
  'invoice', 'draft', 'from', 'billTo', 'rut', 'giro', 'issueDate', 'dueDate', 'status', 'reference', 'description', 'quantity',
  'unitPrice', 'lineTotal', 'subtotal', 'tax', 'taxExempt', 'taxInclusive', 'total', 'amountPaid', 'balanceDue',
  'exchangeRate', 'downloadPdf', 'downloadCedible', 'pay', 'howToPay', 'contactIssuer', 'paidOn', 'questions', 'backToInvoice',
  'notFoundTitle', 'notFoundBody', 'errorTitle', 'errorBody', 'tooManyTitle', 'tooManyBody', 'forbiddenTitle',
  'forbiddenBody', 'payFailedTitle', 'payFailedBody',
] as const;

type LabelKey = (typeof labelKeys)[number];

/** The page's words; `boleta` replaces those that would call a consumer's boleta (39, 41) a factura. */
export type PublicLabels = Record<LabelKey, string> & { statuses: Record<string, string>; boleta: Partial<Record<LabelKey, string>> };

/** Where the Pay form posts, and the token that proves the post came from this page. */
export interface PayForm {
  action: string;
  csrfToken: string;
}

/**
 * What the hosted invoice page shows. An invoice the customer can pay now has a Pay button when
 * the merchant can charge, and the merchant's own payment instructions (or, with none, a word to
 * contact it) when it cannot (docs/decisions.md §11).
 */
export function invoiceView(invoice: InvoiceWithItems, merchant: ChargingMerchant, labels: PublicLabels, pdfUrl: string, payForm: PayForm) {
  const L = isBoletaType(invoice.dte_type) ? { ...labels, ...labels.boleta } : labels;
  const locale = invoice.locale;
  const money = (amount: string) => formatMoney(amount, invoice.currency, locale);
  const due = amountDue(invoice);
  const canCharge = merchant.can_charge;
  return {
    lang: locale,
    labels: L,
    merchant: { name: merchant.name, email: merchant.email, legal: legalProfile(merchant) },
    number: invoice.invoice_number ?? '',
    status: invoice.status,
    statusLabel: L.statuses[invoice.status] ?? invoice.status,
    client: { name: invoice.client_name, email: invoice.client_email, rut: invoice.client_rut && formatRut(invoice.client_rut) },
    issueDate: formatDate(invoice.issue_date, locale),
    dueDate: formatDate(invoice.due_date, locale),
    reference: invoice.external_reference,
    exchangeRate:
      invoice.exchange_rate !== null && invoice.base_currency
        ? `1 ${invoice.currency} = ${formatRateNumber(invoice.exchange_rate, locale)} ${invoice.base_currency}`
        : null,
    items: invoice.items.map((it) => ({
      description: it.description,
      quantity: formatQuantityFor(it.quantity, locale),
      unitPrice: formatPrice(it.unit_price, invoice.currency, locale),
      lineTotal: money(it.line_total),
    })),
    subtotal: money(invoice.subtotal),
    taxLabel: invoice.is_tax_exempt ? L.taxExempt : `${L.tax} (${formatPercent(invoice.tax_rate, locale)})`,
    taxTotal: money(invoice.tax_total),
    taxInclusive: invoice.tax_inclusive && !invoice.is_tax_exempt,
    total: money(invoice.total),
    amountPaid: money(invoice.amount_paid),
    balanceDue: due ? money(due) : null,
    paidOn: invoice.status === 'paid' && invoice.paid_at ? formatMoment(invoice.paid_at, locale, merchant.timezone) : null,
    pay: due && canCharge ? { ...payForm, label: `${L.pay} ${money(due)}` } : null,
    // Kept as the merchant wrote it; the template escapes it and the page keeps its line breaks.
    instructions: due && !canCharge ? (merchant.payment_instructions ?? L.contactIssuer) : null,
    pdfUrl,
    // A factura's cedible copy, the one the customer signs on delivery (docs/decisions.md §17).
    cedibleUrl: invoice.dte_type === 33 || invoice.dte_type === 34 ? `${pdfUrl}?copy=cedible` : null,
  };
}
