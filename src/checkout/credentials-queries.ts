import type { Queryable } from '../db/client.js';
import type { MerchantRow } from '../merchants/queries.js';

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

/** The merchant with the credential fields set for its current provider (empty when none are stored), read without the key. */
export async function merchantWithProviderFields(db: Queryable, merchantId: string): Promise<(MerchantRow & { provider_fields: string[] }) | null> {
  const rows = await db<(MerchantRow & { provider_fields: string[] })[]>`
    SELECT m.*, coalesce(c.fields, '{}') AS provider_fields
      FROM merchants m LEFT JOIN provider_credentials c ON c.merchant_id = m.id AND c.provider = m.payment_provider
     WHERE m.id = ${merchantId}`;
  return rows[0] ?? null;
}
