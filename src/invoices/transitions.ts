import type { PgBoss } from 'pg-boss';
import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { iso } from '../http/schemas.js';
import type { MerchantSettings } from '../http/auth.js';
import { emitEvent } from '../events/emit.js';
import { queueEmail } from '../email-queue/queue.js';
import { issueInvoiceDte } from './tax-document.js';
import { insertPayment, type NewPayment } from '../payments/queries.js';
import { getPaymentResource } from '../payments/service.js';
import type { SecretBox } from '../secret-box.js';
import { isCurrency, precision, Decimal } from '../money.js';
import { getInvoiceWithItems, type DocumentReference, type InvoiceRow, type InvoiceWithItems } from './queries.js';
import { getInvoice, invoiceNotFound } from './read.js';
import { receiptEmail } from './receipt.js';
import { invoiceResource, reminderResource, type Urls } from './resource.js';
import type { InvoiceStatus, Locale } from './schemas.js';
import { cancelAmounts } from './note-amounts.js';
import { DEFAULT_DESCRIPTIONS, issueNote } from './note-issue.js';
import type { NoteRow } from './note-queries.js';
import * as q from './transition-queries.js';

// Every change of an invoice's status, and what goes with it (numbers, tax documents, payments,
// e-mails, events), in the caller's transaction; each guarded in its SQL (transition-queries.ts):
//
//   send      draft → sent                     (API; POST /checkout sends its own invoice)
//   view      sent → viewed                    (the hosted page's first view)
//   overdue   sent, viewed → overdue           (the overdue sweep job)
//   remind    sent, viewed, overdue, counted   (API; the reminder schedule job)
//   pay       sent, viewed, overdue → paid     (API mark-paid; a checkout's payment)
//   cancel    draft → deleted; sent, viewed, overdue → cancelled (API)
//   expire    a checkout's own invoice → cancelled when its session expires

export interface InvoiceDeps {
  urls: Urls;
  /** E-mails, events and tax-document submissions are queued as jobs in the caller's transaction. */
  boss: PgBoss;
  /** Opens a merchant's sealed DTE certificate and CAF keys: sending issues its tax document, cancelling its credit note. */
  secrets?: SecretBox;
}

/** The 409 that explains why a guarded transition matched no row (docs/decisions.md §4's table). */
async function explainRejection(db: Queryable, merchantId: string, id: string, op: 'send' | 'mark-paid' | 'remind' | 'cancel'): Promise<AppError> {
  const status: InvoiceStatus | null = await q.invoiceStatus(db, merchantId, id);
  if (!status) return invoiceNotFound(id);
  if (status === 'paid') return new AppError('invoice_already_paid', 'The invoice is already paid.', { details: { status } });
  if (status === 'draft' && (op === 'mark-paid' || op === 'remind')) {
    return new AppError('invoice_not_sent', 'The invoice has not been sent yet.', { details: { status } });
  }
  return new AppError('invoice_invalid_state', `Cannot ${op} an invoice in status ${status}.`, { details: { status } });
}

/** draft → sent: the number and the tax document's folio are assigned here, in the caller's transaction. */
export async function sendInvoice(db: Queryable, merchant: MerchantSettings, id: string, locale: Locale | undefined, deps: InvoiceDeps): Promise<InvoiceRow> {
  const row = await q.markSent(db, merchant.id, id, merchant.invoice_prefix, clock.now(), locale);
  if (!row) throw await explainRejection(db, merchant.id, id, 'send');
  await issueInvoiceDte(db, { secrets: deps.secrets, boss: deps.boss }, merchant.id, id);
  await queueInvoiceEmail(db, deps.boss, row);
  await emitEvent(db, deps.boss, merchant.id, 'invoice.sent', { object: await getInvoice(db, merchant.id, id, deps.urls) });
  return row;
}

/** The invoice e-mail of a sent invoice; checkout invoices are paid on the spot and get none. */
async function queueInvoiceEmail(db: Queryable, boss: PgBoss, row: InvoiceRow): Promise<void> {
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


/**
 * The hosted page's view of the invoice behind `token`: the first view moves sent → viewed and
 * emits `invoice.viewed`; every view sets `last_viewed_at`. Null for an unknown token or a draft
 * (a draft has no public page).
 */
export async function viewInvoice(db: Queryable, token: string, deps: Pick<InvoiceDeps, 'urls' | 'boss'>): Promise<InvoiceWithItems | null> {
  const now = clock.now();
  const firstView = await q.markViewed(db, token, now);
  if (firstView) await emitEvent(db, deps.boss, firstView.merchant_id, 'invoice.viewed', { object: invoiceResource(firstView, deps.urls) });
  return firstView ?? (await q.touchViewed(db, token, now));
}

// docs/decisions.md §4: automated reminders 3 days before the due date, on it, and 7 days after, at 09:00.
const AUTOMATED_REMINDER_OFFSETS = [-3, 0, 7] as const;
const AUTOMATED_REMINDER_HOUR = '09:00';

// docs/decisions.md §19: reminders are not a relay. At most this many manual reminders per invoice in a day.
const MANUAL_REMINDER_CAP = 3;
const MANUAL_REMINDER_WINDOW_MS = 24 * 60 * 60 * 1000;

/**
 * The 429 for a manual reminder over the cap, its wait the seconds until the oldest of the last
 * three is a day old. The invoice row is locked first, so concurrent reminders are counted one
 * after the other and two fourths cannot both pass; a refused one rolls back and is not counted.
 * An invoice that cannot be reminded at all is left to the transition's own 404/409.
 */
async function checkManualReminderCap(db: Queryable, merchantId: string, id: string, now: Date): Promise<void> {
  const status = await q.lockInvoice(db, merchantId, id);
  if (!status || !(q.OPEN_STATUSES as readonly string[]).includes(status)) return;
  const since = new Date(now.getTime() - MANUAL_REMINDER_WINDOW_MS);
  const oldest = await q.manualReminderCapHit(db, merchantId, id, since, MANUAL_REMINDER_CAP);
  if (!oldest) return;
  const wait = Math.max(1, Math.ceil((oldest.getTime() + MANUAL_REMINDER_WINDOW_MS - now.getTime()) / 1000));
  throw new AppError('rate_limited', `At most ${MANUAL_REMINDER_CAP} manual reminders of one invoice may be sent in 24 hours.`, {
    retry: `after_seconds:${wait}`,
  });
}

/**
 * A reminder (manual or one point of the automated schedule): counted on the invoice, recorded,
 * e-mailed and announced, all in the caller's transaction. Null when that automated point was
 * already sent (the transaction must then be rolled back by the caller to undo the count).
 */
async function recordReminder(
  db: Queryable,
  merchantId: string,
  id: string,
  opts: { customMessage: string | null; scheduleOffset: number | null },
  deps: InvoiceDeps,
) {
  const now = clock.now();
  if (opts.scheduleOffset === null) await checkManualReminderCap(db, merchantId, id, now);
  const row = await q.incrementReminders(db, merchantId, id, now);
  if (!row) throw await explainRejection(db, merchantId, id, 'remind');
  const reminder = await q.insertReminder(db, {
    id: newId(),
    merchant_id: merchantId,
    invoice_id: id,
    reminder_number: row.reminders_sent,
    kind: opts.scheduleOffset === null ? 'manual' : 'automated',
    schedule_offset: opts.scheduleOffset,
    custom_message: opts.customMessage,
    sent_at: now,
  });
  if (!reminder) return null;
  await queueEmail(db, deps.boss, {
    merchant_id: merchantId,
    invoice_id: id,
    kind: 'reminder',
    dedupe_key: `reminder:${id}:${reminder.reminder_number}`,
    to_address: row.client_email,
    locale: row.locale,
    data: { reminder_number: reminder.reminder_number, custom_message: opts.customMessage },
  });
  const resource = reminderResource(reminder);
  await emitEvent(db, deps.boss, merchantId, 'invoice.reminder_sent', { object: invoiceResource(row, deps.urls), reminder: resource });
  return resource;
}

export async function remindInvoice(db: Queryable, merchantId: string, id: string, customMessage: string | null, deps: InvoiceDeps) {
  const r = await recordReminder(db, merchantId, id, { customMessage, scheduleOffset: null }, deps);
  if (!r) throw new AppError('internal_error', 'Manual reminder could not be recorded.');
  return r;
}

/**
 * The one way an invoice becomes paid, by the merchant's mark-paid or a checkout's payment:
 * sent, viewed, overdue → paid with the payment's reference, the receipt e-mail and `invoice.paid`.
 * Null when the invoice is not open, or `amount` (when given) is not its total.
 */
async function becomePaid(
  db: Queryable,
  merchantId: string,
  id: string,
  paid: { paymentId: string; provider: string; transactionId: string; amount: string | null; now: Date },
  deps: InvoiceDeps,
): Promise<InvoiceRow | null> {
  const row = await q.markPaid(db, merchantId, id, { amount: paid.amount, provider: paid.provider, transactionId: paid.transactionId, now: paid.now });
  if (!row) return null;
  await queueEmail(db, deps.boss, receiptEmail(row, paid.paymentId, paid.now));
  await emitEvent(db, deps.boss, merchantId, 'invoice.paid', { object: invoiceResource(row, deps.urls) });
  return row;
}

export interface MarkPaidInput {
  payment_method?: string;
  notes?: string;
  payment_amount?: number;
}

function amountMismatch(message: string): AppError {
  return AppError.validation([{ path: 'payment_amount', message }]);
}

/** sent, viewed, overdue → paid at server time, with a manual payment and a receipt e-mail. */
export async function markInvoicePaid(db: Queryable, merchant: MerchantSettings, id: string, input: MarkPaidInput, deps: InvoiceDeps) {
  const now = clock.now();
  const paymentId = newId();
  const amount = input.payment_amount === undefined ? null : new Decimal(input.payment_amount).toFixed();
  await refuseWhileCustomerPays(db, merchant.id, id, 'mark-paid', now);
  const row = await becomePaid(db, merchant.id, id, { paymentId, provider: 'manual', transactionId: paymentId, amount, now }, deps);
  if (!row) {
    const rejection = await explainRejection(db, merchant.id, id, 'mark-paid');
    // An open invoice refused the update only because the amount differs from its total.
    if (rejection.code === 'invoice_invalid_state' && amount !== null && q.OPEN_STATUSES.includes(rejection.details?.status as never)) {
      const invoice = await getInvoice(db, merchant.id, id, deps.urls);
      const places = isCurrency(invoice.currency) ? precision(invoice.currency) : 2;
      if ((new Decimal(amount).decimalPlaces() ?? 0) > places) {
        throw amountMismatch(`must have at most ${places} decimals for ${invoice.currency}`);
      }
      throw amountMismatch(`must equal the invoice total ${invoice.total}`);
    }
    throw rejection;
  }
  await insertPayment(db, {
    id: paymentId,
    merchant_id: merchant.id,
    invoice_id: id,
    amount: row.total,
    currency: row.currency,
    method: input.payment_method ?? null,
    notes: input.notes ?? null,
    provider: 'manual',
    transaction_id: paymentId,
    status: 'succeeded',
    paid_at: now,
    created_at: now,
  });
  return {
    invoice_id: row.id,
    status: row.status,
    paid_at: iso(now)!,
    invoice_number: row.invoice_number,
    payment_method: input.payment_method ?? null,
  };
}

/** A checkout's payment as its gateway decided it. */
export type CheckoutPayment = Pick<NewPayment, 'merchant_id' | 'invoice_id' | 'amount' | 'currency' | 'method' | 'provider' | 'transaction_id' | 'status'>;

/**
 * A checkout's payment, succeeded or failed at its gateway: the payment row and its `payment.*`
 * event, written whatever happened to the session or the invoice meanwhile (they record what the
 * gateway did). The payment's id.
 */
export async function recordCheckoutPayment(tx: Queryable, p: CheckoutPayment, now: Date, deps: InvoiceDeps): Promise<string> {
  // The invoice row first, held to the end: its session is locked after it, in the order every
  // payment claim and every cancel or mark-paid take the two.
  await q.lockInvoice(tx, p.merchant_id, p.invoice_id);
  const id = newId();
  await insertPayment(tx, { ...p, id, notes: null, paid_at: p.status === 'succeeded' ? now : null, created_at: now });
  const payment = await getPaymentResource(tx, p.merchant_id, id);
  await emitEvent(tx, deps.boss, p.merchant_id, p.status === 'succeeded' ? 'payment.succeeded' : 'payment.failed', { object: payment });
  return id;
}

/**
 * The checkout's succeeded payment (recordCheckoutPayment's `paymentId`) completed its session:
 * the invoice becomes paid. One the merchant cancelled or marked paid during the gateway call
 * stays as it is; the payment and the completed session tell them the customer paid.
 */
export async function payByCheckout(tx: Queryable, p: CheckoutPayment, paymentId: string, now: Date, deps: InvoiceDeps): Promise<void> {
  await becomePaid(tx, p.merchant_id, p.invoice_id, { paymentId, provider: p.provider, transactionId: p.transaction_id, amount: null, now }, deps);
}

/**
 * A customer may be paying the invoice on its checkout page, with the gateway call under way and
 * no transaction open: cancelling or marking it paid then would leave a charge on a cancelled
 * invoice, or two payments. The invoice row is locked first, so a payment cannot be claimed
 * between this check and the caller's update.
 */
async function refuseWhileCustomerPays(db: Queryable, merchantId: string, id: string, op: 'cancel' | 'mark-paid', now: Date): Promise<void> {
  const status = await q.lockInvoice(db, merchantId, id);
  if (status && (await q.checkoutPaymentInFlight(db, merchantId, id, now))) {
    throw new AppError('invoice_invalid_state', `Cannot ${op} the invoice: a customer is paying it on its checkout page right now.`, {
      details: { status, payment_in_progress: true },
    });
  }
}

/** What the credit note that cancels an invoice says besides its amounts. */
export interface CancelNote {
  description?: string | undefined;
  references?: DocumentReference[];
}

/**
 * The credit note (CodRef 1) of every line and total of a cancelled invoice, with its DTE when
 * the invoice has one (which the invoice's `credit_note` then shows).
 */
async function issueCancelNote(db: Queryable, merchantId: string, id: string, note: CancelNote, deps: InvoiceDeps): Promise<NoteRow> {
  const invoice = await getInvoiceWithItems(db, merchantId, id);
  if (!invoice) throw invoiceNotFound(id);
  return issueNote(
    db,
    invoice,
    { kind: 'credit', reason: 'cancel', description: note.description ?? DEFAULT_DESCRIPTIONS.credit.cancel, references: note.references ?? [], amounts: cancelAmounts(invoice) },
    deps,
  );
}

/**
 * sent, viewed, overdue → cancelled, keeping its number, with a credit note of all of it issued in
 * the same transaction (a type-61 DTE when the invoice has one): the invoice as it is now, and the note.
 */
export async function cancelIssuedInvoice(db: Queryable, merchantId: string, id: string, reason: string | null, deps: InvoiceDeps, note: CancelNote = {}) {
  const now = clock.now();
  await refuseWhileCustomerPays(db, merchantId, id, 'cancel', now);
  const row = await q.markCancelled(db, merchantId, id, reason, now);
  if (!row) throw await explainRejection(db, merchantId, id, 'cancel');
  const issued = await issueCancelNote(db, merchantId, id, note, deps);
  const invoice = await getInvoice(db, merchantId, id, deps.urls);
  await emitEvent(db, deps.boss, merchantId, 'invoice.cancelled', { object: invoice });
  return { row, invoice, note: issued, cancelledAt: now };
}

/** POST /cancel: a draft is deleted; an issued invoice is cancelled with its credit note (cancelIssuedInvoice). */
export async function cancelInvoice(db: Queryable, merchantId: string, id: string, reason: string | null, deps: InvoiceDeps) {
  const deleted = await q.deleteDraft(db, merchantId, id);
  if (deleted) {
    return { invoice_id: id, status: 'deleted' as const, cancelled_at: iso(clock.now())!, invoice_number: null, reason, credit_note: null };
  }
  const { row, invoice, cancelledAt } = await cancelIssuedInvoice(db, merchantId, id, reason, deps);
  return { invoice_id: row.id, status: 'cancelled' as const, cancelled_at: iso(cancelledAt)!, invoice_number: row.invoice_number, reason, credit_note: invoice.credit_note };
}

/**
 * A checkout session expired: the invoice it owns (one POST /checkout made) is cancelled with
 * reason `checkout_expired` and `invoice.cancelled`, and its DTE, when it has one, by a credit note
 * as cancelInvoice does. No type-61 folio left throws 400 `merchant_misconfigured`: the caller's
 * whole expiry rolls back, to be retried once the merchant loads one. An invoice of the API whose
 * hosted page opened the session, or one the merchant cancelled already, stays as it is.
 */
export async function expireCheckoutInvoice(db: Queryable, merchantId: string, id: string, now: Date, deps: InvoiceDeps): Promise<void> {
  if (!(await q.markCheckoutExpired(db, merchantId, id, now))) return;
  await issueCancelNote(db, merchantId, id, {}, deps);
  await emitEvent(db, deps.boss, merchantId, 'invoice.cancelled', { object: await getInvoice(db, merchantId, id, deps.urls) });
}

// Batches keep each sweep transaction short; the loop runs until nothing is left.
const SWEEP_BATCH = 500;

/** sent, viewed → overdue past the due date, each with its `invoice.overdue` event. */
export async function markOverdue(sql: Sql, now: Date, deps: InvoiceDeps): Promise<number> {
  let moved = 0;
  for (;;) {
    const batch = await sql.begin(async (tx) => {
      const rows = await q.markOverdueBatch(tx, now, SWEEP_BATCH);
      for (const r of rows) await emitEvent(tx, deps.boss, r.merchant_id, 'invoice.overdue', { object: invoiceResource(r, deps.urls) });
      return rows.length;
    });
    moved += batch;
    if (batch < SWEEP_BATCH) return moved;
  }
}

/** Every automated reminder whose day and hour have come, each in its own transaction. */
export async function sendDueReminders(sql: Sql, now: Date, deps: InvoiceDeps): Promise<number> {
  let sent = 0;
  for (;;) {
    const due = await q.dueAutomatedReminders(sql, now, AUTOMATED_REMINDER_OFFSETS, AUTOMATED_REMINDER_HOUR, SWEEP_BATCH);
    for (const d of due) {
      const done = await sql
        .begin(async (tx) => {
          const r = await recordReminder(tx, d.merchant_id, d.id, { customMessage: null, scheduleOffset: d.schedule_offset }, deps);
          // Sent meanwhile by another run: undo this run's count.
          if (!r) throw new ReminderAlreadySent();
          return true;
        })
        .catch((err: unknown) => {
          if (err instanceof ReminderAlreadySent || (err instanceof AppError && err.status === 409)) return false;
          throw err;
        });
      if (done) sent++;
    }
    if (due.length < SWEEP_BATCH) return sent;
  }
}

class ReminderAlreadySent extends Error {}
