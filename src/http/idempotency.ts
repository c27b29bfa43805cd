import { createHash } from 'node:crypto';
import type { Queryable, Sql } from '../db/client.js';
import { clock } from '../clock.js';

const RETENTION_MS = 24 * 60 * 60 * 1000;
// A claim held longer than this belongs to a process that died mid-request (its transaction
// rolled back), so the key may be claimed again.
const CLAIM_LEASE_MS = 60 * 1000;

export type ClaimResult =
  | { kind: 'claimed' }
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

export async function claimKey(sql: Sql, merchantId: string, route: string, key: string, hash: string): Promise<ClaimResult> {
  const now = clock.now();
  const claimed = await sql`
    INSERT INTO idempotency_keys (merchant_id, route, key, request_hash, status, locked_until, created_at, expires_at)
    VALUES (${merchantId}, ${route}, ${key}, ${hash}, 'running',
            ${new Date(now.getTime() + CLAIM_LEASE_MS)}, ${now}, ${new Date(now.getTime() + RETENTION_MS)})
    ON CONFLICT (merchant_id, route, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, status = 'running', locked_until = EXCLUDED.locked_until,
           response_status = NULL, response_body = NULL, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
     WHERE (idempotency_keys.status = 'running' AND idempotency_keys.locked_until < EXCLUDED.created_at)
        OR idempotency_keys.expires_at < EXCLUDED.created_at
    RETURNING 1`;
  if (claimed.count === 1) return { kind: 'claimed' };
  const [row] = await sql<{ request_hash: string; status: string; response_status: number | null; response_body: string | null }[]>`
    SELECT request_hash, status, response_status, response_body FROM idempotency_keys
     WHERE merchant_id = ${merchantId} AND route = ${route} AND key = ${key}`;
  // Released between our two statements: the caller may simply retry.
  if (!row || row.status === 'running') return { kind: 'in_progress' };
  if (row.request_hash !== hash) return { kind: 'mismatch' };
  return { kind: 'replay', status: row.response_status ?? 200, body: row.response_body ?? '' };
}

/** Records the answer; called inside the business transaction so both commit together. */
export async function completeKey(db: Queryable, merchantId: string, route: string, key: string, status: number, body: string): Promise<void> {
  await db`
    UPDATE idempotency_keys SET status = 'done', response_status = ${status}, response_body = ${body}
     WHERE merchant_id = ${merchantId} AND route = ${route} AND key = ${key}`;
}

export async function releaseKey(sql: Sql, merchantId: string, route: string, key: string): Promise<void> {
  await sql`DELETE FROM idempotency_keys WHERE merchant_id = ${merchantId} AND route = ${route} AND key = ${key} AND status = 'running'`;
}

export async function purgeExpiredKeys(sql: Sql): Promise<number> {
  const res = await sql`DELETE FROM idempotency_keys WHERE expires_at < ${clock.now()}`;
  return res.count;
}
