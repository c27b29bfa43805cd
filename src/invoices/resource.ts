import { iso } from '../http/schemas.js';
import { publicInvoiceUrl } from './public-url.js';
import { Decimal, wireAmount, wireExchangeRate, wireQuantity, wireRate, wireUnitPrice } from '../money.js';
import type { InvoiceRow, ListedInvoice } from './queries.js';
import type { ReminderRow } from './transition-queries.js';
import type { CreditNoteStatus, InvoiceResource } from './schemas.js';

// Rows → the API's shapes: the one mapping of each. Their types are checked against the response
// schemas where the routes return them (src/http/route.ts).

/** The bases resources link to: the API's and the hosted pages'. */
export interface Urls {
  apiBase: string;
  publicBase: string;
}

/** What the client still owes (docs/tax-documents.md): never below 0. */
export function amountDue(row: Pick<InvoiceRow, 'total' | 'amount_debited' | 'amount_credited' | 'amount_paid'>): string {
  const due = new Decimal(row.total).plus(row.amount_debited).minus(row.amount_credited).minus(row.amount_paid);
  return due.isNegative() ? '0' : due.toFixed();
}

/** The Invoice: GET /invoices/{id}, list pages and `invoice.*` events. */
export function invoiceResource(row: ListedInvoice, urls: Urls): InvoiceResource {
  const self = `${urls.apiBase}/invoices/${row.id}`;
  const publicUrl = publicInvoiceUrl(urls.publicBase, row.public_token);
  return {
    id: row.id,
    client_id: row.client_id,
    client: {
      id: row.client_id,
      name: row.client_name,
      email: row.client_email,
      phone: row.client_phone,
      rut: row.client_rut,
      address: row.client_address,
      giro: row.client_giro,
      comuna: row.client_comuna,
      ciudad: row.client_ciudad,
    },
    invoice_number: row.invoice_number,
    external_reference: row.external_reference,
    status: row.status,
    currency: row.currency,
    exchange_rate: row.exchange_rate === null ? null : wireExchangeRate(row.exchange_rate),
    base_currency: row.base_currency,
    issue_date: row.issue_date,
    due_date: row.due_date,
    is_tax_exempt: row.is_tax_exempt,
    tax_inclusive: row.tax_inclusive,
    tax_rate: wireRate(row.tax_rate),
    subtotal: wireAmount(row.subtotal, row.currency),
    taxable_amount: wireAmount(row.taxable_amount, row.currency),
    exempt_amount: wireAmount(row.exempt_amount, row.currency),
    discount_total: wireAmount(row.discount_total, row.currency),
    global_discount:
      row.global_discount_percent === null && row.global_discount_amount === null
        ? null
        : {
            percent: row.global_discount_percent === null ? null : wireRate(row.global_discount_percent),
            amount: row.global_discount_amount === null ? null : wireAmount(row.global_discount_amount, row.currency),
            description: row.global_discount_description,
          },
    references: row.references,
    tax_total: wireAmount(row.tax_total, row.currency),
    total: wireAmount(row.total, row.currency),
    amount_paid: wireAmount(row.amount_paid, row.currency),
    amount_credited: wireAmount(row.amount_credited, row.currency),
    amount_debited: wireAmount(row.amount_debited, row.currency),
    amount_due: wireAmount(amountDue(row), row.currency),
    public_token: row.public_token,
    public_url: publicUrl,
    payment_proof_file_id: null,
    dte_folio: row.dte_folio,
    dte_type: row.dte_type,
    dte_status: row.dte_status,
    dte_track_id: row.dte_track_id,
    credit_note:
      row.credit_note_folio === null ? null : { type: 61 as const, folio: row.credit_note_folio, status: row.credit_note_status as CreditNoteStatus },
    is_legacy: false,
    payment_reference:
      row.payment_provider && row.payment_transaction_id
        ? { provider: row.payment_provider, transaction_id: row.payment_transaction_id, paid_at: iso(row.paid_at) }
        : null,
    items: row.items.map((it) => ({
      id: it.id,
      product_id: it.product_id,
      description: it.description,
      quantity: wireQuantity(it.quantity),
      unit_price: wireUnitPrice(it.unit_price, row.currency),
      discount_percent: it.discount_percent === null ? null : wireRate(it.discount_percent),
      discount_amount: wireAmount(it.discount_amount, row.currency),
      exempt: it.exempt,
      line_total: wireAmount(it.line_total, row.currency),
    })),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
    _links: {
      self: { href: self, method: 'GET' as const, rel: 'self', title: 'Invoice' },
      pdf: { href: `${self}/pdf`, method: 'GET' as const, rel: 'pdf', title: 'Invoice PDF' },
      public: { href: publicUrl, method: 'GET' as const, rel: 'public', title: 'Hosted invoice page' },
    },
  };
}

export function createdResponse(row: InvoiceRow, urls: Urls) {
  return {
    invoice_id: row.id,
    status: row.status,
    total: wireAmount(row.total, row.currency),
    currency: row.currency,
    public_url: publicInvoiceUrl(urls.publicBase, row.public_token),
    client_id: row.client_id,
    client_name: row.client_name,
    created_at: iso(row.created_at)!,
    invoice_number: row.invoice_number,
    external_reference: row.external_reference,
  };
}

export function statusSummary(row: InvoiceRow, urls: Urls) {
  return {
    invoice_id: row.id,
    invoice_number: row.invoice_number,
    status: row.status,
    total: wireAmount(row.total, row.currency),
    currency: row.currency,
    public_url: publicInvoiceUrl(urls.publicBase, row.public_token),
    issue_date: row.issue_date,
    due_date: row.due_date,
    paid_at: iso(row.paid_at),
    reminders_sent: row.reminders_sent,
    last_viewed_at: iso(row.last_viewed_at),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export function sentResponse(row: InvoiceRow, urls: Urls) {
  return {
    invoice_id: row.id,
    invoice_number: row.invoice_number!,
    status: row.status,
    public_url: publicInvoiceUrl(urls.publicBase, row.public_token),
    sent_at: iso(row.sent_at)!,
  };
}

export function reminderResource(r: ReminderRow) {
  return { reminder_id: r.id, invoice_id: r.invoice_id, sent_at: iso(r.sent_at)!, reminder_number: r.reminder_number };
}
