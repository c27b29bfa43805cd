import type { Queryable } from '../db/client.js';
import type { GatewayRedirect } from './providers/provider.js';
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
  /** Where the customer pays at a redirect gateway (null: on our page), and our reference there. */
  provider_redirect: GatewayRedirect | null;
  provider_reference: string | null;
  /** Which gateway session of the checkout this is, from 1. */
  provider_attempt: number;
  /** The gateway session ended (committed, abandoned, expired there): the page opens the next one. */
  provider_session_ended_at: Date | null;
  /** The payment attempt holding the session while its gateway call runs, and until when. */
  payment_claim: string | null;
  payment_claimed_until: Date | null;
  expires_at: Date;
  completed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewCheckout = Omit<
  CheckoutRow,
  'status' | 'payment_status' | 'completed_at' | 'updated_at' | 'payment_claim' | 'payment_claimed_until' | 'provider_attempt' | 'provider_session_ended_at'
>;

const redirectJson = (r: GatewayRedirect | null) => (r ? JSON.stringify(r) : null);

export async function insertSession(db: Queryable, s: NewCheckout): Promise<CheckoutRow> {
  const [row] = await db<CheckoutRow[]>`
    INSERT INTO checkout_sessions (id, merchant_id, invoice_id, token, csrf_token, status, payment_status, amount, currency,
                                   description, customer_name, customer_email, success_url, cancel_url, external_reference,
                                   locale, provider, provider_session_id, provider_redirect, provider_reference, expires_at, created_at,
                                   updated_at)
    VALUES (${s.id}, ${s.merchant_id}, ${s.invoice_id}, ${s.token}, ${s.csrf_token}, 'pending', 'unpaid', ${s.amount}::numeric,
            ${s.currency}, ${s.description}, ${s.customer_name}, ${s.customer_email}, ${s.success_url}, ${s.cancel_url},
            ${s.external_reference}, ${s.locale}, ${s.provider}, ${s.provider_session_id}, ${redirectJson(s.provider_redirect)}::text::jsonb,
            ${s.provider_reference}, ${s.expires_at}, ${s.created_at}, ${s.created_at})
    RETURNING *`;
  return row!;
}

/**
 * A session for an invoice of the API, opened from its hosted page (docs/decisions.md §11). Inserted only
 * while the invoice is open with `amount` still due (the share lock orders it with a cancel or
 * mark-paid that commits first, whose new status the lock's recheck then refuses) and has no
 * pending session: a second click meets checkout_sessions_one_pending_per_invoice and inserts
 * nothing. Null in either case.
 */
export async function insertInvoiceSession(db: Queryable, s: NewCheckout): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`
    INSERT INTO checkout_sessions (id, merchant_id, invoice_id, token, csrf_token, status, payment_status, amount, currency,
                                   description, customer_name, customer_email, success_url, cancel_url, external_reference,
                                   locale, provider, provider_session_id, provider_redirect, provider_reference, expires_at, created_at,
                                   updated_at)
    SELECT ${s.id}, i.merchant_id, i.id, ${s.token}, ${s.csrf_token}, 'pending', 'unpaid', ${s.amount}::numeric,
           ${s.currency}, ${s.description}, ${s.customer_name}, ${s.customer_email}, ${s.success_url}, ${s.cancel_url},
           ${s.external_reference}, ${s.locale}, ${s.provider}, ${s.provider_session_id}, ${redirectJson(s.provider_redirect)}::text::jsonb,
           ${s.provider_reference}, ${s.expires_at}, ${s.created_at}, ${s.created_at}
      FROM invoices i
     WHERE i.merchant_id = ${s.merchant_id} AND i.id = ${s.invoice_id} AND i.status IN ('sent', 'viewed', 'overdue')
       AND i.total - i.amount_paid = ${s.amount}::numeric
       FOR SHARE
    ON CONFLICT (invoice_id) WHERE status = 'pending' DO NOTHING
    RETURNING *`;
  return rows[0] ?? null;
}

/** The invoice's pending session, past its deadline or not: at most one (the partial unique index). */
export async function pendingSessionOfInvoice(db: Queryable, merchantId: string, invoiceId: string): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`
    SELECT * FROM checkout_sessions WHERE merchant_id = ${merchantId} AND invoice_id = ${invoiceId} AND status = 'pending'`;
  return rows[0] ?? null;
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

// Every transition below is guarded in its statement. A payment attempt claims its session in a
// statement of its own, calls the gateway with no transaction open, and records the outcome only
// while its claim holds; the expiry leaves a claimed session alone until the claim ends or runs out.

/**
 * Claims the session for one payment attempt while it can be paid: pending, before its deadline,
 * its invoice still open, and no other attempt's claim running.
 */
export async function claimPayableSession(db: Queryable, token: string, claim: string, now: Date, until: Date): Promise<CheckoutRow | null> {
  return claimSession(db, token, null, claim, now, until);
}

/**
 * The claim of a payment attempt; `gatewaySession` (a redirect gateway's session being committed)
 * must also be the session's current one, not ended.
 */
async function claimSession(db: Queryable, token: string, gatewaySession: string | null, claim: string, now: Date, until: Date): Promise<CheckoutRow | null> {
  // The share lock on the invoice orders the claim with a merchant's cancel or mark-paid, which
  // lock the row before they look for a claim: one that committed first leaves the invoice
  // closed, and the lock's recheck of its status then refuses the claim.
  const rows = await db<CheckoutRow[]>`
    WITH open_invoice AS (
      SELECT i.id, i.merchant_id FROM checkout_sessions s2 JOIN invoices i ON i.merchant_id = s2.merchant_id AND i.id = s2.invoice_id
       WHERE s2.token = ${token} AND i.status IN ('sent', 'viewed', 'overdue')
         FOR SHARE OF i
    )
    UPDATE checkout_sessions s SET payment_claim = ${claim}, payment_claimed_until = ${until}
      FROM open_invoice i
     WHERE s.token = ${token} AND s.status = 'pending' AND s.expires_at > ${now}
       AND (${gatewaySession}::text IS NULL OR (s.provider_session_id = ${gatewaySession} AND s.provider_session_ended_at IS NULL))
       AND (s.payment_claimed_until IS NULL OR s.payment_claimed_until <= ${now})
       AND i.merchant_id = s.merchant_id AND i.id = s.invoice_id
    RETURNING s.*`;
  return rows[0] ?? null;
}

/** True while another attempt's claim on the session runs. */
export async function paymentInFlight(db: Queryable, token: string, now: Date): Promise<boolean> {
  const rows = await db`
    SELECT 1 FROM checkout_sessions WHERE token = ${token} AND status = 'pending' AND payment_claimed_until > ${now}`;
  return rows.length > 0;
}

/** The attempt ends with nothing to record (the gateway failed): the session is free again. */
export async function releaseClaim(db: Queryable, id: string, claim: string): Promise<void> {
  await db`
    UPDATE checkout_sessions SET payment_claim = NULL, payment_claimed_until = NULL
     WHERE id = ${id} AND payment_claim = ${claim}`;
}

/** The claiming attempt paid: no deadline check, the claim was taken before the deadline. */
export async function markCompleted(db: Queryable, id: string, claim: string, now: Date): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`
    UPDATE checkout_sessions SET status = 'completed', payment_status = 'paid', completed_at = ${now}, updated_at = ${now},
           payment_claim = NULL, payment_claimed_until = NULL
     WHERE id = ${id} AND status = 'pending' AND payment_claim = ${claim}
    RETURNING *`;
  return rows[0] ?? null;
}

/** A declined attempt: the session stays open for another try. */
export async function markPaymentFailed(db: Queryable, id: string, claim: string, now: Date): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`
    UPDATE checkout_sessions SET payment_status = 'failed', updated_at = ${now}, payment_claim = NULL, payment_claimed_until = NULL
     WHERE id = ${id} AND status = 'pending' AND payment_claim = ${claim}
    RETURNING *`;
  return rows[0] ?? null;
}

/**
 * Holds the invoice a session owns until the caller's transaction ends. Taken before the session's
 * own row, in the order a payment claim takes the two (the invoice's share lock, then the
 * session), so that an expiry and a click at the deadline wait for each other instead of
 * deadlocking.
 */
export async function lockSessionInvoice(db: Queryable, id: string): Promise<void> {
  await db`
    SELECT 1 FROM checkout_sessions s JOIN invoices i ON i.merchant_id = s.merchant_id AND i.id = s.invoice_id
     WHERE s.id = ${id}
       FOR UPDATE OF i`;
}

/** Past its deadline, unless a payment attempt still holds it; a claim that ran out ends here. */
export async function markExpired(db: Queryable, id: string, now: Date): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`
    UPDATE checkout_sessions SET status = 'expired', updated_at = ${now}, payment_claim = NULL, payment_claimed_until = NULL
     WHERE id = ${id} AND status = 'pending' AND expires_at <= ${now}
       AND (payment_claimed_until IS NULL OR payment_claimed_until <= ${now})
    RETURNING *`;
  return rows[0] ?? null;
}

/**
 * Pending sessions past their deadline, a batch at a time; ones being paid right now are skipped,
 * and the `unresolved` ones whose gateway could not be asked how they stand. Not locked here:
 * each expiry locks its invoice and then its session (lockSessionInvoice), and markExpired's guard
 * leaves a session another run expired meanwhile alone.
 */
export async function dueSessions(db: Queryable, now: Date, limit: number, unresolved: string[] = []): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    SELECT id FROM checkout_sessions
     WHERE status = 'pending' AND expires_at <= ${now}
       AND (payment_claimed_until IS NULL OR payment_claimed_until <= ${now})
       AND id <> ALL(${unresolved}::uuid[])
     ORDER BY expires_at
     LIMIT ${limit}`;
  return rows.map((r) => r.id);
}

// Redirect gateways (docs/decisions.md §16): the customer pays on the gateway's page and comes back, or
// the gateway notifies us. Each gateway session is committed at most once: the claim below names
// it, and its end is recorded with the outcome.

/**
 * Claims the session for the commit of one gateway session (`providerSessionId`, Webpay's token)
 * while that is the session's current one, not ended, and the session payable as for Pay.
 */
export async function claimGatewayAttempt(
  db: Queryable,
  token: string,
  providerSessionId: string,
  claim: string,
  now: Date,
  until: Date,
): Promise<CheckoutRow | null> {
  return claimSession(db, token, providerSessionId, claim, now, until);
}

/**
 * Claims a pending session to apply what its gateway says happened (a status query at the
 * deadline, a notification): no deadline or invoice check, the gateway has decided already.
 */
export async function claimForOutcome(db: Queryable, id: string, claim: string, now: Date, until: Date): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`
    UPDATE checkout_sessions SET payment_claim = ${claim}, payment_claimed_until = ${until}
     WHERE id = ${id} AND status = 'pending' AND (payment_claimed_until IS NULL OR payment_claimed_until <= ${now})
    RETURNING *`;
  return rows[0] ?? null;
}

/** True while an attempt's claim on the session runs (by id). */
export async function outcomeInFlight(db: Queryable, id: string, now: Date): Promise<boolean> {
  const rows = await db`SELECT 1 FROM checkout_sessions WHERE id = ${id} AND status = 'pending' AND payment_claimed_until > ${now}`;
  return rows.length > 0;
}

/** The gateway session can no longer be paid (committed, abandoned or ended there); false when it had ended already. */
export async function endGatewaySession(db: Queryable, id: string, providerSessionId: string, now: Date): Promise<boolean> {
  const rows = await db`
    UPDATE checkout_sessions SET provider_session_ended_at = ${now}, updated_at = ${now}
     WHERE id = ${id} AND provider_session_id = ${providerSessionId} AND provider_session_ended_at IS NULL
    RETURNING id`;
  return rows.length > 0;
}

/** A gateway session the customer left, named by its id or by our reference at the gateway (Webpay's buy order). */
export async function endAbandonedGatewaySession(db: Queryable, token: string, given: { sessionId: string | null; reference: string | null }, now: Date): Promise<void> {
  await db`
    UPDATE checkout_sessions SET provider_session_ended_at = ${now}, updated_at = ${now}
     WHERE token = ${token} AND provider_session_ended_at IS NULL
       AND (provider_session_id = ${given.sessionId} OR provider_reference = ${given.reference})`;
}

/** The next gateway session in place of one that ended, while the session is still pending. */
export async function replaceGatewaySession(
  db: Queryable,
  id: string,
  endedSessionId: string,
  next: Pick<CheckoutRow, 'provider_session_id' | 'provider_redirect' | 'provider_reference'>,
  now: Date,
): Promise<CheckoutRow | null> {
  const rows = await db<CheckoutRow[]>`
    UPDATE checkout_sessions
       SET provider_session_id = ${next.provider_session_id}, provider_redirect = ${redirectJson(next.provider_redirect)}::text::jsonb,
           provider_reference = ${next.provider_reference}, provider_attempt = provider_attempt + 1,
           provider_session_ended_at = NULL, updated_at = ${now}
     WHERE id = ${id} AND status = 'pending' AND provider_session_id = ${endedSessionId} AND provider_session_ended_at IS NOT NULL
    RETURNING *`;
  return rows[0] ?? null;
}

/** Due sessions of these gateways whose current gateway session never came back: their gateway is asked first. */
export async function dueOpenGatewaySessions(db: Queryable, now: Date, providers: string[], limit: number): Promise<CheckoutRow[]> {
  return db<CheckoutRow[]>`
    SELECT * FROM checkout_sessions
     WHERE status = 'pending' AND expires_at <= ${now} AND provider = ANY(${providers}::text[])
       AND provider_session_ended_at IS NULL
       AND (payment_claimed_until IS NULL OR payment_claimed_until <= ${now})
     ORDER BY expires_at
     LIMIT ${limit}`;
}

/**
 * The outcome recorded for the gateway payment `transactionId` on this session's invoice (its
 * notification, or an earlier return, applied it): null when none is.
 */
export async function recordedPaymentStatus(db: Queryable, s: Pick<CheckoutRow, 'merchant_id' | 'invoice_id' | 'provider'>, transactionId: string): Promise<'succeeded' | 'failed' | null> {
  const [row] = await db<{ status: 'succeeded' | 'failed' }[]>`
    SELECT status FROM payments
     WHERE merchant_id = ${s.merchant_id} AND invoice_id = ${s.invoice_id} AND provider = ${s.provider} AND transaction_id = ${transactionId}`;
  return row?.status ?? null;
}
