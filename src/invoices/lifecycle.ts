import type { PgBoss } from 'pg-boss';
import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { iso } from '../http/schemas.js';
import type { MerchantSettings } from '../http/auth.js';
import { emitEvent } from '../events/emit.js';
import { queueEmail } from '../email/outbox.js';
import { issueCreditNote } from '../dte/service.js';
import type { SecretBox } from '../webhooks/secrets.js';
import { formatAmount, isCurrency, precision, Decimal } from '../money.js';
import { explainRejection, getInvoice, type Urls } from './service.js';
import * as q from './lifecycle-queries.js';

export interface LifecycleDeps {
  urls: Urls;
  boss: PgBoss;
  /** Opens the DTE certificate and CAF keys: cancelling an invoice with a DTE issues a credit note. */
  secrets?: SecretBox;
}

// Decisions §4: automated reminders 3 days before the due date, on it, and 7 days after, at 09:00.
export const AUTOMATED_REMINDER_OFFSETS = [-3, 0, 7] as const;
export const AUTOMATED_REMINDER_HOUR = '09:00';

export function reminderResource(r: q.ReminderRow) {
  return { reminder_id: r.id, invoice_id: r.invoice_id, sent_at: iso(r.sent_at)!, reminder_number: r.reminder_number };
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
  deps: LifecycleDeps,
) {
  const now = clock.now();
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
  await emitEvent(db, deps.boss, merchantId, 'invoice.reminder_sent', {
    object: await getInvoice(db, merchantId, id, deps.urls),
    reminder: resource,
  });
  return resource;
}

export async function remindInvoice(db: Queryable, merchantId: string, id: string, customMessage: string | null, deps: LifecycleDeps) {
  const r = await recordReminder(db, merchantId, id, { customMessage, scheduleOffset: null }, deps);
  if (!r) throw new AppError('internal_error', 'Manual reminder could not be recorded.');
  return r;
}

/** One point of the automated schedule; null when it was sent already (by a concurrent sweep). */
export async function sendAutomatedReminder(db: Queryable, merchantId: string, id: string, scheduleOffset: number, deps: LifecycleDeps) {
  return recordReminder(db, merchantId, id, { customMessage: null, scheduleOffset }, deps);
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
export async function markInvoicePaid(db: Queryable, merchant: MerchantSettings, id: string, input: MarkPaidInput, deps: LifecycleDeps) {
  const now = clock.now();
  const paymentId = newId();
  const amount = input.payment_amount === undefined ? null : new Decimal(input.payment_amount).toFixed();
  await refuseWhileCustomerPays(db, merchant.id, id, 'mark-paid', now);
  const row = await q.markPaid(db, merchant.id, id, { amount, provider: 'manual', transactionId: paymentId, now });
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
  await q.insertPayment(db, {
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
  await queueEmail(db, deps.boss, {
    merchant_id: merchant.id,
    invoice_id: id,
    kind: 'receipt',
    dedupe_key: `receipt:${paymentId}`,
    to_address: row.client_email,
    locale: row.locale,
    data: { payment_id: paymentId, amount: formatAmount(row.total, row.currency), paid_at: iso(now) },
  });
  await emitEvent(db, deps.boss, merchant.id, 'invoice.paid', { object: await getInvoice(db, merchant.id, id, deps.urls) });
  return {
    invoice_id: row.id,
    status: row.status,
    paid_at: iso(now)!,
    invoice_number: row.invoice_number,
    payment_method: input.payment_method ?? null,
  };
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

/**
 * A draft is deleted; a sent, viewed or overdue invoice is cancelled and keeps its number, and its
 * DTE, when it has one, is cancelled by a credit note issued in the same transaction.
 */
export async function cancelInvoice(db: Queryable, merchantId: string, id: string, reason: string | null, deps: LifecycleDeps) {
  const now = clock.now();
  const deleted = await q.deleteDraft(db, merchantId, id);
  if (deleted) {
    return { invoice_id: id, status: 'deleted' as const, cancelled_at: iso(now)!, invoice_number: null, reason, credit_note: null };
  }
  await refuseWhileCustomerPays(db, merchantId, id, 'cancel', now);
  const row = await q.markCancelled(db, merchantId, id, reason, now);
  if (!row) throw await explainRejection(db, merchantId, id, 'cancel');
  await issueCreditNote(db, { secrets: deps.secrets, boss: deps.boss }, merchantId, id);
  const invoice = await getInvoice(db, merchantId, id, deps.urls);
  await emitEvent(db, deps.boss, merchantId, 'invoice.cancelled', { object: invoice });
  return { invoice_id: row.id, status: 'cancelled' as const, cancelled_at: iso(now)!, invoice_number: row.invoice_number, reason, credit_note: invoice.credit_note };
}

// Batches keep each sweep transaction short; the loop runs until nothing is left.
const SWEEP_BATCH = 500;

/** sent, viewed → overdue past the due date, each with its `invoice.overdue` event. */
export async function markOverdue(sql: Sql, now: Date, deps: LifecycleDeps): Promise<number> {
  let moved = 0;
  for (;;) {
    const batch = await sql.begin(async (tx) => {
      const rows = await q.markOverdueBatch(tx, now, SWEEP_BATCH);
      for (const r of rows) {
        await emitEvent(tx, deps.boss, r.merchant_id, 'invoice.overdue', { object: await getInvoice(tx, r.merchant_id, r.id, deps.urls) });
      }
      return rows.length;
    });
    moved += batch;
    if (batch < SWEEP_BATCH) return moved;
  }
}

/** Every automated reminder whose day and hour have come, each in its own transaction. */
export async function sendDueReminders(sql: Sql, now: Date, deps: LifecycleDeps): Promise<number> {
  let sent = 0;
  for (;;) {
    const due = await q.dueAutomatedReminders(sql, now, AUTOMATED_REMINDER_OFFSETS, AUTOMATED_REMINDER_HOUR, SWEEP_BATCH);
    for (const d of due) {
      const done = await sql
        .begin(async (tx) => {
          const r = await sendAutomatedReminder(tx, d.merchant_id, d.id, d.schedule_offset, deps);
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
