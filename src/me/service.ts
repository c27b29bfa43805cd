import type { Queryable } from '../db/client.js';
import type { AuthContext } from '../http/auth.js';
import { AppError } from '../errors.js';
import { iso } from '../http/schemas.js';
import { chargingMerchant } from '../checkout/credentials.js';
import { dteSummary } from '../dte/service.js';

/**
 * `rate_limit` is the window the auth hook counted this request in: the headers' own figures. The
 * merchant is read fresh rather than from the cached auth context (the provider can be set at any
 * time), with `can_charge` in the same query.
 */
export async function describeCaller(db: Queryable, auth: AuthContext) {
  const [merchant, dte] = await Promise.all([chargingMerchant(db, auth.merchant.id), dteSummary(db, auth.merchant.id)]);
  // The key was just authenticated against this merchant, so this is only a concurrent deletion.
  if (!merchant) throw new AppError('invalid_api_key', 'The API key is not valid or has been revoked.');
  return {
    merchant: { id: merchant.id, name: merchant.name, base_currency: merchant.base_currency },
    key: { id: auth.keyId, prefix: auth.prefix.slice(0, 12), scopes: auth.scopes, created_at: iso(auth.keyCreatedAt)! },
    rate_limit: auth.rateLimitWindow,
    can_charge: merchant.can_charge,
    dte,
  };
}
