import type { Queryable } from '../db/client.js';
import type { EndpointRow } from './endpoint-queries.js';
import type { DeliveryErrorCategory } from './schemas.js';

export type DeliveryStatus = 'pending' | 'success' | 'failed' | 'retrying';

export interface DeliveryRow {
  id: string;
  merchant_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  max_attempts: number;
  next_retry_at: Date | null;
  leased_until: Date | null;
  last_response_status: number | null;
  /** The raw detail, for support staff only. */
  last_error: string | null;
  /** What the API shows of it. */
  last_error_category: DeliveryErrorCategory | null;
  completed_at: Date | null;
  is_test: boolean;
  /** Made by POST .../test (a sandbox endpoint's deliveries are is_test too). */
  from_test_route: boolean;
  replay_of: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewDelivery {
  id: string;
  merchant_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  payload: string;
  max_attempts: number;
  is_test: boolean;
  replay_of: string | null;
  now: Date;
}

/** Inserts the deliveries that do not exist yet (a fan-out run twice), returning the new ones. */
export async function insertDeliveries(db: Queryable, ds: NewDelivery[]): Promise<DeliveryRow[]> {
  if (ds.length === 0) return [];
  // Booleans, numbers and dates travel as text[] and are cast in SQL: postgres.js serialises an
  // array by the element type the server asks for, and turns the string 'true' into false.
  return db<DeliveryRow[]>`
    INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, event_type, payload, max_attempts, is_test, replay_of, created_at, updated_at)
    SELECT * FROM unnest(
      ${ds.map((d) => d.id)}::uuid[], ${ds.map((d) => d.merchant_id)}::uuid[], ${ds.map((d) => d.endpoint_id)}::uuid[],
      ${ds.map((d) => d.event_id)}::uuid[], ${ds.map((d) => d.event_type)}::text[], ${ds.map((d) => d.payload)}::text[],
      ${ds.map((d) => String(d.max_attempts))}::text[]::int[], ${ds.map((d) => String(d.is_test))}::text[]::boolean[], ${ds.map((d) => d.replay_of)}::uuid[],
      ${ds.map((d) => d.now.toISOString())}::text[]::timestamptz[], ${ds.map((d) => d.now.toISOString())}::text[]::timestamptz[])
    ON CONFLICT (event_id, endpoint_id) WHERE replay_of IS NULL DO NOTHING
    RETURNING *`;
}

export async function getDelivery(db: Queryable, id: string): Promise<DeliveryRow | null> {
  const rows = await db<DeliveryRow[]>`SELECT * FROM webhook_deliveries WHERE id = ${id}`;
  return rows[0] ?? null;
}

// ─── Recover (docs/decisions.md §18) ─────────────────────────────────────────────────

/** An event the endpoint missed, with its original delivery to it when there is one. */
export interface MissedEvent {
  id: string;
  type: string;
  payload: string;
  original: Pick<DeliveryRow, 'id' | 'payload' | 'is_test' | 'status'> | null;
}

export interface MissedWindow {
  since: Date;
  until: Date;
  limit: number;
}

/**
 * The events of the endpoint's subscription (its merchant's, of its types, created since the
 * endpoint was) in [since, until), oldest first, that it has not received: no delivery to it at
 * all (emitted while it was disabled), or an original delivery that did not succeed and that no
 * replay delivered or is delivering now. A replay in flight is left to finish: a second recover
 * while the first one's deliveries run sends nothing twice.
 */
export async function missedEvents(db: Queryable, endpoint: EndpointRow, w: MissedWindow): Promise<MissedEvent[]> {
  const rows = await db<(Omit<MissedEvent, 'original'> & { original_id: string | null; original_payload: string | null; original_is_test: boolean | null; original_status: DeliveryStatus | null })[]>`
    SELECT ev.id, ev.type, ev.payload::text AS payload,
           o.id AS original_id, o.payload AS original_payload, o.is_test AS original_is_test, o.status AS original_status
      FROM events ev
      LEFT JOIN webhook_deliveries o
        ON o.event_id = ev.id AND o.endpoint_id = ${endpoint.id}::uuid AND o.replay_of IS NULL
       -- Implied (a delivery is made after its event), said so the endpoint's deliveries are read
       -- from webhook_deliveries_endpoint_created over the window only.
       AND o.created_at >= ${w.since}::timestamptz
     WHERE ev.merchant_id = ${endpoint.merchant_id}::uuid
       AND ev.created_at >= ${w.since}::timestamptz AND ev.created_at < ${w.until}::timestamptz
       AND ev.created_at >= ${endpoint.created_at}::timestamptz
       AND (cardinality(${endpoint.events}::text[]) = 0 OR ev.type = ANY (${endpoint.events}::text[]))
       AND (o.id IS NULL OR o.status <> 'success')
       -- Without an original (o.id null) no replay matches: a plain anti-join on replay_of.
       AND NOT EXISTS (SELECT 1 FROM webhook_deliveries r WHERE r.replay_of = o.id AND r.status <> 'failed')
     ORDER BY ev.created_at, ev.id
     LIMIT ${w.limit}::int`;
  return rows.map(({ original_id, original_payload, original_is_test, original_status, ...ev }) => ({
    ...ev,
    original: original_id ? { id: original_id, payload: original_payload!, is_test: original_is_test!, status: original_status! } : null,
  }));
}

/**
 * Originals still waiting for a retry that a recover replaces with a delivery due now: they stop,
 * so the receiver does not get the event twice (their queued jobs then find nothing to do).
 */
export async function supersedeDeliveries(db: Queryable, ids: string[], now: Date): Promise<void> {
  if (ids.length === 0) return;
  await db`
    UPDATE webhook_deliveries SET status = 'failed', next_retry_at = NULL, leased_until = NULL, completed_at = ${now},
           last_error = 'superseded by a recover', updated_at = ${now}
     WHERE id = ANY (${ids}::uuid[]) AND status IN ('pending', 'retrying')`;
}

// ─── Claims and stops ────────────────────────────────────────────────────────

export interface ClaimedDelivery extends DeliveryRow {
  url: string;
  secret_encrypted: Uint8Array;
  endpoint_enabled: boolean;
  endpoint_sandbox: boolean;
}

/**
 * Claims attempts of deliveries at once, one statement for all: each delivery still owes its
 * attempt and no live run holds it. What comes back is the deliveries claimed, with their
 * endpoints; a delivery left out is done, stopped, past that attempt or held by another run.
 * "Not success nor failed" is "pending or retrying" (the status CHECK allows only those four),
 * said so that it cannot use the status index: statistics taken before a burst count no pending
 * deliveries, and with `IN ('pending', 'retrying')` the planner scanned every pending delivery of
 * the burst instead of looking up the few claimed by their keys.
 */
export async function claimDeliveries(
  db: Queryable,
  attempts: ReadonlyArray<{ id: string; attempt: number }>,
  now: Date,
  leaseUntil: Date,
): Promise<ClaimedDelivery[]> {
  return db<ClaimedDelivery[]>`
    UPDATE webhook_deliveries d SET leased_until = ${leaseUntil}
      FROM unnest(${attempts.map((a) => a.id)}::uuid[], ${attempts.map((a) => a.attempt)}::int[]) AS owed (id, attempt),
           webhook_endpoints e
     WHERE d.id = owed.id AND e.id = d.endpoint_id
       AND d.status NOT IN ('success', 'failed') AND d.attempts = owed.attempt - 1
       AND (d.leased_until IS NULL OR d.leased_until < ${now})
    RETURNING d.*, e.url, e.secret_encrypted, e.enabled AS endpoint_enabled, e.is_sandbox AS endpoint_sandbox`;
}

/** Extends the claim of a run still making attempt `attempt`; false when the claim is gone. */
export async function renewDeliveryClaim(db: Queryable, id: string, attempt: number, leaseUntil: Date): Promise<boolean> {
  const rows = await db`
    UPDATE webhook_deliveries SET leased_until = ${leaseUntil}
     WHERE id = ${id} AND status IN ('pending', 'retrying') AND attempts = ${attempt - 1}
    RETURNING id`;
  return rows.length > 0;
}

/** True while attempt `attempt` of the delivery is still owed (not made, and not stopped). */
export async function attemptOwed(db: Queryable, id: string, attempt: number): Promise<boolean> {
  const rows = await db`SELECT 1 FROM webhook_deliveries WHERE id = ${id} AND status IN ('pending', 'retrying') AND attempts = ${attempt - 1}`;
  return rows.length > 0;
}

// The two below end a delivery with no attempt of their own: last_error_category stays that of
// its last attempt (or null), the only thing the API could truthfully say of it.

/** A disabled endpoint's waiting deliveries stop; their queued jobs then find nothing to do. */
export async function stopPendingDeliveries(db: Queryable, endpointId: string, reason: string, now: Date): Promise<number> {
  const res = await db`
    UPDATE webhook_deliveries SET status = 'failed', next_retry_at = NULL, leased_until = NULL, completed_at = ${now},
           last_error = ${reason}, updated_at = ${now}
     WHERE endpoint_id = ${endpointId} AND status IN ('pending', 'retrying')`;
  return res.count;
}

/** A delivery whose endpoint was disabled before its attempt ran ends without an attempt. */
export async function failWithoutAttempt(db: Queryable, id: string, reason: string, now: Date): Promise<void> {
  await db`
    UPDATE webhook_deliveries SET status = 'failed', next_retry_at = NULL, leased_until = NULL, completed_at = ${now},
           last_error = ${reason}, updated_at = ${now}
     WHERE id = ${id} AND status IN ('pending', 'retrying')`;
}

// ─── Test deliveries (POST .../test) ─────────────────────────────────────────

export type NewTestDelivery = Omit<NewDelivery, 'max_attempts' | 'is_test' | 'replay_of'>;

/** One attempt, never counted toward the endpoint's failures (docs/decisions.md §10, §14). */
export async function insertTestDelivery(db: Queryable, d: NewTestDelivery): Promise<DeliveryRow> {
  const [row] = await db<DeliveryRow[]>`
    INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, event_type, payload, max_attempts, is_test, from_test_route, created_at, updated_at)
    VALUES (${d.id}, ${d.merchant_id}, ${d.endpoint_id}, ${d.event_id}, ${d.event_type}, ${d.payload}, 1, true, true, ${d.now}, ${d.now})
    RETURNING *`;
  return row!;
}

/** The merchant's test deliveries still waiting for their attempt's outcome, created since `since`. */
export async function countTestDeliveriesInFlight(db: Queryable, merchantId: string, since: Date): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    SELECT count(*)::int AS n FROM webhook_deliveries
     WHERE merchant_id = ${merchantId} AND from_test_route AND status = 'pending' AND created_at > ${since}`;
  return row!.n;
}

/**
 * Ends the merchant's test deliveries still pending from before `since`: the process making
 * their attempt stopped before recording it, and no job will ever come back for them.
 */
export async function abandonTestDeliveries(db: Queryable, merchantId: string, since: Date, now: Date): Promise<void> {
  await db`
    UPDATE webhook_deliveries SET status = 'failed', leased_until = NULL, completed_at = ${now},
           last_error = 'abandoned: the process making the test attempt stopped before recording its outcome', updated_at = ${now}
     WHERE merchant_id = ${merchantId} AND from_test_route AND status = 'pending' AND created_at <= ${since}`;
}
