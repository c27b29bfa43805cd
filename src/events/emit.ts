import type { PgBoss } from 'pg-boss';
import type { Queryable } from '../db/client.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { enqueue, queues } from '../queue/boss.js';
import { isPipelined } from '../db/transaction.js';

export const eventTypes = {
  'invoice.created': 'An invoice was created (draft or sent).',
  'invoice.sent': 'An invoice was sent: it has a number and its e-mail is queued.',
  'invoice.viewed': 'The client opened the hosted invoice page for the first time.',
  'invoice.overdue': 'An unpaid invoice passed its due date.',
  'invoice.reminder_sent': 'A payment reminder was sent (manual or automated).',
  'invoice.paid': 'An invoice was paid (mark-paid or checkout).',
  'invoice.cancelled': 'A sent, viewed or overdue invoice was cancelled.',
  'invoice.dte_accepted': "The SII accepted the invoice's tax document (DTE), with or without objections: `dte_status` says which.",
  'invoice.dte_rejected': "The SII rejected the invoice's tax document (DTE).",
  'credit_note.created': 'A credit note was issued (POST /invoices/{invoice_id}/credit-notes, or a cancel): its DTE, when it has one, is pending at the SII.',
  'debit_note.created': 'A debit note was issued (a charge on an invoice, or the cancellation of a credit note).',
  'client.created': 'A client was created.',
  'client.updated': 'A client was updated.',
  'checkout.completed': 'A checkout session was paid.',
  'checkout.expired': 'A checkout session expired unpaid; its invoice was cancelled.',
  'payment.succeeded': 'A payment succeeded.',
  'payment.failed': 'A payment attempt failed.',
} as const;

export type EventType = keyof typeof eventTypes;

export const eventTypeNames = Object.keys(eventTypes) as [EventType, ...EventType[]];

export interface EventRecord {
  id: string;
  type: EventType;
  created_at: string;
  api_version: 'v1';
  is_test: boolean;
  data: Record<string, unknown>;
}

/** The event as receivers get it (docs/decisions.md §10); the same object is stored. */
export function buildEvent(type: EventType, data: Record<string, unknown>, isTest: boolean): EventRecord {
  return { id: newId(), type, created_at: clock.now().toISOString(), api_version: 'v1', is_test: isTest, data };
}

/**
 * Whether an enabled endpoint of the merchant wants this type, asked now without waiting: it
 * travels with the caller's next statement, and lets emitEvent send the event with the COMMIT.
 * Outside a pipelined transaction there is no COMMIT to ride with, and nothing is asked.
 */
export function subscriptionCheck(db: Queryable, merchantId: string, type: EventType): Promise<boolean> | undefined {
  if (!isPipelined(db)) return undefined;
  const answer = db<{ subscribed: boolean }[]>`SELECT ${subscribed(db, merchantId, type)} AS subscribed`
    .execute()
    .then(([row]) => row?.subscribed === true);
  // Awaited by emitEvent; should the caller fail first, the transaction ends without it.
  answer.catch(() => {});
  return answer;
}

const subscribed = (db: Queryable, merchantId: string, type: EventType) => db`
  EXISTS (
    SELECT 1 FROM webhook_endpoints e
     WHERE e.merchant_id = ${merchantId} AND e.enabled
       AND (cardinality(e.events) = 0 OR ${type} = ANY (e.events)))`;

/**
 * Writes the event in the caller's transaction (as text: postgres.js's json() would travel as
 * jsonb and lose the field order receivers see), so it exists exactly when the change it
 * reports exists, and with it the job that fans it out to the merchant's webhook endpoints.
 * The same statement tells whether any enabled endpoint wants this type: a merchant without
 * webhooks pays for no job. Given a subscriptionCheck that found none, in a pipelined
 * transaction, the insert goes with the COMMIT.
 */
export async function emitEvent(
  db: Queryable,
  boss: PgBoss,
  merchantId: string,
  type: EventType,
  data: Record<string, unknown>,
  checked?: Promise<boolean>,
): Promise<EventRecord> {
  const event = buildEvent(type, data, false);
  const insert = db<{ subscribed: boolean }[]>`
    INSERT INTO events (id, merchant_id, type, payload, created_at)
    VALUES (${event.id}, ${merchantId}, ${type}, ${JSON.stringify(event)}::text::json, ${event.created_at})
    RETURNING ${subscribed(db, merchantId, type)} AS subscribed`;
  if (checked && isPipelined(db) && !(await checked)) {
    db.commitWith(insert);
    return event;
  }
  const [row] = await insert;
  if (row?.subscribed) await enqueue(boss, db, queues.webhookFanout.name, { event_id: event.id }, { singletonKey: event.id, group: { id: merchantId } });
  return event;
}
