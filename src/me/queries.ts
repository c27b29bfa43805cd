import type { Queryable } from '../db/client.js';

export interface MerchantProfileRow {
  id: string;
  name: string;
  base_currency: string;
  payment_provider: string | null;
}

/** Read fresh rather than from the cached auth context: the provider can be set at any time. */
export async function getMerchantProfile(db: Queryable, merchantId: string): Promise<MerchantProfileRow | null> {
  const rows = await db<MerchantProfileRow[]>`
    SELECT id, name, base_currency, payment_provider FROM merchants WHERE id = ${merchantId}`;
  return rows[0] ?? null;
}

/** Hits already counted in one rate-limit window of a bucket; 0 when the window has no row yet. */
export async function windowHits(db: Queryable, bucket: string, windowStart: number): Promise<number> {
  const rows = await db<{ hits: number }[]>`
    SELECT hits FROM rate_limit_windows WHERE bucket = ${bucket} AND window_start = ${windowStart}`;
  return rows[0]?.hits ?? 0;
}
