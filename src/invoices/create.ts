import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock, dateInZone } from '../clock.js';
import { newId, randomToken } from '../ids.js';
import type { MerchantSettings } from '../http/auth.js';
import { computeTotals, type Decimal, isCurrency } from '../money.js';
import { findOrCreateClient } from '../clients/service.js';
import { emitEvent, subscriptionCheck } from '../events/emit.js';
import { exchangeRate, fetchMissingRates, type RateNeed } from '../rates/service.js';
import * as q from './queries.js';
import { invoiceResource } from './resource.js';
import type { CreateInvoiceInput } from './schemas.js';
import { sendInvoice, type InvoiceDeps } from './transitions.js';

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

