import type { PgBoss } from 'pg-boss';
import type { Queryable, Sql } from '../db/client.js';
import { queueEmail } from '../email/outbox.js';
import { AppError } from '../errors.js';
import { clock, dateInZone } from '../clock.js';
import { newId, randomToken } from '../ids.js';
import { iso } from '../http/schemas.js';
import type { MerchantSettings } from '../http/auth.js';
import { computeTotals, type Decimal, formatAmount, formatUnitPrice, formatExchangeRate, formatQuantity, formatRate, isCurrency } from '../money.js';
import { findOrCreateClient } from '../clients/service.js';
import { emitEvent, subscriptionCheck } from '../events/emit.js';
import { exchangeRate, fetchMissingRates, type RateNeed } from '../rates/service.js';
import { issueInvoiceDte } from '../dte/service.js';
import type { SecretBox } from '../webhooks/secrets.js';
import * as q from './queries.js';
import type { CreateInvoiceInput, CreditNoteStatus, InvoiceStatus, Locale } from './schemas.js';

export interface Urls {
  apiBase: string;
  publicBase: string;
}

export interface InvoiceDeps {
  urls: Urls;
  /** Sending queues the invoice e-mail as a job in the same transaction. */
  boss: PgBoss;
  /** Opens a merchant's sealed DTE certificate and CAF keys: sending issues its tax document. */
  secrets?: SecretBox;
}

export function invoiceResource(row: q.ListedInvoice, urls: Urls) {
  const self = `${urls.apiBase}/invoices/${row.id}`;
  const publicUrl = `${urls.publicBase}/i/${row.public_token}`;
  return {
    id: row.id,
    client_id: row.client_id,
    client: { id: row.client_id, name: row.client_name, email: row.client_email, phone: row.client_phone },
    invoice_number: row.invoice_number,
    external_reference: row.external_reference,
    status: row.status,
    currency: row.currency,
    exchange_rate: row.exchange_rate === null ? null : formatExchangeRate(row.exchange_rate),
    base_currency: row.base_currency,
    issue_date: row.issue_date,
    due_date: row.due_date,
    is_tax_exempt: row.is_tax_exempt,
    tax_inclusive: row.tax_inclusive,
    tax_rate: formatRate(row.tax_rate),
    subtotal: formatAmount(row.subtotal, row.currency),
    tax_total: formatAmount(row.tax_total, row.currency),
    total: formatAmount(row.total, row.currency),
    amount_paid: formatAmount(row.amount_paid, row.currency),
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
      quantity: formatQuantity(it.quantity),
      unit_price: formatUnitPrice(it.unit_price, row.currency),
      line_total: formatAmount(it.line_total, row.currency),
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

export function createdResponse(row: q.InvoiceRow, urls: Urls) {
  return {
    invoice_id: row.id,
    status: row.status,
    total: formatAmount(row.total, row.currency),
    currency: row.currency,
    public_url: `${urls.publicBase}/i/${row.public_token}`,
    client_id: row.client_id,
    client_name: row.client_name,
    created_at: iso(row.created_at)!,
    invoice_number: row.invoice_number,
    external_reference: row.external_reference,
  };
}

export function statusSummary(row: q.InvoiceRow, urls: Urls) {
  return {
    invoice_id: row.id,
    invoice_number: row.invoice_number,
    status: row.status,
    total: formatAmount(row.total, row.currency),
    currency: row.currency,
    public_url: `${urls.publicBase}/i/${row.public_token}`,
    issue_date: row.issue_date,
    due_date: row.due_date,
    paid_at: iso(row.paid_at),
    reminders_sent: row.reminders_sent,
    last_viewed_at: iso(row.last_viewed_at),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

function notFound(id: string): AppError {
  return new AppError('invoice_not_found', `No invoice ${id}.`);
}

/** The rows of an invoice's lines, in their order, each with its computed total. */
export function itemRows(items: CreateInvoiceInput['items'], lineTotals: Decimal[]): q.NewInvoiceItem[] {
  return items.map((it, i) => ({
    id: newId(),
    position: i,
    product_id: null,
    description: it.description,
    quantity: String(it.quantity),
    unit_price: String(it.unit_price),
    line_total: lineTotals[i]!.toFixed(),
  }));
}

function invoiceCurrency(merchant: MerchantSettings, input: CreateInvoiceInput): string {
  return (input.currency ?? merchant.base_currency).toUpperCase();
}

function issueDate(merchant: MerchantSettings, input: CreateInvoiceInput, now: Date): string {
  return input.issue_date ?? dateInZone(now, merchant.timezone);
}

/** The foreign-currency rate a create request will read; none for one that will fail validation. */
function rateNeeded(merchant: MerchantSettings, input: CreateInvoiceInput, now: Date): RateNeed | null {
  const currency = invoiceCurrency(merchant, input);
  const date = issueDate(merchant, input, now);
  if (currency === merchant.base_currency || !isCurrency(currency) || input.due_date < date) return null;
  return { currency, date };
}

/**
 * Before the request's transaction (decisions §10): the provider is asked for the rates these
 * create requests need and the table lacks. The transaction's "today" may be a day later, past
 * midnight; the rate fetched here still counts then (a rate up to 7 days old does).
 */
export async function prepareRates(sql: Sql, merchant: MerchantSettings, inputs: CreateInvoiceInput[], providerUrl: string | undefined): Promise<void> {
  const now = clock.now();
  const needs = inputs.flatMap((input) => rateNeeded(merchant, input, now) ?? []);
  await fetchMissingRates(sql, providerUrl, merchant.id, merchant.base_currency, needs);
}

/**
 * Creates a draft (and sends it when asked) inside the caller's transaction. A foreign currency's
 * rate is read from the table only: `prepareRates` fetched what was missing.
 */
export async function createInvoice(db: Queryable, merchant: MerchantSettings, input: CreateInvoiceInput, deps: InvoiceDeps): Promise<q.InvoiceRow> {
  const currency = invoiceCurrency(merchant, input);
  if (!isCurrency(currency)) {
    throw new AppError('currency_not_supported', `Currency ${input.currency} is not supported.`, { details: { currency: input.currency } });
  }
  const now = clock.now();
  const issued = issueDate(merchant, input, now);
  if (input.due_date < issued) {
    throw AppError.validation([{ path: 'due_date', message: `must be on or after issue_date (${issued})` }]);
  }
  let exchange: { rate: string; base: string } | null = null;
  if (currency !== merchant.base_currency) {
    exchange = { rate: await exchangeRate(db, merchant.id, currency, merchant.base_currency, issued), base: merchant.base_currency };
  }
  const totals = computeTotals(input.items, {
    currency,
    taxRate: input.tax_rate ?? merchant.default_tax_rate,
    taxInclusive: input.tax_inclusive,
    taxExempt: input.is_tax_exempt,
  });
  const id = newId();
  const invoice: q.NewInvoice = {
    id,
    merchant_id: merchant.id,
    external_reference: input.external_reference ?? null,
    status: 'draft',
    currency,
    exchange_rate: exchange?.rate ?? null,
    base_currency: exchange?.base ?? null,
    issue_date: issued,
    due_date: input.due_date,
    is_tax_exempt: input.is_tax_exempt,
    tax_inclusive: input.tax_inclusive,
    tax_rate: totals.taxRate.toFixed(2),
    subtotal: totals.subtotal.toFixed(),
    tax_total: totals.taxTotal.toFixed(),
    total: totals.total.toFixed(),
    public_token: randomToken(),
    locale: input.locale ?? merchant.default_locale,
    created_at: now,
  };
  const items = itemRows(input.items, totals.lineTotals);
  const subscribed = subscriptionCheck(db, merchant.id, 'invoice.created');
  // The client is usually known already: the insert takes it by e-mail in the same statement.
  const row =
    (await q.insertInvoice(db, invoice, { email: input.client.email }, items)) ??
    (await q.insertInvoice(
      db,
      invoice,
      await findOrCreateClient(db, merchant.id, input.client, { apiBase: deps.urls.apiBase, boss: deps.boss }),
      items,
    ));
  await emitEvent(db, deps.boss, merchant.id, 'invoice.created', { object: invoiceResource(row, deps.urls) }, subscribed);
  if (!input.send_immediately) return row;
  return sendInvoice(db, merchant, id, undefined, deps);
}

async function invoiceObject(db: Queryable, merchantId: string, id: string, urls: Urls) {
  const full = await q.getInvoice(db, merchantId, id);
  if (!full) throw notFound(id);
  return invoiceResource(full, urls);
}

/** The 409 that explains why a guarded transition matched no row (decisions §4's table). */
export async function explainRejection(db: Queryable, merchantId: string, id: string, op: 'send' | 'mark-paid' | 'remind' | 'cancel'): Promise<AppError> {
  const status: InvoiceStatus | null = await q.invoiceStatus(db, merchantId, id);
  if (!status) return notFound(id);
  if (status === 'paid') return new AppError('invoice_already_paid', 'The invoice is already paid.', { details: { status } });
  if (status === 'draft' && (op === 'mark-paid' || op === 'remind')) {
    return new AppError('invoice_not_sent', 'The invoice has not been sent yet.', { details: { status } });
  }
  return new AppError('invoice_invalid_state', `Cannot ${op} an invoice in status ${status}.`, { details: { status } });
}

/** draft → sent: the number and the tax document's folio are assigned here, in the caller's transaction. */
export async function sendInvoice(db: Queryable, merchant: MerchantSettings, id: string, locale: Locale | undefined, deps: InvoiceDeps): Promise<q.InvoiceRow> {
  const row = await q.markSent(db, merchant.id, id, merchant.invoice_prefix, clock.now(), locale);
  if (!row) throw await explainRejection(db, merchant.id, id, 'send');
  await issueInvoiceDte(db, { secrets: deps.secrets, boss: deps.boss }, merchant.id, id);
  await queueInvoiceEmail(db, deps.boss, row);
  await emitEvent(db, deps.boss, merchant.id, 'invoice.sent', { object: await invoiceObject(db, merchant.id, id, deps.urls) });
  return row;
}

export async function getInvoice(db: Queryable, merchantId: string, id: string, urls: Urls) {
  return invoiceObject(db, merchantId, id, urls);
}

export async function getInvoiceStatus(db: Queryable, merchantId: string, id: string, urls: Urls) {
  const row = await q.getInvoiceRow(db, merchantId, id);
  if (!row) throw notFound(id);
  return statusSummary(row, urls);
}

export async function listInvoices(db: Queryable, merchantId: string, filters: q.InvoiceFilters, limit: number, offset: number, urls: Urls) {
  const rows = await q.listInvoices(db, merchantId, filters, limit + 1, offset);
  return rows.map((r) => invoiceResource(r, urls));
}

/** The invoice e-mail of a sent invoice; checkout invoices are paid on the spot and get none. */
async function queueInvoiceEmail(db: Queryable, boss: PgBoss, row: q.InvoiceRow): Promise<void> {
  if (row.source === 'checkout') return;
  await queueEmail(db, boss, {
    merchant_id: row.merchant_id,
    invoice_id: row.id,
    kind: 'invoice',
    dedupe_key: `invoice:${row.id}`,
    to_address: row.client_email,
    locale: row.locale,
    data: {},
  });
}

export function sentResponse(row: q.InvoiceRow, urls: Urls) {
  return {
    invoice_id: row.id,
    invoice_number: row.invoice_number!,
    status: row.status,
    public_url: `${urls.publicBase}/i/${row.public_token}`,
    sent_at: iso(row.sent_at)!,
  };
}
