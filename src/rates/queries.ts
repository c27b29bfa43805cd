import type { Queryable } from '../db/client.js';

// A stored rate serves an issue date up to a week after its own (docs/decisions.md §2).
export async function findRate(db: Queryable, merchantId: string, currency: string, onOrBefore: string): Promise<string | null> {
  const rows = await db<{ rate: string }[]>`
    SELECT rate::text AS rate FROM exchange_rates
     WHERE merchant_id = ${merchantId} AND currency = ${currency}
       AND rate_date BETWEEN ${onOrBefore}::date - 7 AND ${onOrBefore}::date
     ORDER BY rate_date DESC LIMIT 1`;
  return rows[0]?.rate ?? null;
}

export async function upsertRate(db: Queryable, merchantId: string, currency: string, date: string, rate: string): Promise<void> {
  await db`
    INSERT INTO exchange_rates (merchant_id, currency, rate_date, rate)
    VALUES (${merchantId}, ${currency}, ${date}::date, ${rate}::numeric)
    ON CONFLICT (merchant_id, currency, rate_date) DO UPDATE SET rate = EXCLUDED.rate`;
}
