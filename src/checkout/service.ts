import { setTimeout as sleep } from 'node:timers/promises';
import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock, dateInZone } from '../clock.js';
import { newId, randomToken } from '../ids.js';
import { iso } from '../http/schemas.js';
import type { MerchantSettings } from '../http/auth.js';
import { emitEvent } from '../events/emit.js';
import { enqueue, queues } from '../queue/boss.js';
import { getMerchant } from '../merchants/queries.js';
import { Decimal, decimalPlaces, isCurrency, precision } from '../money.js';
import { createInvoice, prepareRates } from '../invoices/create.js';
import { expireCheckoutInvoice, payByCheckout, recordCheckoutPayment, sendInvoice, type InvoiceDeps } from '../invoices/transitions.js';
import type { CreateInvoiceInput } from '../invoices/schemas.js';
import { exchangeRate } from '../rates/service.js';
import { markCheckoutInvoice, type InvoiceRow } from '../invoices/queries.js';
import { paymentRecorded } from '../payments/queries.js';
import type { SecretBox } from '../webhooks/secrets.js';
import { confirmPayment, openSession, paymentStatus, providerFor, statusProviders } from './providers/registry.js';
import type { Credentials, CustomerAction, GatewayRedirect, PaymentProvider, PaymentResult, SessionRequest } from './providers/provider.js';
import { loadCredentials } from './credentials.js';
import * as q from './queries.js';
import type { CheckoutSessionResource, CheckoutStatus, CreateCheckoutInput } from './schemas.js';

/** What opening a session needs besides the request: its lifetime and the rate provider. */
export interface OpeningDeps {
  /** How long a session can be paid (CHECKOUT_TTL_SECONDS). */
  ttlSeconds: number;
  exchangeRatesUrl?: string;
  /** The hosted pages' origin: the gateway sends the customer back, and notifies, there. */
  publicBase: string;
  /** Opens the merchant's gateway credentials. */
  secrets: SecretBox;
}

/** What opening a gateway session needs besides the request. */
export type GatewayDeps = Pick<OpeningDeps, 'ttlSeconds' | 'publicBase' | 'secrets'>;

/** The gateway's session, opened before the transaction under the id our session row then gets. */
export interface OpenedSession {
  checkoutId: string;
  /** The hosted page's token: the gateway was given URLs under it. */
  token: string;
  currency: string;
  amount: string;
  provider: string;
  providerSessionId: string;
  redirect: GatewayRedirect | null;
  reference: string | null;
  expiresAt: Date;
}

export function checkoutUrl(publicBase: string, token: string): string {
  return `${publicBase}/checkout/${token}`;
}

/** Where a redirect gateway sends the customer back with its verdict. */
function gatewayReturnUrl(publicBase: string, token: string): string {
  return `${checkoutUrl(publicBase, token)}/return`;
}

/** Where a notifying gateway reports the merchant's payments (docs/decisions.md §16). */
export function notificationUrl(publicBase: string, provider: string, merchantId: string): string {
  return `${publicBase}/providers/${provider}/notifications/${merchantId}`;
}

/**
 * A pending session past its deadline can no longer be paid: it reads as expired at once, before
 * the expiry job has cancelled its invoice.
 */
export function effectiveStatus(row: q.CheckoutRow, now: Date): CheckoutStatus {
  return row.status === 'pending' && row.expires_at <= now ? 'expired' : row.status;
}

/** The session as the API returns it and `checkout.*` events carry it (docs/decisions.md §14). */
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
    throw new AppError('currency_not_supported', `Currency ${input.currency} is not supported.`, { details: { currency: input.currency } });
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

type GatewayRequest = Omit<SessionRequest, 'checkoutId' | 'expiresAt' | 'attempt' | 'pageUrl' | 'returnUrl' | 'notificationUrl' | 'credentials'>;

/** The gateway's session for a checkout (a new one, or the next attempt of one), at the URLs of its page. */
function gatewayRequest(
  req: GatewayRequest,
  at: { checkoutId: string; token: string; expiresAt: Date; attempt: number },
  credentials: Credentials,
  provider: PaymentProvider,
  publicBase: string,
): SessionRequest {
  return {
    ...req,
    ...at,
    pageUrl: checkoutUrl(publicBase, at.token),
    returnUrl: gatewayReturnUrl(publicBase, at.token),
    notificationUrl: notificationUrl(publicBase, provider.name, req.merchantId),
    credentials,
  };
}

/**
 * The gateway's session, under the id our session row then gets, payable for `ttlSeconds` from
 * `now`. Called on the pool with no transaction open (docs/decisions.md §10); POST /checkout and the
 * invoice page's Pay both open theirs here.
 */
export async function openGatewaySession(
  provider: PaymentProvider,
  credentials: Credentials,
  request: GatewayRequest,
  now: Date,
  deps: Pick<GatewayDeps, 'ttlSeconds' | 'publicBase'>,
): Promise<OpenedSession> {
  const at = { checkoutId: newId(), token: randomToken(), expiresAt: new Date(now.getTime() + deps.ttlSeconds * 1000), attempt: 1 };
  const session = await openSession(provider, gatewayRequest(request, at, credentials, provider, deps.publicBase));
  return {
    checkoutId: at.checkoutId,
    token: at.token,
    currency: request.currency,
    amount: request.amount,
    provider: provider.name,
    providerSessionId: session.sessionId,
    redirect: session.redirect ?? null,
    reference: session.reference ?? null,
    expiresAt: at.expiresAt,
  };
}

/** The pending session row of the gateway's `opened` one, with its own page and CSRF tokens. */
export function newSession(
  opened: OpenedSession,
  fields: Omit<
    q.NewCheckout,
    'id' | 'token' | 'csrf_token' | 'amount' | 'currency' | 'provider' | 'provider_session_id' | 'provider_redirect' | 'provider_reference' | 'expires_at'
  >,
): q.NewCheckout {
  return {
    ...fields,
    id: opened.checkoutId,
    token: opened.token,
    csrf_token: randomToken(),
    amount: opened.amount,
    currency: opened.currency,
    provider: opened.provider,
    provider_session_id: opened.providerSessionId,
    provider_redirect: opened.redirect,
    provider_reference: opened.reference,
    expires_at: opened.expiresAt,
  };
}

/**
 * The session as its page offers it: a redirect gateway's session that ended unpaid (abandoned,
 * declined, expired at the gateway) is replaced by a new one while the checkout is payable, so
 * the customer can pay again (docs/decisions.md §16: "the checkout can be opened again"). The gateway is
 * asked with no transaction open; of two pages opening at once, one replacement is kept.
 */
export async function payableSession(sql: Sql, s: q.CheckoutRow, deps: Pick<GatewayDeps, 'publicBase' | 'secrets'>): Promise<q.CheckoutRow> {
  if (!s.provider_redirect || s.provider_session_ended_at === null || effectiveStatus(s, clock.now()) !== 'pending') return s;
  const provider = providerFor(s.provider);
  const credentials = await loadCredentials(sql, deps.secrets, s.merchant_id, provider);
  const at = { checkoutId: s.id, token: s.token, expiresAt: s.expires_at, attempt: s.provider_attempt + 1 };
  const request = { merchantId: s.merchant_id, amount: s.amount, currency: s.currency, description: s.description, customerEmail: s.customer_email };
  const next = await openSession(provider, gatewayRequest(request, at, credentials, provider, deps.publicBase));
  const replaced = await q.replaceGatewaySession(
    sql,
    s.id,
    s.provider_session_id,
    { provider_session_id: next.sessionId, provider_redirect: next.redirect ?? null, provider_reference: next.reference ?? null },
    clock.now(),
  );
  return replaced ?? (await q.sessionById(sql, s.id)) ?? s;
}

/** The session's expiry job, due at its deadline, one per session; in the transaction that inserted it. */
export async function scheduleExpiry(db: Queryable, boss: InvoiceDeps['boss'], row: q.CheckoutRow): Promise<void> {
  await enqueue(boss, db, queues.checkoutExpire.name, { checkout_id: row.id }, { startAfter: row.expires_at, singletonKey: row.id });
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

export async function getCheckoutStatus(db: Queryable, merchantId: string, id: string, publicBase: string): Promise<CheckoutSessionResource> {
  const row = await q.getSession(db, merchantId, id);
  if (!row) throw new AppError('checkout_not_found', `No checkout session ${id}.`);
  return checkoutResource(row, publicBase);
}

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
    await q.endGatewaySession(tx, claimed.id, back.sessionId!, clock.now());
    return recordPayment(tx, claimed, claim, result, deps);
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
async function resolveByStatus(sql: Sql, s: q.CheckoutRow, deps: ResolveDeps): Promise<boolean> {
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
    await q.endGatewaySession(tx, claimed.id, claimed.provider_session_id, clock.now());
    if (!(await paymentRecorded(tx, provider.name, paid.transactionId))) await recordPayment(tx, claimed, claim, paid, deps);
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

/**
 * A session POST /checkout made owns its invoice: the invoice exists for it and ends with it. Any
 * other session was opened from the invoice's hosted page (docs/decisions.md §11), leads back there, and
 * leaves the invoice as it is when it expires.
 */
export function ownsInvoice(invoice: Pick<InvoiceRow, 'source'>): boolean {
  return invoice.source === 'checkout';
}

/**
 * pending → expired once past expires_at, and `checkout.expired` emitted; the invoice the session
 * owns is cancelled (reason `checkout_expired`), its DTE by a credit note. False when the session
 * is not due or no longer pending; throws, to roll the caller's transaction back, when that
 * credit note cannot be issued.
 */
export async function expireCheckout(db: Queryable, id: string, now: Date, deps: InvoiceDeps): Promise<boolean> {
  const s = await q.markExpired(db, id, now);
  if (!s) return false;
  await expireCheckoutInvoice(db, s.merchant_id, s.invoice_id, now, deps);
  await emitEvent(db, deps.boss, s.merchant_id, 'checkout.expired', { object: checkoutResource(s, deps.urls.publicBase, now) });
  return true;
}

/**
 * The expiry job of one session. pg-boss starts it by the database's clock; when that ran a
 * little ahead of ours the session is not due yet, and throwing has the job retried shortly. A
 * session held by a payment attempt is left to it the same way: retried, it is completed or
 * expired by then. An expiry that throws (no credit-note folio left for its invoice's DTE) rolls
 * back whole and is retried the same way; the sweep every 10 minutes tries it again too.
 */
export async function expireOnSchedule(sql: Sql, id: string, now: Date, deps: InvoiceDeps & { secrets?: SecretBox }): Promise<boolean> {
  const due = await q.sessionById(sql, id);
  // A gateway that can say how the session's payment stands is asked before the session expires.
  if (deps.secrets && due?.status === 'pending' && due.expires_at <= now && (await resolveByStatus(sql, due, { ...deps, secrets: deps.secrets }))) return false;
  if (await sql.begin((tx) => expireCheckout(tx, id, now, deps))) return true;
  const s = await q.sessionById(sql, id);
  if (s?.status !== 'pending') return false;
  if (s.expires_at > now) throw new Error(`checkout ${id} is not due until ${s.expires_at.toISOString()}`);
  throw new Error(`checkout ${id} is being paid; its outcome decides`);
}

// Batches keep each sweep transaction short; the loop runs until nothing is left.
const SWEEP_BATCH = 200;

/**
 * Every pending session past its deadline, for expiry jobs that were missed. One that cannot
 * expire (its merchant has no credit-note folio left) stays pending, and the sweep still expires
 * the others before it fails, so that the failure is retried and logged.
 */
export async function expireDueCheckouts(sql: Sql, now: Date, deps: InvoiceDeps & { secrets?: SecretBox }): Promise<number> {
  // Sessions whose gateway could not be asked stay pending for the next sweep: expiring them could drop a payment.
  const unresolved: string[] = [];
  if (deps.secrets) {
    for (const s of await q.dueOpenGatewaySessions(sql, now, statusProviders(), SWEEP_BATCH)) {
      await resolveByStatus(sql, s, { ...deps, secrets: deps.secrets }).catch(() => unresolved.push(s.id));
    }
  }
  const failed: { id: string; err: unknown }[] = [];
  let expired = 0;
  for (;;) {
    const batch = await sql.begin(async (tx) => {
      // Failed ones stay due: left out, so that they are not fetched again in this run.
      const ids = await q.dueSessions(tx, now, SWEEP_BATCH, [...unresolved, ...failed.map((f) => f.id)]);
      let n = 0;
      for (const id of ids) {
        // A savepoint each: one session's failure rolls back only its own expiry.
        const done = await tx.savepoint((sp) => expireCheckout(sp, id, now, deps)).catch((err: unknown) => {
          failed.push({ id, err });
          return false;
        });
        if (done) n++;
      }
      return { found: ids.length, expired: n };
    });
    expired += batch.expired;
    if (batch.found < SWEEP_BATCH) break;
  }
  if (failed.length > 0) {
    const { id, err } = failed[0]!;
    const reason = err instanceof Error ? err.message : String(err);
    throw new AggregateError(
      failed.map((f) => f.err),
      `${failed.length} due checkout session(s) could not expire (${expired} others did); checkout ${id}: ${reason}`,
    );
  }
  return expired;
}
