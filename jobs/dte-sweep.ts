import { sweepSubmissions } from '../src/sii/submission.js';
import { queues } from '../src/queue/boss.js';
import { defineJob } from '../src/queue/runners.js';
import { submissionDeps } from './dte-submit.js';
import type { WorkerDeps } from './worker.js';

/** Queues whatever is still owed to SII. */
export async function sweepDtes(deps: WorkerDeps): Promise<void> {
  await sweepSubmissions(submissionDeps(deps));
}

export const job = defineJob({
  queue: { name: queues.dteSweep.name, expireInSeconds: 120, retryLimit: 2, retryDelay: 30 },
  runner: 'scheduled',
  run: (deps: WorkerDeps) => sweepDtes(deps),
  // Submission and polls are jobs of their own; this only catches what they gave up on.
  schedule: '*/15 * * * *',
});
