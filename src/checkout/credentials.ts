import type { Queryable } from '../db/client.js';
import type { MerchantRow } from '../merchants/queries.js';
import { AppError } from '../errors.js';
import type { SecretBox } from '../secret-box.js';
import { knownProvider } from './providers/registry.js';
import type { Credentials, PaymentProvider } from './providers/provider.js';
import * as q from './credentials-queries.js';

/** The credential fields a merchant sets for the provider (none for the sandbox). */
export function required(provider: PaymentProvider): readonly string[] {
  return provider.credentialFields ?? [];
}

function missing(provider: PaymentProvider): AppError {
  return new AppError('provider_credentials_missing', `The ${provider.name} credentials of this account are incomplete; set them again.`, {
    details: { provider: provider.name },
  });
}

/**
 * The merchant's credentials for `provider`, opened: `provider_credentials_missing` when a field
 * is unset or the row cannot be opened (sealed under another ENCRYPTION_KEY).
 */
export async function loadCredentials(db: Queryable, secrets: SecretBox, merchantId: string, provider: PaymentProvider): Promise<Credentials> {
  const fields = required(provider);
  if (fields.length === 0) return {};
  const row = await q.getCredentials(db, merchantId, provider.name);
  if (!row || fields.some((f) => !row.fields.includes(f))) throw missing(provider);
  let opened: Record<string, unknown>;
  try {
    opened = JSON.parse(secrets.open(row.sealed)) as Record<string, unknown>;
  } catch {
    throw missing(provider);
  }
  if (fields.some((f) => typeof opened[f] !== 'string')) throw missing(provider);
  return opened as Credentials;
}

/** A merchant as the documents its customers read see it: whether its hosted page takes payments. */
export type ChargingMerchant = MerchantRow & { can_charge: boolean };

/**
 * docs/decisions.md §11 and §16: the merchant can take payments when its provider is known and its
 * credentials complete (the sandbox needs none). The one rule behind `GET /me` `can_charge`, the
 * hosted invoice page's Pay button and the "view and pay" of its PDF and e-mails, read with the
 * merchant in one query.
 */
export async function chargingMerchant(db: Queryable, merchantId: string): Promise<ChargingMerchant | null> {
  const row = await q.merchantWithProviderFields(db, merchantId);
  if (!row) return null;
  const { provider_fields: fields, ...merchant } = row;
  return asChargingMerchant(fields, merchant);
}

/** The same rule, for a caller that read the merchant with `fields`, its provider's credential fields set. */
export function asChargingMerchant(fields: readonly string[], merchant: MerchantRow): ChargingMerchant {
  const provider = knownProvider(merchant.payment_provider);
  return { ...merchant, can_charge: provider !== null && required(provider).every((f) => fields.includes(f)) };
}
