import { z } from 'zod';
import { fanOutEvents } from '../src/webhooks/service.js';
import { HEARTBEAT_SECONDS, queues } from '../src/queue/boss.js';
import { defineJob } from '../src/queue/runners.js';
import type { WorkerDeps } from './worker.js';

// Old jobs outlive deploys: the payload is checked, never trusted.
const payload = z.object({ event_id: z.uuid() });

/** One delivery per subscribed endpoint of each event, each with its first attempt queued. */
export async function fanOut(deps: WorkerDeps, data: unknown[]): Promise<number> {
  return fanOutEvents(
    deps.sql,
    deps,
    data.map((d) => payload.parse(d).event_id),
  );
}

export const job = defineJob({
  // Fan-out only writes rows: quick, and safe to repeat (one delivery per event and endpoint).
  queue: { name: queues.webhookFanout.name, expireInSeconds: 60, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 10, retryDelay: 1, retryBackoff: true, notify: true },
  runner: 'batch',
  // A fan-out batch is one transaction. pg-boss counts a group's cap in jobs and keeps it within
  // localConcurrency: a merchant's burst fills up to 4 loops' batches at once, and the other 28
  // loops serve the rest. With a cap of one batch, one merchant's events fanned out one batch after
  // another, and that bounded the webhooks of a burst (bench:effects 1b: 303 → 369 webhooks/s).
  concurrency: { localConcurrency: 32, perGroup: 32, batchSize: 8 },
  run: (deps: WorkerDeps, data) => fanOut(deps, data),
});
