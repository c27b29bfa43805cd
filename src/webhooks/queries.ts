import type { Queryable } from '../db/client.js';
import type { DeliveryErrorCategory } from './schemas.js';

export interface EndpointRow {
  id: string;
  merchant_id: string;
  url: string;
  description: string | null;
  events: string[];
  enabled: boolean;
  is_sandbox: boolean;
  secret_encrypted: Uint8Array;
  secret_prefix: string;
  consecutive_failures: number;
  failing_since: Date | null;
  disabled_at: Date | null;
  disabled_reason: 'consecutive_failures' | 'gone' | null;
  /** A copy of another endpoint's URL kept from before URLs were unique (sql/007). */
  duplicate_url: boolean;
  created_at: Date;
  updated_at: Date;
}

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

export interface AttemptRow {
  id: string;
  delivery_id: string;
  attempt_number: number;
  started_at: Date;
  duration_ms: number;
  request_url: string;
  request_headers: Record<string, string>;
  response_status: number | null;
  response_body: string | null;
  error: string | null;
  error_category: DeliveryErrorCategory | null;
}

// ─── Per-merchant locks ──────────────────────────────────────────────────────

// Advisory lock classes of the two-key form, whose keys never meet the one-key locks of
// migrations and tests. The second key is the merchant's: merchants never wait for each other,
// but for a rare hash collision that only serialises two short transactions.
const lockClasses = { endpoints: 727_010, testDeliveries: 727_011, recover: 727_012 } as const;

/** Held until the transaction ends: counting then inserting is one step for this merchant. */
export async function lockMerchant(db: Queryable, what: keyof typeof lockClasses, merchantId: string): Promise<void> {
  await db`SELECT pg_advisory_xact_lock(${lockClasses[what]}::int, hashtext(${merchantId}::text))`;
}

// ─── Endpoints ───────────────────────────────────────────────────────────────

export interface NewEndpoint {
  id: string;
  merchant_id: string;
  url: string;
  description: string | null;
  events: string[];
  is_sandbox: boolean;
  secret_encrypted: Buffer;
  secret_prefix: string;
  now: Date;
}

export async function insertEndpoint(db: Queryable, e: NewEndpoint): Promise<EndpointRow> {
  const [row] = await db<EndpointRow[]>`
    INSERT INTO webhook_endpoints (id, merchant_id, url, description, events, is_sandbox, secret_encrypted, secret_prefix, created_at, updated_at)
    VALUES (${e.id}, ${e.merchant_id}, ${e.url}, ${e.description}, ${e.events}::text[], ${e.is_sandbox},
            ${e.secret_encrypted}, ${e.secret_prefix}, ${e.now}, ${e.now})
    RETURNING *`;
  return row!;
}

export async function listEndpoints(db: Queryable, merchantId: string): Promise<EndpointRow[]> {
  return db<EndpointRow[]>`
    SELECT * FROM webhook_endpoints WHERE merchant_id = ${merchantId} ORDER BY created_at, id`;
}

export async function countEndpoints(db: Queryable, merchantId: string): Promise<number> {
  const [row] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_endpoints WHERE merchant_id = ${merchantId}`;
  return row!.n;
}

/** The violation of one URL once per merchant (sql/007), raised by an insert or an update. */
export function isDuplicateUrl(err: unknown): boolean {
  const e = err as { code?: string; constraint_name?: string } | null;
  return e?.code === '23505' && e.constraint_name === 'webhook_endpoints_merchant_url';
}

export async function getEndpoint(db: Queryable, merchantId: string, id: string): Promise<EndpointRow | null> {
  const rows = await db<EndpointRow[]>`SELECT * FROM webhook_endpoints WHERE merchant_id = ${merchantId} AND id = ${id}`;
  return rows[0] ?? null;
}

/** Any merchant's endpoint: support staff and jobs look across merchants. */
export async function findEndpoint(db: Queryable, id: string): Promise<EndpointRow | null> {
  const rows = await db<EndpointRow[]>`SELECT * FROM webhook_endpoints WHERE id = ${id}`;
  return rows[0] ?? null;
}

export interface EndpointChanges {
  url?: string;
  description?: string | null;
  events?: string[];
  enabled?: boolean;
  is_sandbox?: boolean;
}

/**
 * Enabling clears the failure streak and the disabled marks; disabling by hand stamps
 * `disabled_at` with no automatic reason. A value equal to the current one changes nothing.
 * A new URL is unique like any other, even on a copy kept from before URLs were (sql/007).
 */
export async function updateEndpoint(db: Queryable, merchantId: string | null, id: string, ch: EndpointChanges, now: Date): Promise<EndpointRow | null> {
  const enable = ch.enabled === true;
  const disable = ch.enabled === false;
  const rows = await db<EndpointRow[]>`
    UPDATE webhook_endpoints SET
      url = COALESCE(${ch.url ?? null}::text, url),
      duplicate_url = duplicate_url AND COALESCE(${ch.url ?? null}::text = url, true),
      description = CASE WHEN ${ch.description !== undefined} THEN ${ch.description ?? null}::text ELSE description END,
      events = COALESCE(${ch.events ?? null}::text[], events),
      is_sandbox = COALESCE(${ch.is_sandbox ?? null}::boolean, is_sandbox),
      enabled = CASE WHEN ${enable} THEN true WHEN ${disable} THEN false ELSE enabled END,
      consecutive_failures = CASE WHEN ${enable} THEN 0 ELSE consecutive_failures END,
      failing_since = CASE WHEN ${enable} THEN NULL ELSE failing_since END,
      disabled_at = CASE WHEN ${enable} THEN NULL WHEN ${disable} AND enabled THEN ${now}::timestamptz ELSE disabled_at END,
      disabled_reason = CASE WHEN ${enable} THEN NULL ELSE disabled_reason END,
      updated_at = ${now}
     WHERE id = ${id} AND (${merchantId}::uuid IS NULL OR merchant_id = ${merchantId}::uuid)
    RETURNING *`;
  return rows[0] ?? null;
}

export async function replaceSecret(db: Queryable, merchantId: string, id: string, sealed: Buffer, prefix: string, now: Date): Promise<EndpointRow | null> {
  const rows = await db<EndpointRow[]>`
    UPDATE webhook_endpoints SET secret_encrypted = ${sealed}, secret_prefix = ${prefix}, updated_at = ${now}
     WHERE merchant_id = ${merchantId} AND id = ${id}
    RETURNING *`;
  return rows[0] ?? null;
}

export async function deleteEndpoint(db: Queryable, merchantId: string, id: string): Promise<boolean> {
  const res = await db`DELETE FROM webhook_endpoints WHERE merchant_id = ${merchantId} AND id = ${id}`;
  return res.count > 0;
}

export async function recordEndpointFailure(db: Queryable, id: string, now: Date): Promise<EndpointRow | null> {
  const rows = await db<EndpointRow[]>`
    UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1,
           failing_since = COALESCE(failing_since, ${now}), updated_at = ${now}
     WHERE id = ${id}
    RETURNING *`;
  return rows[0] ?? null;
}

/** Null when it was already disabled: only the run that disables it tells the merchant. */
export async function disableEndpoint(db: Queryable, id: string, reason: 'consecutive_failures' | 'gone', now: Date): Promise<EndpointRow | null> {
  const rows = await db<EndpointRow[]>`
    UPDATE webhook_endpoints SET enabled = false, disabled_at = ${now}, disabled_reason = ${reason}, updated_at = ${now}
     WHERE id = ${id} AND enabled
    RETURNING *`;
  return rows[0] ?? null;
}

// ─── Events and fan-out ──────────────────────────────────────────────────────

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

/** Each event's subscribers: its merchant's enabled endpoints that take its type, oldest first. */
export async function subscribersOf(db: Queryable, events: Pick<EventRow, 'id' | 'merchant_id' | 'type'>[]): Promise<{ event_id: string; endpoint_id: string; is_sandbox: boolean }[]> {
  return db<{ event_id: string; endpoint_id: string; is_sandbox: boolean }[]>`
    SELECT ev.id AS event_id, e.id AS endpoint_id, e.is_sandbox
      FROM unnest(${events.map((ev) => ev.id)}::uuid[], ${events.map((ev) => ev.merchant_id)}::uuid[], ${events.map((ev) => ev.type)}::text[]) AS ev (id, merchant_id, type)
      JOIN webhook_endpoints e ON e.merchant_id = ev.merchant_id AND e.enabled AND (cardinality(e.events) = 0 OR ev.type = ANY (e.events))
     ORDER BY ev.id, e.created_at, e.id`;
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

// ─── Deliveries and attempts ─────────────────────────────────────────────────

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

export type NewAttempt = AttemptRow;

export async function insertAttempt(db: Queryable, a: NewAttempt): Promise<void> {
  await db`
    INSERT INTO webhook_attempts (id, delivery_id, attempt_number, started_at, duration_ms, request_url, request_headers, response_status, response_body, error, error_category)
    VALUES (${a.id}, ${a.delivery_id}, ${a.attempt_number}, ${a.started_at}, ${a.duration_ms}, ${a.request_url},
            ${db.json(a.request_headers)}, ${a.response_status}, ${a.response_body}, ${a.error}, ${a.error_category})`;
}

export interface AttemptOutcome {
  status: DeliveryStatus;
  next_retry_at: Date | null;
  last_response_status: number | null;
  last_error: string | null;
  last_error_category: DeliveryErrorCategory | null;
  completed_at: Date | null;
}

/** Null when this attempt was already recorded (a run that lost its hold and came back late). */
export async function recordAttempt(db: Queryable, id: string, attempt: number, o: AttemptOutcome, now: Date): Promise<DeliveryRow | null> {
  const rows = await db<DeliveryRow[]>`
    UPDATE webhook_deliveries SET attempts = ${attempt}, status = ${o.status}, next_retry_at = ${o.next_retry_at},
           last_response_status = ${o.last_response_status}, last_error = ${o.last_error},
           last_error_category = ${o.last_error_category}, completed_at = ${o.completed_at},
           leased_until = NULL, updated_at = ${now}
     WHERE id = ${id} AND attempts = ${attempt - 1} AND status IN ('pending', 'retrying')
    RETURNING *`;
  return rows[0] ?? null;
}

/**
 * A successful attempt, recorded in one statement (so with no transaction of its own): the
 * delivery succeeds, the attempt is kept and, when it counts, the endpoint's failure streak ends.
 * The common outcome by far, and one round trip instead of five. Null when another run recorded
 * this attempt first (nothing is written then).
 */
export async function recordSuccessfulAttempt(
  db: Queryable,
  a: NewAttempt,
  endpoint: { id: string; counts: boolean },
  now: Date,
): Promise<DeliveryRow | null> {
  const rows = await db<DeliveryRow[]>`
    WITH d AS (
      UPDATE webhook_deliveries SET attempts = ${a.attempt_number}, status = 'success', next_retry_at = NULL,
             last_response_status = ${a.response_status}, last_error = NULL, last_error_category = NULL,
             completed_at = ${now}, leased_until = NULL, updated_at = ${now}
       WHERE id = ${a.delivery_id} AND attempts = ${a.attempt_number - 1} AND status IN ('pending', 'retrying')
      RETURNING *
    ), kept AS (
      INSERT INTO webhook_attempts (id, delivery_id, attempt_number, started_at, duration_ms, request_url, request_headers, response_status, response_body, error, error_category)
      SELECT ${a.id}, d.id, ${a.attempt_number}, ${a.started_at}, ${a.duration_ms}, ${a.request_url},
             ${db.json(a.request_headers)}, ${a.response_status}, ${a.response_body}, NULL, NULL
        FROM d
    ), healthy AS (
      UPDATE webhook_endpoints SET consecutive_failures = 0, failing_since = NULL, updated_at = ${now}
       WHERE id = ${endpoint.id} AND ${endpoint.counts} AND EXISTS (SELECT 1 FROM d)
         AND (consecutive_failures <> 0 OR failing_since IS NOT NULL)
    )
    SELECT * FROM d`;
  return rows[0] ?? null;
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

export async function getDelivery(db: Queryable, id: string): Promise<DeliveryRow | null> {
  const rows = await db<DeliveryRow[]>`SELECT * FROM webhook_deliveries WHERE id = ${id}`;
  return rows[0] ?? null;
}

export async function listAttempts(db: Queryable, deliveryId: string): Promise<AttemptRow[]> {
  return db<AttemptRow[]>`SELECT * FROM webhook_attempts WHERE delivery_id = ${deliveryId} ORDER BY attempt_number`;
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
