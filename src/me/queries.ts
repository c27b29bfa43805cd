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

