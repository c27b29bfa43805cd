import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock, dateInZone } from '../clock.js';
import { newId, randomToken } from '../ids.js';
import { iso } from '../http/schemas.js';
import type { MerchantSettings } from '../http/auth.js';
import { emitEvent } from '../events/emit.js';
import { queueEmail } from '../email/outbox.js';
import { enqueue, queues } from '../jobs/boss.js';
import { getMerchant } from '../merchants/queries.js';
import { Decimal, decimalPlaces, formatAmount, isCurrency, precision } from '../money.js';
import { createInvoice, getInvoice, sendInvoice, type InvoiceDeps } from '../invoices/service.js';
import * as invoiceQ from '../invoices/lifecycle-queries.js';
import { getPaymentResource } from '../payments/service.js';
import { confirmPayment, openSession, providerFor } from './providers/registry.js';
import type { CustomerAction } from './providers/provider.js';
import * as q from './queries.js';
import type { CheckoutSessionResource, CheckoutStatus, CreateCheckoutInput } from './schemas.js';

export interface CheckoutDeps extends InvoiceDeps {
  /** How long a session can be paid (CHECKOUT_TTL_SECONDS). */
  ttlSeconds: number;
}

export function checkoutUrl(publicBase: string, token: string): string {
  return `${publicBase}/checkout/${token}`;
}

/**
 * A pending session past its deadline can no longer be paid: it reads as expired at once, before
 * the expiry job has cancelled its invoice.
 */
export function effectiveStatus(row: q.CheckoutRow, now: Date): CheckoutStatus {
  return row.status === 'pending' && row.expires_at <= now ? 'expired' : row.status;
}

/** The session as the API returns it and `checkout.*` events carry it (decisions §14). */
export function checkoutResource(row: q.CheckoutRow, publicBase: string, now: Date = clock.now()): CheckoutSessionResource {
  return {
    checkout_id: row.id,
    checkout_url: checkoutUrl(publicBase, row.token),
    status: effectiveStatus(row, now),
    payment_status: row.payment_status,
    expires_at: iso(row.expires_at)!,
    external_reference: row.external_reference,
    completed_at: iso(row.completed_at),
    invoice_id: row.invoice_id,
  };
}

function amountError(message: string): AppError {
  return AppError.validation([{ path: 'amount', message }]);
}

/**
 * Decisions §11: the client (reused by e-mail), a tax-inclusive invoice of one item due today,
 * sent at once with no e-mail, and the pending session with its expiry job, all in the caller's
 * transaction. The provider is asked first, before anything is written.
 */
export async function createCheckout(db: Queryable, merchant: MerchantSettings, input: CreateCheckoutInput, deps: CheckoutDeps): Promise<CheckoutSessionResource> {
  const currency = (input.currency ?? merchant.base_currency).toUpperCase();
  if (!isCurrency(currency)) {
    throw new AppError('currency_not_supported', `Currency ${input.currency} is not supported.`, { details: { currency: input.currency } });
  }
  if (decimalPlaces(input.amount) > precision(currency)) {
    throw amountError(`must have at most ${precision(currency)} decimals for ${currency}`);
  }
  // Read now, not from the key cache: a provider set a moment ago is used at once.
  const provider = providerFor((await getMerchant(db, merchant.id))?.payment_provider ?? null);
  const now = clock.now();
  const today = dateInZone(now, merchant.timezone);
  const id = newId();
  const amount = new Decimal(input.amount).toFixed();
  const expiresAt = new Date(now.getTime() + deps.ttlSeconds * 1000);
  const session = await openSession(provider, {
    checkoutId: id,
    merchantId: merchant.id,
    amount,
    currency,
    description: input.description,
    customerEmail: input.customer_email,
    expiresAt,
  });
  const draft = await createInvoice(
    db,
    merchant,
    {
      client: { name: input.customer_name, email: input.customer_email },
      issue_date: today,
      due_date: today,
      is_tax_exempt: false,
      tax_inclusive: true,
      currency,
      items: [{ description: input.description, quantity: 1, unit_price: input.amount }],
      external_reference: input.external_reference,
      send_immediately: false,
    },
    deps,
  );
  await q.markCheckoutInvoice(db, merchant.id, draft.id);
  const invoice = await sendInvoice(db, merchant, draft.id, undefined, deps);
  const row = await q.insertSession(db, {
    id,
    merchant_id: merchant.id,
    invoice_id: invoice.id,
    token: randomToken(),
    csrf_token: randomToken(),
    amount,
    currency,
    description: input.description,
    customer_name: input.customer_name,
    customer_email: input.customer_email,
    success_url: input.success_url,
    cancel_url: input.cancel_url,
    external_reference: input.external_reference ?? null,
    locale: invoice.locale,
    provider: provider.name,
    provider_session_id: session.sessionId,
    expires_at: expiresAt,
    created_at: now,
  });
  await enqueue(deps.boss, db, queues.checkoutExpire.name, { checkout_id: id }, { startAfter: expiresAt, singletonKey: id });
  return checkoutResource(row, deps.urls.publicBase, now);
}

export async function getCheckoutStatus(db: Queryable, merchantId: string, id: string, publicBase: string): Promise<CheckoutSessionResource> {
  const row = await q.getSession(db, merchantId, id);
  if (!row) throw new AppError('checkout_not_found', `No checkout session ${id}.`);
  return checkoutResource(row, publicBase);
}

export type PaymentOutcome =
  | { kind: 'paid'; session: q.CheckoutRow }
  | { kind: 'declined'; session: q.CheckoutRow }
  /** Nothing was attempted: the session is completed or expired, or the merchant closed its invoice. */
  | { kind: 'closed' };

/**
 * The customer's Pay (or, in a sandbox, simulated decline), in one transaction: the session and
 * its invoice are locked while still payable, the provider decides, and the outcome is recorded
 * with its events. A second click, another tab or the expiry arriving meanwhile waits for the
 * lock and then finds the session no longer pending: one payment, one outcome.
 */
export async function submitPayment(sql: Sql, token: string, action: CustomerAction, deps: InvoiceDeps): Promise<PaymentOutcome> {
  return sql.begin(async (tx) => {
    const now = clock.now();
    const s = await q.lockPayableSession(tx, token, now);
    if (!s) return { kind: 'closed' };
    const invoiceStatus = await q.lockInvoiceStatus(tx, s.merchant_id, s.invoice_id);
    if (!invoiceStatus || !(invoiceQ.OPEN_STATUSES as readonly string[]).includes(invoiceStatus)) return { kind: 'closed' };
    const provider = providerFor(s.provider);
    const result = await confirmPayment(provider, { sessionId: s.provider_session_id, amount: s.amount, currency: s.currency, action });
    const paymentId = newId();
    const succeeded = result.status === 'succeeded';
    await invoiceQ.insertPayment(tx, {
      id: paymentId,
      merchant_id: s.merchant_id,
      invoice_id: s.invoice_id,
      amount: s.amount,
      currency: s.currency,
      method: result.method,
      notes: null,
      provider: provider.name,
      transaction_id: result.transactionId,
      status: result.status,
      paid_at: succeeded ? now : null,
      created_at: now,
    });
    const payment = await getPaymentResource(tx, s.merchant_id, paymentId);
    if (!succeeded) {
      const declined = await q.markPaymentFailed(tx, s.id, now);
      if (!declined) throw new AppError('internal_error', `Checkout ${s.id} changed while locked.`);
      await emitEvent(tx, deps.boss, s.merchant_id, 'payment.failed', { object: payment });
      return { kind: 'declined', session: declined };
    }
    const invoice = await invoiceQ.markPaid(tx, s.merchant_id, s.invoice_id, { amount: null, provider: provider.name, transactionId: result.transactionId, now });
    const completed = await q.markCompleted(tx, s.id, now);
    if (!invoice || !completed) throw new AppError('internal_error', `Checkout ${s.id} changed while locked.`);
    await queueEmail(tx, deps.boss, {
      merchant_id: s.merchant_id,
      invoice_id: s.invoice_id,
      kind: 'receipt',
      dedupe_key: `receipt:${paymentId}`,
      to_address: invoice.client_email,
      locale: invoice.locale,
      data: { payment_id: paymentId, amount: formatAmount(invoice.total, invoice.currency), paid_at: iso(now) },
    });
    await emitEvent(tx, deps.boss, s.merchant_id, 'payment.succeeded', { object: payment });
    await emitEvent(tx, deps.boss, s.merchant_id, 'invoice.paid', { object: await getInvoice(tx, s.merchant_id, s.invoice_id, deps.urls) });
    await emitEvent(tx, deps.boss, s.merchant_id, 'checkout.completed', { object: checkoutResource(completed, deps.urls.publicBase, now) });
    return { kind: 'paid', session: completed };
  });
}

/**
 * pending → expired once past expires_at: its invoice is cancelled (reason `checkout_expired`) and
 * `checkout.expired` emitted. False when the session is not due or no longer pending.
 */
export async function expireCheckout(db: Queryable, id: string, now: Date, deps: InvoiceDeps): Promise<boolean> {
  const s = await q.markExpired(db, id, now);
  if (!s) return false;
  // An invoice the merchant cancelled already stays as it is.
  const cancelled = await invoiceQ.markCancelled(db, s.merchant_id, s.invoice_id, 'checkout_expired', now);
  if (cancelled) {
    await emitEvent(db, deps.boss, s.merchant_id, 'invoice.cancelled', { object: await getInvoice(db, s.merchant_id, s.invoice_id, deps.urls) });
  }
  await emitEvent(db, deps.boss, s.merchant_id, 'checkout.expired', { object: checkoutResource(s, deps.urls.publicBase, now) });
  return true;
}

/**
 * The expiry job of one session. pg-boss starts it by the database's clock; when that ran a
 * little ahead of ours the session is not due yet, and throwing has the job retried shortly.
 */
export async function expireOnSchedule(sql: Sql, id: string, now: Date, deps: InvoiceDeps): Promise<boolean> {
  if (await sql.begin((tx) => expireCheckout(tx, id, now, deps))) return true;
  const s = await q.sessionById(sql, id);
  if (s?.status === 'pending') throw new Error(`checkout ${id} is not due until ${s.expires_at.toISOString()}`);
  return false;
}

// Batches keep each sweep transaction short; the loop runs until nothing is left.
const SWEEP_BATCH = 200;

/** Every pending session past its deadline, for expiry jobs that were missed. */
export async function expireDueCheckouts(sql: Sql, now: Date, deps: InvoiceDeps): Promise<number> {
  let expired = 0;
  for (;;) {
    const batch = await sql.begin(async (tx) => {
      const ids = await q.dueSessions(tx, now, SWEEP_BATCH);
      let n = 0;
      for (const id of ids) if (await expireCheckout(tx, id, now, deps)) n++;
      return { found: ids.length, expired: n };
    });
    expired += batch.expired;
    if (batch.found < SWEEP_BATCH) return expired;
  }
}
