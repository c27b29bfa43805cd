import { purgeExpiredKeys } from '../src/http/idempotency.js';
import { purgeRateLimitWindows } from '../src/http/rate-limit.js';
import { queues } from '../src/queue/boss.js';
import { defineJob } from '../src/queue/runners.js';
import type { WorkerDeps } from './worker.js';

/** Idempotency records past their 24 hours and rate-limit windows long closed. */
export async function purgeExpired(deps: WorkerDeps): Promise<{ idempotencyKeys: number; rateLimitWindows: number }> {
  return {
    idempotencyKeys: await purgeExpiredKeys(deps.sql),
    rateLimitWindows: await purgeRateLimitWindows(deps.sql),
  };
}

export const job = defineJob({
  queue: { name: queues.idempotencyPurge.name, expireInSeconds: 120, retryLimit: 2, retryDelay: 60 },
  runner: 'scheduled',
  run: (deps: WorkerDeps) => purgeExpired(deps),
  // docs/decisions.md §4: hourly.
  schedule: '17 * * * *',
});
