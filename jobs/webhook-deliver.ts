import { z } from 'zod';
import { attemptDeliveries, DELIVERIES_PER_ENDPOINT, transactOn, type AttemptRef } from '../src/webhooks/delivery.js';
import { HEARTBEAT_SECONDS, queues } from '../src/queue/boss.js';
import { defineJob } from '../src/queue/runners.js';
import type { WorkerDeps } from './worker.js';

const payload = z.object({ delivery_id: z.uuid(), attempt: z.number().int().positive() });

/**
 * One attempt of one delivery per job, the jobs of a batch claimed together: one outcome per job,
 * in order. A job whose payload is not an attempt fails alone. A worker that dies mid-attempt
 * records nothing: the job comes back when its lease runs out and makes the same attempt again, so
 * no attempt is lost.
 */
export function deliverWebhooks(deps: WorkerDeps, data: unknown[]): Promise<unknown>[] {
  const parsed = data.map((d) => payload.safeParse(d));
  const refs: AttemptRef[] = parsed.flatMap((p) => (p.success ? [{ id: p.data.delivery_id, attempt: p.data.attempt }] : []));
  const outcomes = refs.length > 0 ? attemptDeliveries(deps.sql, transactOn(deps.sql), deps, refs) : [];
  let next = 0;
  return parsed.map((p) => (p.success ? outcomes[next++]! : Promise.reject(p.error)));
}

export const job = defineJob({
  // One attempt per job; the next attempt is a new job on the schedule of docs/decisions.md §10, so
  // pg-boss's own retries only cover a worker that died or a database that blinked. The lease
  // outlasts the 15 s request timeout.
  queue: { name: queues.webhookDeliver.name, expireInSeconds: 30, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 20, retryDelay: 1, retryBackoff: true, notify: true },
  runner: 'eachOf',
  // Grouped by endpoint. Attempts are fetched 8 at a time, claimed in one statement and their jobs
  // completed together: a third of the statements per webhook they took one by one. A batch that
  // waits on a hanging receiver holds that endpoint's slots and its own loop, and its other
  // endpoints' slots for at most SLOT_GRACE_MS (src/queue/runners.ts): a hanging endpoint holds at
  // most 16 attempts, so at most 16 of 48 loops.
  concurrency: { localConcurrency: 48, perGroup: DELIVERIES_PER_ENDPOINT, batchSize: 8 },
  start: (deps: WorkerDeps, jobs) => deliverWebhooks(deps, jobs.map((job) => job.data)),
});
