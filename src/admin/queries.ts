import type { Queryable } from '../db/client.js';

export interface RateRow {
  merchant_id: string;
  currency: string;
  /** YYYY-MM-DD: dates stay calendar dates (db/client.ts). */
  rate_date: string;
  rate: string;
  created_at: Date;
}

/** A merchant's rate table, newest date first. */
export async function listRates(db: Queryable, merchantId: string, currency: string | undefined, limit: number, offset: number): Promise<RateRow[]> {
  return db<RateRow[]>`
    SELECT merchant_id, currency, rate_date, rate::text AS rate, created_at
      FROM exchange_rates
     WHERE merchant_id = ${merchantId}::uuid
       ${currency ? db`AND currency = ${currency}::text` : db``}
     ORDER BY rate_date DESC, currency
     LIMIT ${limit}::int OFFSET ${offset}::int`;
}
