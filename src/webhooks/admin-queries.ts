import type { Queryable } from '../db/client.js';
import type { DeliveryRow, DeliveryStatus } from './delivery-queries.js';
import type { EndpointRow } from './endpoint-queries.js';

/**
 * A position in a newest-first list: the rows strictly older than this one come next. The time
 * is text with microseconds, as stored, so no row at the page boundary is skipped or repeated;
 * it reaches SQL as text (postgres.js would pass a timestamptz parameter through Date, keeping
 * only milliseconds).
 */
export interface Keyset {
  sort_at: string;
  id: string;
}

/** The filters the newest-first admin lists share: merchant, a created-at window and the cursor. */
interface NewestFirst {
  merchant_id?: string;
  from?: Date;
  to?: Date;
  before?: Keyset;
}

/**
 * Each filter is a fragment only when given, so the planner sees plain predicates; the cursor's
 * (created_at, id) is the lists' order, newest first.
 */
function newestFirst(db: Queryable, table: string, f: NewestFirst) {
  const created = db(`${table}.created_at`);
  return db`
    ${f.merchant_id ? db`AND ${db(`${table}.merchant_id`)} = ${f.merchant_id}::uuid` : db``}
    ${f.from ? db`AND ${created} >= ${f.from}::timestamptz` : db``}
    ${f.to ? db`AND ${created} < ${f.to}::timestamptz` : db``}
    ${f.before ? db`AND (${created}, ${db(`${table}.id`)}) < (${f.before.sort_at}::text::timestamptz, ${f.before.id}::uuid)` : db``}`;
}

/** A delivery without its payload (lists never carry bodies), with what a person needs to read it. */
export type DeliverySummary = Omit<DeliveryRow, 'payload'> & { endpoint_url: string; merchant_name: string; sort_at: string };

const summaryColumns = (db: Queryable) => db`
  d.id, d.merchant_id, d.endpoint_id, d.event_id, d.event_type, d.status, d.attempts, d.max_attempts,
  d.next_retry_at, d.leased_until, d.last_response_status, d.last_error, d.last_error_category, d.completed_at, d.is_test,
  d.from_test_route, d.replay_of, d.created_at, d.updated_at, e.url AS endpoint_url, m.name AS merchant_name,
  to_char(d.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_at`;

export interface DeliveryFilter extends NewestFirst {
  endpoint_id?: string;
  /** Any of these (support's "not delivered" is pending, retrying and failed at once). */
  status?: DeliveryStatus[];
  event_type?: string;
  limit: number;
}

/** Newest first. */
export async function findDeliveries(db: Queryable, f: DeliveryFilter): Promise<DeliverySummary[]> {
  return db<DeliverySummary[]>`
    SELECT ${summaryColumns(db)}
      FROM webhook_deliveries d
      JOIN webhook_endpoints e ON e.id = d.endpoint_id
      JOIN merchants m ON m.id = d.merchant_id
     WHERE true
       ${newestFirst(db, 'd', f)}
       ${f.endpoint_id ? db`AND d.endpoint_id = ${f.endpoint_id}::uuid` : db``}
       ${f.status ? db`AND d.status = ANY(${f.status}::text[])` : db``}
       ${f.event_type ? db`AND d.event_type = ${f.event_type}::text` : db``}
     ORDER BY d.created_at DESC, d.id DESC
     LIMIT ${f.limit}::int`;
}

export async function findDelivery(db: Queryable, id: string): Promise<(DeliveryRow & { endpoint_url: string; merchant_name: string }) | null> {
  const rows = await db<(DeliveryRow & { endpoint_url: string; merchant_name: string })[]>`
    SELECT d.*, e.url AS endpoint_url, m.name AS merchant_name
      FROM webhook_deliveries d
      JOIN webhook_endpoints e ON e.id = d.endpoint_id
      JOIN merchants m ON m.id = d.merchant_id
     WHERE d.id = ${id}::uuid`;
  return rows[0] ?? null;
}

export async function findReplaysOf(db: Queryable, deliveryId: string): Promise<DeliverySummary[]> {
  return db<DeliverySummary[]>`
    SELECT ${summaryColumns(db)}
      FROM webhook_deliveries d
      JOIN webhook_endpoints e ON e.id = d.endpoint_id
      JOIN merchants m ON m.id = d.merchant_id
     WHERE d.replay_of = ${deliveryId}::uuid
     ORDER BY d.created_at, d.id`;
}

export async function findDeliveriesOfEvent(db: Queryable, eventId: string): Promise<DeliverySummary[]> {
  return db<DeliverySummary[]>`
    SELECT ${summaryColumns(db)}
      FROM webhook_deliveries d
      JOIN webhook_endpoints e ON e.id = d.endpoint_id
      JOIN merchants m ON m.id = d.merchant_id
     WHERE d.event_id = ${eventId}::uuid
     ORDER BY d.created_at, d.id`;
}

// ─── Replays ─────────────────────────────────────────────────────────────────

export type ReplaySource = DeliveryRow & { endpoint_enabled: boolean };

/**
 * The delivery to replay with its endpoint's state. The key-share lock holds the endpoint until
 * the replay commits: a concurrent DELETE waits rather than leaving the replay pointing nowhere.
 */
export async function lockDeliveryForReplay(db: Queryable, id: string): Promise<ReplaySource | null> {
  const rows = await db<ReplaySource[]>`
    SELECT d.*, e.enabled AS endpoint_enabled
      FROM webhook_deliveries d
      JOIN webhook_endpoints e ON e.id = d.endpoint_id
     WHERE d.id = ${id}::uuid
       FOR KEY SHARE OF e`;
  return rows[0] ?? null;
}

export async function lockEndpointForReplay(db: Queryable, id: string): Promise<EndpointRow | null> {
  const rows = await db<EndpointRow[]>`SELECT * FROM webhook_endpoints WHERE id = ${id}::uuid FOR KEY SHARE`;
  return rows[0] ?? null;
}

/**
 * Failed, real (not test) deliveries of an endpoint created since a time that no replay has
 * superseded yet, oldest first so receivers get events in their original order. Rows another
 * run is replaying right now are skipped: two runs at once never replay one delivery twice, and
 * a run after a bounded one picks up where it stopped.
 */
export async function lockFailedUnreplayed(db: Queryable, endpointId: string, since: Date, limit: number): Promise<DeliveryRow[]> {
  return db<DeliveryRow[]>`
    SELECT d.* FROM webhook_deliveries d
     WHERE d.endpoint_id = ${endpointId}::uuid AND d.status = 'failed' AND NOT d.is_test
       AND d.created_at >= ${since}::timestamptz
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries r WHERE r.replay_of = d.id)
     ORDER BY d.created_at, d.id
     LIMIT ${limit}::int
       FOR NO KEY UPDATE OF d SKIP LOCKED`;
}

// ─── Endpoints ───────────────────────────────────────────────────────────────

export interface EndpointFilter {
  merchant_id?: string;
  enabled?: boolean;
  limit: number;
  offset: number;
}

export async function findEndpoints(db: Queryable, f: EndpointFilter): Promise<(EndpointRow & { merchant_name: string })[]> {
  return db<(EndpointRow & { merchant_name: string })[]>`
    SELECT e.*, m.name AS merchant_name
      FROM webhook_endpoints e
      JOIN merchants m ON m.id = e.merchant_id
     WHERE true
       ${f.merchant_id ? db`AND e.merchant_id = ${f.merchant_id}::uuid` : db``}
       ${f.enabled === undefined ? db`` : db`AND e.enabled = ${f.enabled}::boolean`}
     ORDER BY e.created_at, e.id
     LIMIT ${f.limit}::int OFFSET ${f.offset}::int`;
}

// ─── Events ──────────────────────────────────────────────────────────────────

export interface EventSummary {
  id: string;
  merchant_id: string;
  merchant_name: string;
  type: string;
  created_at: Date;
  sort_at: string;
}

export interface EventFilter extends NewestFirst {
  type?: string;
  limit: number;
}

export async function findEvents(db: Queryable, f: EventFilter): Promise<EventSummary[]> {
  return db<EventSummary[]>`
    SELECT ev.id, ev.merchant_id, m.name AS merchant_name, ev.type, ev.created_at,
           to_char(ev.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS sort_at
      FROM events ev
      JOIN merchants m ON m.id = ev.merchant_id
     WHERE true
       ${newestFirst(db, 'ev', f)}
       ${f.type ? db`AND ev.type = ${f.type}::text` : db``}
     ORDER BY ev.created_at DESC, ev.id DESC
     LIMIT ${f.limit}::int`;
}
