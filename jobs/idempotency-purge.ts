import { purgeExpiredKeys } from '../src/http/idempotency.js';
import { purgeRateLimitWindows } from '../src/http/rate-limit.js';
import type { WorkerDeps } from './worker.js';

/** Idempotency records past their 24 hours and rate-limit windows long closed. */
export async function purgeExpired(deps: WorkerDeps): Promise<{ idempotencyKeys: number; rateLimitWindows: number }> {
  return {
    idempotencyKeys: await purgeExpiredKeys(deps.sql),
    rateLimitWindows: await purgeRateLimitWindows(deps.sql),
  };
}
