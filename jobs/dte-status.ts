import { z } from 'zod';
import { pollSubmission } from '../src/sii/submission.js';
import { HEARTBEAT_SECONDS, queues } from '../src/queue/boss.js';
import { defineJob } from '../src/queue/runners.js';
import { DTE_CONCURRENCY, submissionDeps } from './dte-submit.js';
import type { WorkerDeps } from './worker.js';

// Old jobs outlive deploys: the payload is checked, never trusted.
const payload = z.object({ submission_id: z.uuid(), poll: z.number().int().min(0).default(0) });

/** Polls one upload's state at SII. */
export async function pollDteStatus(deps: WorkerDeps, data: unknown): Promise<void> {
  const { submission_id, poll } = payload.parse(data);
  await pollSubmission(submissionDeps(deps), submission_id, poll);
}

export const job = defineJob({
  // One poll of an upload's state; a state still under way is a new job further on, a failed
  // call is retried like the submission.
  queue: { name: queues.dteStatus.name, expireInSeconds: 120, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 40, retryDelay: 2, retryBackoff: true, retryDelayMax: 3600 },
  runner: 'each',
  concurrency: DTE_CONCURRENCY,
  run: (deps: WorkerDeps, job) => pollDteStatus(deps, job.data),
});
