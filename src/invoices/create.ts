import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock, dateInZone } from '../clock.js';
import { newId, randomToken } from '../ids.js';
import type { MerchantSettings } from '../http/auth.js';
import { computeTotals, CURRENCY_RULE, decimalPlaces, isCurrency, precision, type Currency, type Totals } from '../money.js';
import { findOrCreateClient } from '../clients/service.js';
import { emitEvent, subscriptionCheck } from '../events/emit.js';
import { exchangeRate, fetchMissingRates, type RateNeed } from '../rates/service.js';
import * as q from './queries.js';
import { invoiceResource } from './resource.js';
import type { CreateInvoiceInput, DocumentReferenceInput } from './schemas.js';

type LineItem = Pick<CreateInvoiceInput['items'][number], 'description' | 'quantity' | 'unit_price' | 'discount_percent'>;
import { sendInvoice, type InvoiceDeps } from './transitions.js';

/** The rows of an invoice's lines, in their order, each with its computed discount and total. */
export function itemRows(items: LineItem[], totals: Pick<Totals, 'lines'>): q.NewInvoiceItem[] {
  return items.map((it, i) => {
    const line = totals.lines[i]!;
    return {
      id: newId(),
      position: i,
      product_id: null,
      description: it.description,
      quantity: String(it.quantity),
      unit_price: String(it.unit_price),
      discount_percent: it.discount_percent === undefined ? null : String(it.discount_percent),
      discount_amount: line.discount.toFixed(),
      exempt: line.exempt,
      line_total: line.total.toFixed(),
    };
  });
}

/** "whole pesos in CLP", "at most 2 decimals in USD". */
function precisionRule(currency: Currency): string {
  const places = precision(currency);
  return places === 0 ? `must be whole pesos in ${currency}` : `must have at most ${places} decimals in ${currency}`;
}

/**
 * A discount amount is money of the invoice's currency, and cannot take more than what it applies
 * to (docs/tax-documents.md).
 */
function assertDiscountsFit(input: CreateInvoiceInput, currency: Currency, totals: Totals): void {
  const places = precision(currency);
  const problems = totals.lines.flatMap((line, i) => {
    const path = `items[${i}].discount_amount`;
    if (input.items[i]!.discount_amount !== undefined && decimalPlaces(input.items[i]!.discount_amount!) > places) return [{ path, message: precisionRule(currency) }];
    return line.discount.gt(line.gross) ? [{ path, message: `must be at most the line's gross amount (quantity × unit_price = ${line.gross.toFixed()})` }] : [];
  });
  // A global discount's base is only known once every line is right.
  if (problems.length) throw AppError.validation(problems);
  const g = input.global_discount;
  if (g?.amount !== undefined && decimalPlaces(g.amount) > places) {
    problems.push({ path: 'global_discount.amount', message: precisionRule(currency) });
  } else if (g && totals.discountBase.isZero()) {
    problems.push({ path: 'global_discount', message: input.is_tax_exempt ? 'applies to the lines, and their total is 0' : 'applies to the taxable lines, and this invoice has none (or their total is 0)' });
  } else if (g?.amount !== undefined && totals.discountTotal.gt(totals.discountBase)) {
    problems.push({ path: 'global_discount.amount', message: `must be at most the total of the ${input.is_tax_exempt ? '' : 'taxable '}lines it applies to (${totals.discountBase.toFixed()})` });
  }
  if (problems.length) throw AppError.validation(problems);
}

/** References as stored: a SET's folio "0" and every date given (the issue date by default). */
export function resolveReferences(refs: DocumentReferenceInput[], issueDate: string): q.DocumentReference[] {
  return refs.map((r) => ({ type: r.type, folio: r.folio ?? '0', date: r.date ?? issueDate, reason: r.reason ?? null }));
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
 * Before the request's transaction (docs/decisions.md §10): the provider is asked for the rates these
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
    throw new AppError('currency_not_supported', `Currency ${input.currency} is not supported: currency ${CURRENCY_RULE}.`, { details: { currency: input.currency } });
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
    globalDiscount: input.global_discount,
  });
  assertDiscountsFit(input, currency, totals);
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
    taxable_amount: totals.taxableAmount.toFixed(),
    exempt_amount: totals.exemptAmount.toFixed(),
    discount_total: totals.discountTotal.toFixed(),
    global_discount_percent: input.global_discount?.percent === undefined ? null : String(input.global_discount.percent),
    global_discount_amount: input.global_discount?.amount === undefined ? null : String(input.global_discount.amount),
    global_discount_description: input.global_discount?.description ?? null,
    references: resolveReferences(input.references, issued),
    tax_total: totals.taxTotal.toFixed(),
    total: totals.total.toFixed(),
    public_token: randomToken(),
    locale: input.locale ?? merchant.default_locale,
    created_at: now,
  };
  const items = itemRows(input.items, totals);
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

