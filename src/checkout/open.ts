import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock, dateInZone } from '../clock.js';
import type { MerchantSettings } from '../http/auth.js';
import { getMerchant } from '../merchants/queries.js';
import { CURRENCY_RULE, Decimal, decimalPlaces, isCurrency, precision } from '../money.js';
import { createInvoice, prepareRates } from '../invoices/create.js';
import { sendInvoice, type InvoiceDeps } from '../invoices/transitions.js';
import type { CreateInvoiceInput } from '../invoices/schemas.js';
import { exchangeRate } from '../rates/service.js';
import { markCheckoutInvoice } from '../invoices/queries.js';
import { providerFor } from './providers/registry.js';
import { loadCredentials } from './credentials.js';
import { scheduleExpiry } from './expire.js';
import { newSession, openGatewaySession, type GatewayDeps, type OpenedSession } from './gateway-session.js';
import { checkoutResource } from './resource.js';
import * as q from './queries.js';
import type { CheckoutSessionResource, CreateCheckoutInput } from './schemas.js';

/** What opening a session needs besides the request: its lifetime and the rate provider. */
export interface OpeningDeps extends GatewayDeps {
  exchangeRatesUrl?: string;
}

function amountError(message: string): AppError {
  return AppError.validation([{ path: 'amount', message }]);
}

/** The checkout's invoice (docs/decisions.md §11): one tax-inclusive item, due the day it is issued. */
function checkoutInvoice(input: CreateCheckoutInput, currency: string, today: string): CreateInvoiceInput {
  return {
    client: { name: input.customer_name, email: input.customer_email },
    issue_date: today,
    due_date: today,
    is_tax_exempt: false,
    tax_inclusive: true,
    currency,
    items: [{ description: input.description, quantity: 1, unit_price: input.amount, exempt: false }],
    references: [],
    external_reference: input.external_reference,
    send_immediately: false,
  };
}

/**
 * Everything that calls out, on the pool before the request's transaction (docs/decisions.md §10): the
 * request is checked first, the rate of a foreign currency fetched, and only a checkout that can
 * be created opens a session at the gateway.
 */
export async function openCheckout(sql: Sql, merchant: MerchantSettings, input: CreateCheckoutInput, deps: OpeningDeps): Promise<OpenedSession> {
  const currency = (input.currency ?? merchant.base_currency).toUpperCase();
  if (!isCurrency(currency)) {
    throw new AppError('currency_not_supported', `Currency ${input.currency} is not supported: currency ${CURRENCY_RULE}.`, { details: { currency: input.currency } });
  }
  if (decimalPlaces(input.amount) > precision(currency)) {
    throw amountError(`must have at most ${precision(currency)} decimals for ${currency}`);
  }
  // Read now, not from the key cache: a provider set a moment ago is used at once.
  const provider = providerFor((await getMerchant(sql, merchant.id))?.payment_provider ?? null);
  const credentials = await loadCredentials(sql, deps.secrets, merchant.id, provider);
  const now = clock.now();
  const today = dateInZone(now, merchant.timezone);
  await prepareRates(sql, merchant, [checkoutInvoice(input, currency, today)], deps.exchangeRatesUrl);
  if (currency !== merchant.base_currency) await exchangeRate(sql, merchant.id, currency, merchant.base_currency, today);
  const amount = new Decimal(input.amount).toFixed();
  return openGatewaySession(
    provider,
    credentials,
    { merchantId: merchant.id, amount, currency, description: input.description, customerEmail: input.customer_email },
    now,
    deps,
  );
}

/**
 * docs/decisions.md §11: the client (reused by e-mail), a tax-inclusive invoice of one item due today,
 * sent at once with no e-mail, and the pending session of the gateway's `opened` one with its
 * expiry job, all in the caller's transaction.
 */
export async function createCheckout(
  db: Queryable,
  merchant: MerchantSettings,
  input: CreateCheckoutInput,
  opened: OpenedSession,
  deps: InvoiceDeps,
): Promise<CheckoutSessionResource> {
  const now = clock.now();
  const draft = await createInvoice(db, merchant, checkoutInvoice(input, opened.currency, dateInZone(now, merchant.timezone)), deps);
  await markCheckoutInvoice(db, merchant.id, draft.id);
  const invoice = await sendInvoice(db, merchant, draft.id, undefined, deps);
  const row = await q.insertSession(
    db,
    newSession(opened, {
      merchant_id: merchant.id,
      invoice_id: invoice.id,
      description: input.description,
      customer_name: input.customer_name,
      customer_email: input.customer_email,
      success_url: input.success_url,
      cancel_url: input.cancel_url,
      external_reference: input.external_reference ?? null,
      locale: invoice.locale,
      created_at: now,
    }),
  );
  await scheduleExpiry(db, deps.boss, row);
  return checkoutResource(row, deps.urls.publicBase, now);
}
