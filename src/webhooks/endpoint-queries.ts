import type { Queryable } from '../db/client.js';
import type { EventRow } from './event-queries.js';

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

/** Each event's subscribers: its merchant's enabled endpoints that take its type, oldest first. */
export async function subscribersOf(db: Queryable, events: Pick<EventRow, 'id' | 'merchant_id' | 'type'>[]): Promise<{ event_id: string; endpoint_id: string; is_sandbox: boolean }[]> {
  return db<{ event_id: string; endpoint_id: string; is_sandbox: boolean }[]>`
    SELECT ev.id AS event_id, e.id AS endpoint_id, e.is_sandbox
      FROM unnest(${events.map((ev) => ev.id)}::uuid[], ${events.map((ev) => ev.merchant_id)}::uuid[], ${events.map((ev) => ev.type)}::text[]) AS ev (id, merchant_id, type)
      JOIN webhook_endpoints e ON e.merchant_id = ev.merchant_id AND e.enabled AND (cardinality(e.events) = 0 OR ev.type = ANY (e.events))
     ORDER BY ev.id, e.created_at, e.id`;
}
