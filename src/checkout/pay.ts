import { setTimeout as sleep } from 'node:timers/promises';
import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { emitEvent } from '../events/emit.js';
import { Decimal } from '../money.js';
import { payByCheckout, recordCheckoutPayment, type InvoiceDeps } from '../invoices/transitions.js';
import { paymentRecorded } from '../payments/queries.js';
import type { SecretBox } from '../secret-box.js';
import { confirmPayment, paymentStatus, providerFor } from './providers/registry.js';
import type { CustomerAction, PaymentProvider, PaymentResult } from './providers/provider.js';
import { loadCredentials } from './credentials.js';
import { checkoutResource } from './resource.js';
import * as q from './queries.js';

export type PaymentOutcome =
  | { kind: 'paid'; session: q.CheckoutRow }
  | { kind: 'declined'; session: q.CheckoutRow }
  /**
   * Nothing was attempted (the session is completed or expired, the merchant closed its invoice,
   * or another attempt still held it), or the attempt outlived its claim.
   */
  | { kind: 'closed' };

// Matches no attempt's claim (claims are v7 ids): an outcome recorded without moving the session.
const NO_CLAIM = '00000000-0000-0000-0000-000000000000';

// How long a payment attempt holds its session. A gateway call ends long before (adapters time
// out well within it), so only a process that died mid-call lets a claim run out.
const PAYMENT_CLAIM_SECONDS = 120;
// A second click waits this long for the attempt in flight, so that it lands where that one does.
const CLAIM_WAIT_MS = 10_000;
const CLAIM_POLL_MS = 100;

/**
 * The session claimed for one attempt. A click while another attempt holds it waits for that one
 * and then tries again, as a click waiting for a row lock would: after a decline it may pay, after
 * a payment it finds the session completed.
 */
async function claimSession(sql: Sql, token: string, gatewaySessionId?: string): Promise<q.CheckoutRow | null> {
  return waitForClaim(
    (claim, now, until) =>
      gatewaySessionId === undefined
        ? q.claimPayableSession(sql, token, claim, now, until)
        : q.claimGatewayAttempt(sql, token, gatewaySessionId, claim, now, until),
    (now) => q.paymentInFlight(sql, token, now),
  );
}

async function waitForClaim(
  claim: (claim: string, now: Date, until: Date) => Promise<q.CheckoutRow | null>,
  inFlight: (now: Date) => Promise<boolean>,
): Promise<q.CheckoutRow | null> {
  for (let polls = CLAIM_WAIT_MS / CLAIM_POLL_MS; ; polls--) {
    const now = clock.now();
    const claimed = await claim(newId(), now, new Date(now.getTime() + PAYMENT_CLAIM_SECONDS * 1000));
    if (claimed) return claimed;
    if (polls === 0 || !(await inFlight(now))) return null;
    await sleep(CLAIM_POLL_MS);
  }
}

/**
 * The customer's Pay (or, in a sandbox, simulated decline). The gateway is never asked with a
 * transaction open (docs/decisions.md §10): a short statement claims the session while it is payable and
 * its invoice open, the provider decides, and a new transaction records the outcome with its
 * events, guarded on the claim. A second click, another tab or the expiry meanwhile finds the
 * session claimed: one payment, one outcome.
 */
export async function submitPayment(sql: Sql, token: string, action: CustomerAction, deps: InvoiceDeps): Promise<PaymentOutcome> {
  const claimed = await claimSession(sql, token);
  if (!claimed) return { kind: 'closed' };
  const claim = claimed.payment_claim!;
  let result: PaymentResult;
  try {
    const request = { sessionId: claimed.provider_session_id, amount: claimed.amount, currency: claimed.currency, action };
    result = await confirmPayment(providerFor(claimed.provider), request);
  } catch (err) {
    // The gateway refused or failed: nothing to record, and the next try may start at once.
    await q.releaseClaim(sql, claimed.id, claim);
    throw err;
  }
  return sql.begin((tx) => recordPayment(tx, claimed, claim, result, deps));
}

/** What the customer's return from a redirect gateway carried (Webpay: token_ws, TBK_TOKEN, TBK_ORDEN_COMPRA). */
export interface GatewayReturn {
  /** The gateway session to commit. */
  sessionId: string | null;
  /** The customer left the gateway's page (or it timed out there): the gateway session it names ends. */
  abandoned: { sessionId: string | null; reference: string | null } | null;
}

export type ReturnOutcome = PaymentOutcome | { kind: 'abandoned'; session: q.CheckoutRow };

/**
 * The customer back from a redirect gateway (docs/decisions.md §16). An abandonment (or a timeout at the
 * gateway) ends that gateway session and changes nothing else. Otherwise the gateway session is
 * committed once: the claim names it, so a repeated or concurrent return finds it claimed or
 * ended and commits nothing, and lands where the first one did. A gateway session that ended at
 * the gateway (410 `provider_session_expired`) ends here too; the page then opens another.
 */
export async function gatewayReturn(sql: Sql, token: string, back: GatewayReturn, deps: InvoiceDeps & { secrets: SecretBox }): Promise<ReturnOutcome> {
  const s = await q.sessionByToken(sql, token);
  if (!s) return { kind: 'closed' };
  if (back.abandoned || back.sessionId === null) {
    await q.endAbandonedGatewaySession(sql, token, back.abandoned ?? { sessionId: null, reference: null }, clock.now());
    return { kind: 'abandoned', session: s };
  }
  const claimed = await claimSession(sql, token, back.sessionId);
  if (!claimed) return { kind: 'closed' };
  const claim = claimed.payment_claim!;
  let result: PaymentResult;
  try {
    const provider = providerFor(claimed.provider);
    const credentials = await loadCredentials(sql, deps.secrets, claimed.merchant_id, provider);
    result = await confirmPayment(provider, { sessionId: back.sessionId, amount: claimed.amount, currency: claimed.currency, action: 'return', credentials });
  } catch (err) {
    if (err instanceof AppError && err.code === 'provider_session_expired') await q.endGatewaySession(sql, claimed.id, back.sessionId, clock.now());
    await q.releaseClaim(sql, claimed.id, claim);
    throw err;
  }
  return sql.begin(async (tx) => {
    const outcome = await recordPayment(tx, claimed, claim, result, deps);
    await q.endGatewaySession(tx, claimed.id, back.sessionId!, clock.now());
    return outcome;
  });
}

/** What resolving a session by its gateway needs: the jobs' dependencies and the credentials' key. */
type ResolveDeps = InvoiceDeps & { secrets: SecretBox };

/**
 * A session at its deadline whose customer never came back from the gateway (Webpay) or whose
 * payment was never notified (Mercado Pago): the gateway is asked (no transaction open) and a
 * payment it authorised is recorded, so the expiry cannot drop one. False when there was nothing
 * to apply.
 */
export async function resolveByStatus(sql: Sql, s: q.CheckoutRow, deps: ResolveDeps): Promise<boolean> {
  const provider = providerFor(s.provider);
  if (!provider.paymentStatus || !s.provider_redirect || s.provider_session_ended_at !== null) return false;
  const now = clock.now();
  const claimed = await q.claimForOutcome(sql, s.id, newId(), now, new Date(now.getTime() + PAYMENT_CLAIM_SECONDS * 1000));
  if (!claimed) return false;
  const claim = claimed.payment_claim!;
  let result: PaymentResult | null;
  try {
    const session = { sessionId: claimed.provider_session_id, checkoutId: claimed.id, amount: claimed.amount, currency: claimed.currency };
    result = await paymentStatus(provider, session, await loadCredentials(sql, deps.secrets, s.merchant_id, provider));
  } catch (err) {
    await q.releaseClaim(sql, claimed.id, claim);
    throw err;
  }
  if (!result) {
    await q.releaseClaim(sql, claimed.id, claim);
    return false;
  }
  const paid = result;
  await sql.begin(async (tx) => {
    if (!(await paymentRecorded(tx, provider.name, paid.transactionId))) await recordPayment(tx, claimed, claim, paid, deps);
    await q.endGatewaySession(tx, claimed.id, claimed.provider_session_id, clock.now());
  });
  await q.releaseClaim(sql, claimed.id, claim);
  return true;
}

/**
 * A payment a gateway notified, looked up there (docs/decisions.md §16): applied to the merchant's session
 * its reference names, once per payment id whatever the order or repetition of notifications. An
 * approved payment completes a pending session; a rejection of another payment never undoes it.
 * The payment row is written even when the session has ended meanwhile: it records what the
 * gateway did. False when nothing was applied.
 */
export async function applyNotifiedPayment(
  sql: Sql,
  merchantId: string,
  provider: PaymentProvider,
  checkoutId: string,
  expected: { amount: string; currency: string },
  result: PaymentResult,
  deps: InvoiceDeps,
): Promise<boolean> {
  const s = await q.getSession(sql, merchantId, checkoutId);
  // Another charge under our reference (another amount, another gateway) is not this checkout's.
  if (!s || s.provider !== provider.name || s.currency !== expected.currency || !new Decimal(s.amount).eq(expected.amount)) return false;
  const claimed = await waitForClaim(
    (claim, now, until) => q.claimForOutcome(sql, s.id, claim, now, until),
    (now) => q.outcomeInFlight(sql, s.id, now),
  );
  try {
    return await sql.begin(async (tx) => {
      if (await paymentRecorded(tx, provider.name, result.transactionId)) return false;
      await recordPayment(tx, claimed ?? s, claimed?.payment_claim ?? NO_CLAIM, result, deps);
      return true;
    });
  } finally {
    if (claimed) await q.releaseClaim(sql, claimed.id, claimed.payment_claim!);
  }
}

/**
 * The attempt's outcome. The payment row and its event are written whatever happened meanwhile:
 * they record what the gateway did. The session and the invoice move only while the claim holds.
 * It is the transaction's first write: recordCheckoutPayment locks the invoice before the session
 * is touched, the order a claim takes them in (the invoice's share lock, then the session's row),
 * so a click racing this one waits instead of deadlocking with it.
 */
async function recordPayment(tx: Queryable, s: q.CheckoutRow, claim: string, result: PaymentResult, deps: InvoiceDeps): Promise<PaymentOutcome> {
  const now = clock.now();
  const payment = {
    merchant_id: s.merchant_id,
    invoice_id: s.invoice_id,
    amount: s.amount,
    currency: s.currency,
    method: result.method,
    provider: s.provider,
    transaction_id: result.transactionId,
    status: result.status,
  };
  const paymentId = await recordCheckoutPayment(tx, payment, now, deps);
  if (result.status !== 'succeeded') {
    const declined = await q.markPaymentFailed(tx, s.id, claim, now);
    return declined ? { kind: 'declined', session: declined } : { kind: 'closed' };
  }
  const completed = await q.markCompleted(tx, s.id, claim, now);
  if (!completed) return { kind: 'closed' };
  await payByCheckout(tx, payment, paymentId, now, deps);
  await emitEvent(tx, deps.boss, s.merchant_id, 'checkout.completed', { object: checkoutResource(completed, deps.urls.publicBase, now) });
  return { kind: 'paid', session: completed };
}
