import type { Queryable } from '../db/client.js';
import type { EventType } from '../events/emit.js';

/** A stored event: its body as written (json keeps the text, so the key order, as delivered). */
export interface StoredEvent {
  id: string;
  payload: string;
}

export interface EventFilter {
  /** The page after this event id (ids are UUIDv7: older events have smaller ids). */
  before?: string;
  types?: EventType[];
  created_gte?: string;
  created_lt?: string;
  delivery_success?: boolean;
  limit: number;
}

/**
 * An original delivery of the event (replays are linked to theirs) that did not succeed, and that
 * no replay of it delivered: the endpoint has not received the event yet, or gave up on it
 * (docs/decisions.md §18). The merchant's such deliveries are few, and webhook_deliveries_undelivered
 * (sql/020) holds exactly them: the planner starts from it rather than from every event;
 * replays are found through webhook_deliveries_replay_of.
 */
const undelivered = (db: Queryable, merchantId: string) => db`
  EXISTS (
    SELECT 1 FROM webhook_deliveries d
     WHERE d.merchant_id = ${merchantId}::uuid AND d.event_id = ev.id AND d.replay_of IS NULL AND d.status <> 'success'
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries r WHERE r.replay_of = d.id AND r.status = 'success'))`;

const delivered = (db: Queryable, merchantId: string) => db`
  EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = ev.id AND d.replay_of IS NULL) AND NOT ${undelivered(db, merchantId)}`;

function conditions(db: Queryable, merchantId: string, f: EventFilter) {
  return db`
    ev.merchant_id = ${merchantId}::uuid
    ${f.before ? db`AND ev.id < ${f.before}::uuid` : db``}
    ${f.created_gte ? db`AND ev.created_at >= ${f.created_gte}::timestamptz` : db``}
    ${f.created_lt ? db`AND ev.created_at < ${f.created_lt}::timestamptz` : db``}
    ${f.delivery_success === false ? db`AND ${undelivered(db, merchantId)}` : f.delivery_success === true ? db`AND ${delivered(db, merchantId)}` : db``}`;
}

/**
 * The merchant's events newest first (by id), `limit` of them. With types, each type is read
 * from events_merchant_type_id in id order and the few rows merged: `type = ANY (...)` would
 * read every event of those types to sort them, or walk all events to find a rare type.
 */
export async function listEvents(db: Queryable, merchantId: string, f: EventFilter): Promise<StoredEvent[]> {
  if (!f.types) {
    return db<StoredEvent[]>`
      SELECT ev.id, ev.payload::text AS payload FROM events ev
       WHERE ${conditions(db, merchantId, f)}
       ORDER BY ev.id DESC
       LIMIT ${f.limit}::int`;
  }
  return db<StoredEvent[]>`
    SELECT ev.id, ev.payload::text AS payload
      FROM unnest(${f.types}::text[]) AS t (type)
     CROSS JOIN LATERAL (
       SELECT ev.id, ev.payload FROM events ev
        WHERE ${conditions(db, merchantId, f)} AND ev.type = t.type
        ORDER BY ev.id DESC
        LIMIT ${f.limit}::int) ev
     ORDER BY ev.id DESC
     LIMIT ${f.limit}::int`;
}

/** One event of the merchant; another merchant's is not found either. */
export async function getEvent(db: Queryable, merchantId: string, id: string): Promise<StoredEvent | null> {
  const rows = await db<StoredEvent[]>`
    SELECT id, payload::text AS payload FROM events WHERE id = ${id}::uuid AND merchant_id = ${merchantId}::uuid`;
  return rows[0] ?? null;
}

export async function eventExists(db: Queryable, merchantId: string, id: string): Promise<boolean> {
  const rows = await db`SELECT 1 FROM events WHERE id = ${id}::uuid AND merchant_id = ${merchantId}::uuid`;
  return rows.length > 0;
}

export interface EventRow {
  id: string;
  merchant_id: string;
  type: string;
  /** The stored JSON text, in the order it was written. */
  payload: string;
  created_at: Date;
}

export async function getEventText(db: Queryable, id: string): Promise<EventRow | null> {
  const rows = await db<EventRow[]>`
    SELECT id, merchant_id, type, payload::text AS payload, created_at FROM events WHERE id = ${id}`;
  return rows[0] ?? null;
}

/** The events of a fan-out batch that still exist. */
export async function getEventTexts(db: Queryable, ids: string[]): Promise<EventRow[]> {
  return db<EventRow[]>`
    SELECT id, merchant_id, type, payload::text AS payload, created_at FROM events WHERE id = ANY (${ids}::uuid[])`;
}
