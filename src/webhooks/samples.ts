import type { EventType } from '../events/emit.js';
import type { EventData } from './event-schemas.js';
import { newId, randomToken } from '../ids.js';
import { checkoutResource } from '../checkout/resource.js';
import type { CheckoutRow } from '../checkout/queries.js';
import { clientResource } from '../clients/service.js';
import type { ClientRow } from '../clients/queries.js';
import type { NoteKind, NoteRow } from '../invoices/note-queries.js';
import { creditNoteResource, debitNoteResource } from '../invoices/note-resource.js';
import type { ReminderRow } from '../invoices/transition-queries.js';
import { invoiceResource, reminderResource, type Urls } from '../invoices/resource.js';
import type { ListedInvoice } from '../invoices/queries.js';
import type { InvoiceStatus } from '../invoices/schemas.js';
import { paymentResource, type PaymentRow } from '../payments/service.js';

const DAY_MS = 86_400_000;

/**
 * The hosted page's token of every sample: never a real one (ours are 32 characters, and the
 * public routes take nothing under 16 as a token). `/i/sample` answers a page that says the
 * event was a test, with nothing of any merchant on it.
 */
export const SAMPLE_TOKEN = 'sample';

/**
 * Where a sample's links lead: its hosted page, and under it every other link of the sample (the
 * API's `_links`, `checkout_url`), which answers the same page. A sample's ids are made up, so the
 * API would answer them 404; these answer 200 and say why there is nothing behind them.
 */
export function sampleUrls(urls: Urls): Urls {
  return { apiBase: `${urls.publicBase}/i/${SAMPLE_TOKEN}`, publicBase: urls.publicBase };
}

/**
 * Sample numbers: real ones are `{prefix}{n}` with n ≥ 1 padded to at least 6 digits (invoices,
 * docs/decisions.md §4) or `CN-`/`DN-` likewise (notes), so a number ending in `-000000` is never one,
 * whatever the merchant's prefix. SII folios start at 1: folio 0 is never a real one either.
 */
export const SAMPLE_NUMBERS = { invoice: 'INV-000000', credit: 'CN-000000', debit: 'DN-000000', folio: 0 } as const;

/**
 * Made-up rows of one sample: a client, an invoice to them with a reminder, a checkout session for
 * it and its payment. Typed as the rows the real queries return, so a column that the resources
 * start to show must be given here too (the compiler says so).
 */
class SampleRows {
  readonly ids = { invoice: newId(), client: newId(), checkout: newId(), payment: newId() };
  readonly transactionId = `test_${randomToken(12)}`;

  constructor(
    readonly merchantId: string,
    readonly now: Date,
  ) {}

  private date(offsetDays: number): string {
    return new Date(this.now.getTime() + offsetDays * DAY_MS).toISOString().slice(0, 10);
  }

  invoice(status: InvoiceStatus): ListedInvoice {
    const paid = status === 'paid';
    return {
      id: this.ids.invoice,
      client_id: this.ids.client,
      client_name: 'Cliente de Prueba SpA',
      client_email: 'cliente@example.cl',
      client_phone: null,
      client_rut: '76086428-5',
      client_address: 'Av. Apoquindo 4500',
      client_giro: 'Comercio al por menor',
      client_comuna: 'Las Condes',
      client_ciudad: 'Santiago',
      invoice_number: status === 'draft' ? null : SAMPLE_NUMBERS.invoice,
      external_reference: 'TEST-1',
      status,
      currency: 'CLP',
      exchange_rate: null,
      base_currency: null,
      issue_date: this.date(status === 'overdue' ? -31 : 0),
      due_date: this.date(status === 'overdue' ? -1 : 30),
      is_tax_exempt: false,
      tax_inclusive: false,
      tax_rate: '19',
      subtotal: '10000',
      taxable_amount: '10000',
      exempt_amount: '0',
      discount_total: '0',
      global_discount_percent: null,
      global_discount_amount: null,
      global_discount_description: null,
      references: [],
      tax_total: '1900',
      total: '11900',
      amount_paid: paid ? '11900' : '0',
      amount_credited: '0',
      amount_debited: '0',
      public_token: SAMPLE_TOKEN,
      payment_provider: paid ? 'manual' : null,
      payment_transaction_id: paid ? this.ids.payment : null,
      dte_type: null,
      dte_folio: null,
      dte_status: null,
      dte_track_id: null,
      credit_note_folio: null,
      credit_note_status: null,
      paid_at: paid ? this.now : null,
      created_at: this.now,
      updated_at: this.now,
      items: [{ id: newId(), product_id: null, description: 'Servicio de prueba', quantity: '1', unit_price: '10000', discount_percent: null, discount_amount: '0', exempt: false, line_total: '10000' }],
    };
  }

  /** A sent invoice whose DTE (type 33, a folio, a track id) SII answered. */
  invoiceWithDte(status: 'accepted' | 'rejected'): ListedInvoice {
    return { ...this.invoice('sent'), dte_type: 33, dte_folio: SAMPLE_NUMBERS.folio, dte_status: status, dte_track_id: '0123456789' };
  }

  client(): ClientRow {
    return {
      id: this.ids.client,
      merchant_id: this.merchantId,
      name: 'Cliente de Prueba SpA',
      email: 'cliente@example.cl',
      rut: '76086428-5',
      phone: null,
      address: 'Av. Apoquindo 4500',
      giro: 'Comercio al por menor',
      comuna: 'Las Condes',
      ciudad: 'Santiago',
      created_at: this.now,
      updated_at: this.now,
    };
  }

  /** A credit note returning the invoice's one line (CN), or a debit note charging interest (DN). */
  note(kind: NoteKind): NoteRow {
    const credit = kind === 'credit';
    return {
      id: newId(),
      merchant_id: this.merchantId,
      invoice_id: this.ids.invoice,
      kind,
      number: SAMPLE_NUMBERS[kind],
      reason: credit ? 'return' : 'charge',
      description: credit ? 'Devolución de mercaderías' : 'Intereses por mora',
      cancels_note_id: null,
      cancelled_by_id: null,
      global_discount_percent: null,
      global_discount_amount: null,
      global_discount_description: null,
      subtotal: '10000',
      taxable_amount: '10000',
      exempt_amount: '0',
      discount_total: '0',
      tax_total: '1900',
      total: '11900',
      references: [],
      dte_type: null,
      dte_folio: null,
      dte_status: null,
      dte_track_id: null,
      created_at: this.now,
      currency: 'CLP',
      items: [
        {
          id: newId(),
          invoice_item_id: null,
          description: credit ? 'Servicio de prueba' : 'Intereses por mora',
          quantity: '1',
          unit_price: '10000',
          discount_percent: null,
          discount_amount: '0',
          exempt: false,
          line_total: '10000',
        },
      ],
    };
  }

  reminder(): ReminderRow {
    return { id: newId(), invoice_id: this.ids.invoice, reminder_number: 1, kind: 'manual', schedule_offset: null, sent_at: this.now };
  }

  checkout(outcome: 'completed' | 'expired'): CheckoutRow {
    const completed = outcome === 'completed';
    return {
      id: this.ids.checkout,
      merchant_id: this.merchantId,
      invoice_id: this.ids.invoice,
      token: SAMPLE_TOKEN,
      csrf_token: randomToken(),
      status: outcome,
      payment_status: completed ? 'paid' : 'unpaid',
      amount: '11900',
      currency: 'CLP',
      description: 'Pedido de prueba',
      customer_name: 'Cliente de Prueba SpA',
      customer_email: 'cliente@example.cl',
      success_url: 'https://example.com/orders/TEST-1/paid',
      cancel_url: 'https://example.com/orders/TEST-1',
      external_reference: 'TEST-1',
      locale: 'es',
      provider: 'sandbox',
      provider_session_id: `test_${this.ids.checkout}`,
      provider_redirect: null,
      provider_reference: null,
      provider_attempt: 1,
      provider_session_ended_at: null,
      payment_claim: null,
      payment_claimed_until: null,
      expires_at: completed ? new Date(this.now.getTime() + DAY_MS) : this.now,
      completed_at: completed ? this.now : null,
      created_at: new Date(this.now.getTime() - (completed ? 60_000 : DAY_MS)),
      updated_at: this.now,
    };
  }

  payment(outcome: 'succeeded' | 'failed'): PaymentRow {
    const succeeded = outcome === 'succeeded';
    return {
      id: this.ids.payment,
      merchant_id: this.merchantId,
      invoice_id: this.ids.invoice,
      invoice_number: SAMPLE_NUMBERS.invoice,
      amount: '11900',
      currency: 'CLP',
      method: 'card',
      provider: 'sandbox',
      transaction_id: this.transactionId,
      status: outcome,
      paid_at: succeeded ? this.now : null,
      created_at: this.now,
    };
  }
}

/**
 * Each type's `data` from the sample rows, through the formatters its real event is built with
 * (docs/decisions.md §10: a test event has the shape of a real one), so a field added to a resource
 * reaches its test events too. Each line mirrors the type's emitEvent call.
 */
const sampleData: { [T in EventType]: (rows: SampleRows, urls: Urls) => EventData<T> } = {
  'invoice.created': (r, urls) => ({ object: invoiceResource(r.invoice('draft'), urls) }),
  'invoice.sent': (r, urls) => ({ object: invoiceResource(r.invoice('sent'), urls) }),
  'invoice.viewed': (r, urls) => ({ object: invoiceResource(r.invoice('viewed'), urls) }),
  'invoice.overdue': (r, urls) => ({ object: invoiceResource(r.invoice('overdue'), urls) }),
  'invoice.reminder_sent': (r, urls) => ({ object: invoiceResource(r.invoice('sent'), urls), reminder: reminderResource(r.reminder()) }),
  'invoice.paid': (r, urls) => ({ object: invoiceResource(r.invoice('paid'), urls) }),
  'invoice.cancelled': (r, urls) => ({ object: invoiceResource(r.invoice('cancelled'), urls) }),
  'invoice.dte_accepted': (r, urls) => ({ object: invoiceResource(r.invoiceWithDte('accepted'), urls) }),
  'invoice.dte_rejected': (r, urls) => ({ object: invoiceResource(r.invoiceWithDte('rejected'), urls) }),
  'credit_note.created': (r, urls) => ({ object: creditNoteResource(r.note('credit'), urls) }),
  'debit_note.created': (r, urls) => ({ object: debitNoteResource(r.note('debit'), urls) }),
  'client.created': (r, urls) => ({ object: clientResource(r.client(), urls.apiBase) }),
  'client.updated': (r, urls) => ({ object: clientResource(r.client(), urls.apiBase) }),
  // The session's page under the sample's: `{publicBase}/i/sample/checkout/sample`.
  'checkout.completed': (r, urls) => ({ object: checkoutResource(r.checkout('completed'), urls.apiBase, r.now) }),
  'checkout.expired': (r, urls) => ({ object: checkoutResource(r.checkout('expired'), urls.apiBase, r.now) }),
  'payment.succeeded': (r) => ({ object: paymentResource(r.payment('succeeded')) }),
  'payment.failed': (r) => ({ object: paymentResource(r.payment('failed')) }),
};

/**
 * `data` of a test event of this type (`POST .../test`): made-up values, the real shape; numbers
 * that are never real ones and links that all answer the sample page (`urls` are the real bases).
 */
export function sampleEventData<T extends EventType>(type: T, merchantId: string, now: Date, urls: Urls): EventData<T> {
  return sampleData[type](new SampleRows(merchantId, now), sampleUrls(urls));
}
