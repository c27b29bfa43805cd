import type { Queryable } from '../db/client.js';
import type { AuthContext } from '../http/auth.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { iso } from '../http/schemas.js';
import * as q from './queries.js';

// The fixed one-minute window of src/http/rate-limit.ts (window_start = unix seconds rounded down
// to a multiple of 60, bucket `key:<keyId>`): read here, never written.
const WINDOW_SECONDS = 60;

export interface RateLimitView {
  limit: number;
  remaining: number;
  /** Unix seconds when the current window ends. */
  reset: number;
}

/**
 * The rate-limit state of a key as the auth hook left it, read-only: the hook has already
 * counted the current request. Should the window roll over between the hook and this read, the
 * new window is reported (nothing counted in it yet), which is the true state at that instant.
 */
export async function readKeyRateLimit(db: Queryable, keyId: string, limit: number): Promise<RateLimitView> {
  const nowSec = Math.floor(clock.now().getTime() / 1000);
  const windowStart = nowSec - (nowSec % WINDOW_SECONDS);
  const hits = await q.windowHits(db, `key:${keyId}`, windowStart);
  return { limit, remaining: Math.max(0, limit - hits), reset: windowStart + WINDOW_SECONDS };
}

export async function describeCaller(db: Queryable, auth: AuthContext, defaultRateLimit: number) {
  const [merchant, rateLimit] = await Promise.all([
    q.getMerchantProfile(db, auth.merchant.id),
    readKeyRateLimit(db, auth.keyId, auth.rateLimit ?? defaultRateLimit),
  ]);
  // The key was just authenticated against this merchant, so this is only a concurrent deletion.
  if (!merchant) throw new AppError('invalid_api_key', 'The API key is not valid or has been revoked.');
  return {
    merchant: { id: merchant.id, name: merchant.name, base_currency: merchant.base_currency },
    key: { id: auth.keyId, prefix: auth.prefix.slice(0, 12), scopes: auth.scopes, created_at: iso(auth.keyCreatedAt)! },
    rate_limit: rateLimit,
    can_charge: merchant.payment_provider !== null,
  };
}
