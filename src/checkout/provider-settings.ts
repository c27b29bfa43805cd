import { z } from 'zod';
import type { Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { parseOrThrow } from '../http/validation.js';
import type { SecretBox } from '../secret-box.js';
import * as merchants from '../merchants/service.js';
import { required } from './credentials.js';
import { providerFor } from './providers/registry.js';
import * as q from './credentials-queries.js';

const secret = z.string().trim().min(1).max(1000);

/** A gateway's settings as the CLI and the admin router take them (docs/decisions.md §16). */
export const credentialsInput = z.strictObject({
  commerce_code: z.string().trim().regex(/^\d{1,12}$/, "must be Webpay's numeric commerce code").optional(),
  api_key: secret.optional(),
  access_token: secret.optional(),
  webhook_secret: secret.optional(),
});

/**
 * Sets the merchant's payment provider (null: none) with its credentials, sealed; the answer tells
 * which fields are set, never their values. A gateway needs its whole set at once: an unknown
 * provider is `invalid_provider`, an incomplete set `provider_credentials_missing`, a field of
 * another gateway a validation error naming it.
 */
export async function configureProvider(sql: Sql, secrets: SecretBox, merchantId: string, providerName: string | null, given: z.input<typeof credentialsInput> = {}) {
  const id = parseOrThrow(z.uuid(), merchantId, 422, 'merchant_id');
  const creds = parseOrThrow(credentialsInput, given);
  const provider = providerName === null ? null : providerFor(providerName);
  const fields = provider ? required(provider) : [];
  const foreign = Object.keys(creds).filter((k) => !fields.includes(k));
  if (foreign.length > 0) {
    throw AppError.validation(foreign.map((path) => ({ path, message: `is not a setting of ${provider?.name ?? 'no provider'}` })));
  }
  const absent = fields.filter((f) => !creds[f as keyof typeof creds]);
  if (provider && absent.length > 0) {
    throw new AppError('provider_credentials_missing', `${provider.name} needs ${absent.join(' and ')} as well.`, { details: { provider: provider.name } });
  }
  return sql.begin(async (tx) => {
    if (provider && fields.length > 0) {
      const values = Object.fromEntries(fields.map((f) => [f, creds[f as keyof typeof creds]!]));
      await q.upsertCredentials(tx, id, provider.name, secrets.seal(JSON.stringify(values)), [...fields], clock.now());
    }
    const merchant = await merchants.setPaymentProvider(tx, id, provider?.name ?? null);
    return { ...merchant, provider_credentials: { provider: provider?.name ?? null, fields_set: [...fields] } };
  });
}

