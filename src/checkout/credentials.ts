import type { Queryable } from '../db/client.js';
import { AppError } from '../errors.js';
import type { SecretBox } from '../webhooks/secrets.js';
import { providerFor } from './providers/registry.js';
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

/** Decisions §16: the merchant can take payments when its provider is known and its credentials complete. */
export async function canCharge(db: Queryable, merchantId: string): Promise<boolean> {
  const current = await q.currentProviderFields(db, merchantId);
  if (!current?.provider) return false;
  let provider: PaymentProvider;
  try {
    provider = providerFor(current.provider);
  } catch {
    return false;
  }
  return required(provider).every((f) => current.fields.includes(f));
}
