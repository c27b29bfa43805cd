import type { Queryable } from '../db/client.js';
import { itemsJson, type InvoiceRow, type InvoiceWithItems } from './queries.js';
import type { InvoiceStatus } from './schemas.js';

// Every transition of an invoice is guarded in its statement: zero rows means "explain the 409",
// not a race. A transition that announces its invoice as it leaves the statement returns it with
// its items (as getInvoiceWithItems reads it), so its event needs no second read.

export const OPEN_STATUSES = ['sent', 'viewed', 'overdue'] as const;

/**
 * draft → sent with the next gapless number, in one statement: the counter row is locked for the
 * rest of the transaction, so numbers are consecutive and never skipped. Null when not a draft.
 */
export async function markSent(db: Queryable, merchantId: string, id: string, prefix: string, now: Date, locale?: string): Promise<InvoiceRow | null> {
  const rows = await db<InvoiceRow[]>`
    WITH target AS (
      SELECT id FROM invoices WHERE merchant_id = ${merchantId} AND id = ${id} AND status = 'draft' FOR UPDATE
    ), counter AS (
      UPDATE invoice_counters SET last_number = last_number + 1
       WHERE merchant_id = ${merchantId} AND EXISTS (SELECT 1 FROM target)
      RETURNING last_number
    )
    UPDATE invoices i
       SET status = 'sent',
           invoice_number = ${prefix} || CASE WHEN counter.last_number < 1000000
                                              THEN lpad(counter.last_number::text, 6, '0')
                                              ELSE counter.last_number::text END,
           sent_at = ${now}, updated_at = ${now},
           locale = coalesce(${locale ?? null}, i.locale)
      FROM counter
     WHERE i.id = ${id}
    RETURNING i.*`;
  return rows[0] ?? null;
}

export async function invoiceStatus(db: Queryable, merchantId: string, id: string): Promise<InvoiceStatus | null> {
  const rows = await db<{ status: InvoiceStatus }[]>`SELECT status FROM invoices WHERE merchant_id = ${merchantId} AND id = ${id}`;
  return rows[0]?.status ?? null;
}

/**
 * The first view: sent → viewed, guarded in the statement, so of any number of concurrent first
 * views exactly one matches (the others wait for its row lock, then find `viewed`). Null when the
 * invoice is not in `sent`.
 */
export async function markViewed(db: Queryable, token: string, now: Date): Promise<InvoiceWithItems | null> {
  const rows = await db<InvoiceWithItems[]>`
    UPDATE invoices i SET status = 'viewed', last_viewed_at = ${now}, updated_at = ${now}
     WHERE public_token = ${token} AND status = 'sent'
    RETURNING i.*, ${itemsJson(db)} AS items`;
  return rows[0] ?? null;
}

/** Any later view: only `last_viewed_at` moves (updated_at follows changes of state, not views). */
export async function touchViewed(db: Queryable, token: string, now: Date): Promise<InvoiceWithItems | null> {
  const rows = await db<InvoiceWithItems[]>`
    UPDATE invoices i SET last_viewed_at = ${now}
     WHERE public_token = ${token} AND status <> 'draft'
    RETURNING i.*, ${itemsJson(db)} AS items`;
  return rows[0] ?? null;
}

export async function incrementReminders(db: Queryable, merchantId: string, id: string, now: Date): Promise<InvoiceWithItems | null> {
  const rows = await db<InvoiceWithItems[]>`
    UPDATE invoices i SET reminders_sent = reminders_sent + 1, updated_at = ${now}
     WHERE merchant_id = ${merchantId} AND id = ${id} AND status IN ('sent', 'viewed', 'overdue')
    RETURNING i.*, ${itemsJson(db)} AS items`;
  return rows[0] ?? null;
}

export interface ReminderRow {
  id: string;
  invoice_id: string;
  reminder_number: number;
  kind: 'manual' | 'automated';
  schedule_offset: number | null;
  sent_at: Date;
}

/**
 * When the invoice has had `cap` manual reminders since `since`: the time of the one whose
 * passing out of the window lets the next through (the `cap`-th most recent). Null when under the
 * cap. Automated reminders are not counted. The caller holds the invoice row (lockInvoice), so
 * two concurrent reminders cannot both count the same total.
 */
export async function manualReminderCapHit(db: Queryable, merchantId: string, id: string, since: Date, cap: number): Promise<Date | null> {
  const rows = await db<{ sent_at: Date }[]>`
    SELECT sent_at FROM reminders
     WHERE merchant_id = ${merchantId} AND invoice_id = ${id} AND kind = 'manual' AND sent_at > ${since}
     ORDER BY sent_at DESC
    OFFSET ${cap - 1} LIMIT 1`;
  return rows[0]?.sent_at ?? null;
}

/** Null when this point of the automated schedule already has its reminder. */
export async function insertReminder(
  db: Queryable,
  r: ReminderRow & { merchant_id: string; custom_message: string | null },
): Promise<ReminderRow | null> {
  const rows = await db<ReminderRow[]>`
    INSERT INTO reminders (id, merchant_id, invoice_id, reminder_number, kind, schedule_offset, custom_message, sent_at)
    VALUES (${r.id}, ${r.merchant_id}, ${r.invoice_id}, ${r.reminder_number}, ${r.kind}, ${r.schedule_offset},
            ${r.custom_message}, ${r.sent_at})
    ON CONFLICT (invoice_id, schedule_offset) DO NOTHING
    RETURNING id, invoice_id, reminder_number, kind, schedule_offset, sent_at`;
  return rows[0] ?? null;
}

/** sent, viewed, overdue → paid, only when the amount (if given) equals the total. */
export async function markPaid(
  db: Queryable,
  merchantId: string,
  id: string,
  p: { amount: string | null; provider: string; transactionId: string; now: Date },
): Promise<InvoiceWithItems | null> {
  const rows = await db<InvoiceWithItems[]>`
    UPDATE invoices i
       SET status = 'paid', paid_at = ${p.now}, amount_paid = total, payment_provider = ${p.provider},
           payment_transaction_id = ${p.transactionId}, updated_at = ${p.now}
     WHERE merchant_id = ${merchantId} AND id = ${id} AND status IN ('sent', 'viewed', 'overdue')
       AND (${p.amount}::numeric IS NULL OR total = ${p.amount}::numeric)
    RETURNING i.*, ${itemsJson(db)} AS items`;
  return rows[0] ?? null;
}

/** A draft is removed outright; its items go with it. */
export async function deleteDraft(db: Queryable, merchantId: string, id: string): Promise<InvoiceRow | null> {
  const rows = await db<InvoiceRow[]>`
    DELETE FROM invoices WHERE merchant_id = ${merchantId} AND id = ${id} AND status = 'draft' RETURNING *`;
  return rows[0] ?? null;
}

/**
 * True when a customer's checkout payment of the invoice is at the gateway right now. The caller
 * has locked the invoice row first (lockInvoice): a claim takes a share lock on it, so this
 * statement, with a snapshot taken after that lock, sees every claim that could still complete.
 */
export async function checkoutPaymentInFlight(db: Queryable, merchantId: string, id: string, now: Date): Promise<boolean> {
  const rows = await db`
    SELECT 1 FROM checkout_sessions
     WHERE merchant_id = ${merchantId} AND invoice_id = ${id} AND status = 'pending' AND payment_claimed_until > ${now}`;
  return rows.length > 0;
}

/** Holds the invoice row until the caller's transaction ends; its status, or null when there is none. */
export async function lockInvoice(db: Queryable, merchantId: string, id: string): Promise<InvoiceRow['status'] | null> {
  const rows = await db<{ status: InvoiceRow['status'] }[]>`SELECT status FROM invoices WHERE merchant_id = ${merchantId} AND id = ${id} FOR UPDATE`;
  return rows[0]?.status ?? null;
}

/**
 * The invoice a checkout session owns (source `checkout`) is cancelled when the session expires;
 * any other invoice, or one the merchant closed already, stays as it is. False then.
 */
export async function markCheckoutExpired(db: Queryable, merchantId: string, id: string, now: Date): Promise<boolean> {
  // Not returned for its event: the credit note issued after this changes what the event carries.
  const rows = await db`
    UPDATE invoices SET status = 'cancelled', cancelled_at = ${now}, cancel_reason = 'checkout_expired', updated_at = ${now}
     WHERE merchant_id = ${merchantId} AND id = ${id} AND source = 'checkout' AND status IN ('sent', 'viewed', 'overdue')
    RETURNING id`;
  return rows.length > 0;
}

export async function markCancelled(db: Queryable, merchantId: string, id: string, reason: string | null, now: Date): Promise<InvoiceRow | null> {
  const rows = await db<InvoiceRow[]>`
    UPDATE invoices SET status = 'cancelled', cancelled_at = ${now}, cancel_reason = ${reason}, updated_at = ${now}
     WHERE merchant_id = ${merchantId} AND id = ${id} AND status IN ('sent', 'viewed', 'overdue')
    RETURNING *`;
  return rows[0] ?? null;
}

/**
 * sent, viewed → overdue once the merchant's calendar date is past the due date; a batch at a
 * time so one sweep never holds many row locks. The UTC-date bound lets the due-date index work.
 */
export async function markOverdueBatch(db: Queryable, now: Date, limit: number): Promise<InvoiceWithItems[]> {
  return db<InvoiceWithItems[]>`
    UPDATE invoices i SET status = 'overdue', updated_at = ${now}
      FROM (
        SELECT i2.id FROM invoices i2 JOIN merchants m ON m.id = i2.merchant_id
         WHERE i2.status IN ('sent', 'viewed')
           AND i2.due_date < (${now}::timestamptz AT TIME ZONE 'UTC')::date + 1
           AND i2.due_date < (${now}::timestamptz AT TIME ZONE m.timezone)::date
         ORDER BY i2.due_date
         LIMIT ${limit}
         FOR UPDATE OF i2 SKIP LOCKED
      ) due
     WHERE i.id = due.id AND i.status IN ('sent', 'viewed')
    RETURNING i.*, ${itemsJson(db)} AS items`;
}

/**
 * Invoices whose automated reminder (days relative to the due date) falls on the merchant's
 * today, at or after the send hour, and has not been sent yet.
 */
export async function dueAutomatedReminders(
  db: Queryable,
  now: Date,
  offsets: readonly number[],
  sendHour: string,
  limit: number,
): Promise<{ id: string; merchant_id: string; schedule_offset: number }[]> {
  const minOffset = Math.min(...offsets);
  const maxOffset = Math.max(...offsets);
  return db<{ id: string; merchant_id: string; schedule_offset: number }[]>`
    SELECT i.id, i.merchant_id, o.off AS schedule_offset
      FROM invoices i
      JOIN merchants m ON m.id = i.merchant_id
      CROSS JOIN unnest(${offsets as number[]}::int[]) AS o(off)
     WHERE i.status IN ('sent', 'viewed', 'overdue') AND i.source = 'api'
       AND i.due_date BETWEEN (${now}::timestamptz AT TIME ZONE 'UTC')::date - ${maxOffset + 1}::int
                          AND (${now}::timestamptz AT TIME ZONE 'UTC')::date - ${minOffset - 1}::int
       AND i.due_date + o.off = (${now}::timestamptz AT TIME ZONE m.timezone)::date
       AND (${now}::timestamptz AT TIME ZONE m.timezone)::time >= ${sendHour}::time
       AND NOT EXISTS (SELECT 1 FROM reminders r WHERE r.invoice_id = i.id AND r.schedule_offset = o.off)
     ORDER BY i.due_date, i.id
     LIMIT ${limit}`;
}
