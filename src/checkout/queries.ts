import type { Queryable } from '../db/client.js';
import type { InvoiceStatus } from '../invoices/schemas.js';
import type { CheckoutPaymentStatus, CheckoutStatus } from './schemas.js';

export interface CheckoutRow {
  id: string;
  merchant_id: string;
  invoice_id: string;
  token: string;
  csrf_token: string;
  status: CheckoutStatus;
  payment_status: CheckoutPaymentStatus;
  amount: string;
  currency: string;
  description: string;
  customer_name: string;
  customer_email: string;
  success_url: string;
  cancel_url: string;
  external_reference: string | null;
  locale: 'es' | 'en';
  provider: string;
  provider_session_id: string;
  expires_at: Date;
  completed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewCheckout = Omit<CheckoutRow, 'status' | 'payment_status' | 'completed_at' | 'updated_at'>;

export async function insertSession(db: Queryable, s: NewCheckout): Promise<CheckoutRow> {
  const [row] = await db<CheckoutRow[]>`
    INSERT INTO checkout_sessions (id, merchant_id, invoice_id, token, csrf_token, status, payment_status, amount, currency,
                                   description, customer_name, customer_email, success_url, cancel_url, external_reference,
                                   locale, provider, provider_session_id, expires_at, created_at, updated_at)
    VALUES (${s.id}, ${s.merchant_id}, ${s.invoice_id}, ${s.token}, ${s.csrf_token}, 'pending', 'unpaid', ${s.amount}::numeric,
            ${s.currency}, ${s.description}, ${s.customer_name}, ${s.customer_email}, ${s.success_url}, ${s.cancel_url},
            ${s.external_reference}, ${s.locale}, ${s.provider}, ${s.provider_session_id}, ${s.expires_at}, ${s.created_at},
            ${s.created_at})
    RETURNING *`;
  return row!;
}

/**
 * Invoices are inserted as `api` invoices; a checkout's is marked before it is sent, so sending
 * queues no invoice e-mail and the reminder planner never picks it up.
 */
export async function markCheckoutInvoice(db: Queryable, merchantId: string, invoiceId: string): Promise<void> {
  await db`UPDATE invoices SET source = 'checkout' WHERE merchant_id = ${merchantId} AND id = ${invoiceId}`;
}

export async function getSession(db: Queryable, merchantId: string, id: string): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`SELECT * FROM checkout_sessions WHERE merchant_id = ${merchantId} AND id = ${id}`;
  return rows[0] ?? null;
}

export async function sessionById(db: Queryable, id: string): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`SELECT * FROM checkout_sessions WHERE id = ${id}`;
  return rows[0] ?? null;
}

export async function sessionByToken(db: Queryable, token: string): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`SELECT * FROM checkout_sessions WHERE token = ${token}`;
  return rows[0] ?? null;
}

// Every transition below is guarded in its statement. A payment and the expiry take the session's
// row lock first and its invoice's second, always in that order, so they serialise without
// deadlocking: whichever comes second finds the session no longer pending.

/** The session while it can still be paid, locked until the caller's transaction ends. */
export async function lockPayableSession(db: Queryable, token: string, now: Date): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`
    SELECT * FROM checkout_sessions WHERE token = ${token} AND status = 'pending' AND expires_at > ${now} FOR UPDATE`;
  return rows[0] ?? null;
}

/** The invoice's status, locked: nobody cancels or marks it paid while the provider is asked. */
export async function lockInvoiceStatus(db: Queryable, merchantId: string, invoiceId: string): Promise<InvoiceStatus | null> {
  const rows = await db<{ status: InvoiceStatus }[]>`
    SELECT status FROM invoices WHERE merchant_id = ${merchantId} AND id = ${invoiceId} FOR UPDATE`;
  return rows[0]?.status ?? null;
}

export async function markCompleted(db: Queryable, id: string, now: Date): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`
    UPDATE checkout_sessions SET status = 'completed', payment_status = 'paid', completed_at = ${now}, updated_at = ${now}
     WHERE id = ${id} AND status = 'pending' AND expires_at > ${now}
    RETURNING *`;
  return rows[0] ?? null;
}

/** A declined attempt: the session stays open for another try. */
export async function markPaymentFailed(db: Queryable, id: string, now: Date): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`
    UPDATE checkout_sessions SET payment_status = 'failed', updated_at = ${now}
     WHERE id = ${id} AND status = 'pending' AND expires_at > ${now}
    RETURNING *`;
  return rows[0] ?? null;
}

export async function markExpired(db: Queryable, id: string, now: Date): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`
    UPDATE checkout_sessions SET status = 'expired', updated_at = ${now}
     WHERE id = ${id} AND status = 'pending' AND expires_at <= ${now}
    RETURNING *`;
  return rows[0] ?? null;
}

/** Pending sessions past their deadline, a batch at a time; ones being paid right now are skipped. */
export async function dueSessions(db: Queryable, now: Date, limit: number): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    SELECT id FROM checkout_sessions
     WHERE status = 'pending' AND expires_at <= ${now}
     ORDER BY expires_at
     LIMIT ${limit}
     FOR UPDATE SKIP LOCKED`;
  return rows.map((r) => r.id);
}
