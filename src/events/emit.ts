import type { Queryable } from '../db/client.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';

export const eventTypes = {
  'invoice.created': 'An invoice was created (draft or sent).',
  'invoice.sent': 'An invoice was sent: it has a number and its e-mail is queued.',
  'invoice.viewed': 'The client opened the hosted invoice page for the first time.',
  'invoice.overdue': 'An unpaid invoice passed its due date.',
  'invoice.reminder_sent': 'A payment reminder was sent (manual or automated).',
  'invoice.paid': 'An invoice was paid (mark-paid or checkout).',
  'invoice.cancelled': 'A sent, viewed or overdue invoice was cancelled.',
  'client.created': 'A client was created.',
  'client.updated': 'A client was updated.',
  'checkout.completed': 'A checkout session was paid.',
  'checkout.expired': 'A checkout session expired unpaid; its invoice was cancelled.',
  'payment.succeeded': 'A payment succeeded.',
  'payment.failed': 'A payment attempt failed.',
} as const;

export type EventType = keyof typeof eventTypes;

export interface EventRecord {
  id: string;
  type: EventType;
  created_at: string;
  api_version: 'v1';
  is_test: boolean;
  data: Record<string, unknown>;
}

/**
 * Writes the event in the caller's transaction, so it exists exactly when the change it
 * reports exists. Delivery reads from this table.
 */
export async function emitEvent(db: Queryable, merchantId: string, type: EventType, data: Record<string, unknown>): Promise<EventRecord> {
  const event: EventRecord = { id: newId(), type, created_at: clock.now().toISOString(), api_version: 'v1', is_test: false, data };
  await db`
    INSERT INTO events (id, merchant_id, type, payload, created_at)
    VALUES (${event.id}, ${merchantId}, ${type}, ${db.json(event as never)}, ${event.created_at})`;
  return event;
}
