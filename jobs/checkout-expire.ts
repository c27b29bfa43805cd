import { z } from 'zod';
import { clock } from '../src/clock.js';
import { expireDueCheckouts, expireOnSchedule } from '../src/checkout/expire.js';
import { invoiceUrls } from '../src/http/urls.js';
import { queues } from '../src/queue/boss.js';
import { defineJob } from '../src/queue/runners.js';
import type { WorkerDeps } from './worker.js';

// Old jobs outlive deploys: the payload is checked, never trusted. No checkout_id: the sweep.
const payload = z.object({ checkout_id: z.uuid().optional() });

/** Expires one session at its deadline, or every overdue pending one (the sweep); returns how many. */
export async function expireCheckouts(deps: WorkerDeps, data: unknown): Promise<number> {
  const { checkout_id } = payload.parse(data ?? {});
  // The secret box opens a gateway's credentials (one that can say how a session's payment stands
  // is asked first) and the merchant's DTE keys (an expired invoice's DTE gets its credit note).
  const d = { urls: invoiceUrls(deps.config), boss: deps.boss, secrets: deps.secrets };
  const now = clock.now();
  if (checkout_id) return (await expireOnSchedule(deps.sql, checkout_id, now, d)) ? 1 : 0;
  return expireDueCheckouts(deps.sql, now, d);
}

export const job = defineJob({
  // One job per session at its expires_at (and the sweep, with no checkout_id). A run that finds
  // its session not due yet (clocks a little apart) throws, and the backoff retries it.
  queue: { name: queues.checkoutExpire.name, expireInSeconds: 60, retryLimit: 10, retryDelay: 5, retryBackoff: true },
  runner: 'scheduled',
  run: (deps: WorkerDeps, job) => expireCheckouts(deps, job.data),
  // Each checkout has its own job at expires_at; this sweep only catches ones that were missed.
  schedule: '*/10 * * * *',
});
