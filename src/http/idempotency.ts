import { createHash } from 'node:crypto';
import type { Queryable, Sql } from '../db/client.js';
import { clock } from '../clock.js';

const RETENTION_MS = 24 * 60 * 60 * 1000;

export type KeyLookup =
  | { kind: 'new' }
  | { kind: 'in_progress' }
  | { kind: 'mismatch' }
  | { kind: 'replay'; status: number; body: string };

/** Key order does not matter: "same body" is the same JSON after parsing. */
export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body ?? null)).digest('hex');
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.keys(v as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((v as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(v);
}

/**
 * The first statement of the request's transaction. It takes the key's transaction-scoped
 * advisory lock without waiting: held, the key is claimed until this transaction ends (a process
 * that dies mid-request releases it with its connection); held elsewhere, a request with this key
 * is running now. It reads the answer stored for the key, if any, and, holding the lock, removes
 * one that has expired, so that storeAnswer is a plain insert.
 *
 * A `running` row is a claim of the earlier claim-then-complete scheme, kept by a process of the
 * previous release until its lease ends.
 */
export async function lookupKey(db: Queryable, merchantId: string, route: string, key: string, hash: string): Promise<KeyLookup> {
  const now = clock.now();
  const [row] = await db<{ locked: boolean; request_hash: string | null; status: string | null; response_status: number | null; response_body: string | null }[]>`
    WITH claim AS (
      SELECT pg_try_advisory_xact_lock(hashtextextended(${`${merchantId} ${route} ${key}`}, 0)) AS locked
    ), expired AS (
      DELETE FROM idempotency_keys k USING claim
       WHERE claim.locked AND k.merchant_id = ${merchantId} AND k.route = ${route} AND k.key = ${key}
         AND (k.expires_at < ${now} OR (k.status = 'running' AND k.locked_until < ${now}))
    )
    SELECT claim.locked, k.request_hash, k.status, k.response_status, k.response_body
      FROM claim
      LEFT JOIN idempotency_keys k
        ON k.merchant_id = ${merchantId} AND k.route = ${route} AND k.key = ${key} AND k.expires_at >= ${now}
       AND (k.status = 'done' OR k.locked_until >= ${now})`;
  if (row?.status === 'done') {
    if (row.request_hash !== hash) return { kind: 'mismatch' };
    return { kind: 'replay', status: row.response_status ?? 200, body: row.response_body ?? '' };
  }
  return row?.locked && row.status === null ? { kind: 'new' } : { kind: 'in_progress' };
}

/**
 * The statement that stores the answer in the transaction of a lookupKey that found the key new,
 * unsent: it can travel with the COMMIT. It fails with a unique violation (isKeyTaken) when
 * another request stored an answer for the key first: one that committed after the lookup's
 * snapshot was taken but before its lock was.
 */
export function storeAnswer(db: Queryable, merchantId: string, route: string, key: string, hash: string, status: number, body: string) {
  const now = clock.now();
  return db`
    INSERT INTO idempotency_keys (merchant_id, route, key, request_hash, status, locked_until, response_status, response_body, created_at, expires_at)
    VALUES (${merchantId}, ${route}, ${key}, ${hash}, 'done', ${now}, ${status}, ${body}, ${now}, ${new Date(now.getTime() + RETENTION_MS)})`;
}

export function isKeyTaken(err: unknown): boolean {
  const e = err as { code?: string; constraint_name?: string } | null;
  return e?.code === '23505' && e.constraint_name === 'idempotency_keys_pkey';
}

export async function purgeExpiredKeys(sql: Sql): Promise<number> {
  const res = await sql`DELETE FROM idempotency_keys WHERE expires_at < ${clock.now()}`;
  return res.count;
}
