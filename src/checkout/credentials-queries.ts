import type { Queryable } from '../db/client.js';

export interface CredentialsRow {
  merchant_id: string;
  provider: string;
  sealed: Buffer;
  fields: string[];
  updated_at: Date;
}

export async function upsertCredentials(db: Queryable, merchantId: string, provider: string, sealed: Buffer, fields: string[], now: Date): Promise<void> {
  await db`
    INSERT INTO provider_credentials (merchant_id, provider, sealed, fields, updated_at)
    VALUES (${merchantId}, ${provider}, ${sealed}, ${fields}, ${now})
    ON CONFLICT (merchant_id, provider) DO UPDATE SET sealed = EXCLUDED.sealed, fields = EXCLUDED.fields, updated_at = EXCLUDED.updated_at`;
}

export async function getCredentials(db: Queryable, merchantId: string, provider: string): Promise<CredentialsRow | null> {
  const rows = await db<CredentialsRow[]>`SELECT * FROM provider_credentials WHERE merchant_id = ${merchantId} AND provider = ${provider}`;
  return rows[0] ?? null;
}

/** The fields set for the merchant's current provider (empty when none are stored), read without the key. */
export async function currentProviderFields(db: Queryable, merchantId: string): Promise<{ provider: string | null; fields: string[] } | null> {
  const rows = await db<{ provider: string | null; fields: string[] | null }[]>`
    SELECT m.payment_provider AS provider, c.fields
      FROM merchants m LEFT JOIN provider_credentials c ON c.merchant_id = m.id AND c.provider = m.payment_provider
     WHERE m.id = ${merchantId}`;
  const row = rows[0];
  return row ? { provider: row.provider, fields: row.fields ?? [] } : null;
}
