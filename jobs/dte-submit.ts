import { z } from 'zod';
import { invoiceUrls } from '../src/http/urls.js';
import { submitMerchant, type SubmissionDeps } from '../src/sii/submission.js';
import { HEARTBEAT_SECONDS, queues } from '../src/queue/boss.js';
import { defineJob } from '../src/queue/runners.js';
import type { WorkerDeps } from './worker.js';

// Old jobs outlive deploys: the payload is checked, never trusted.
const payload = z.object({ merchant_id: z.uuid() });

/** What the DTE jobs (this one, dte-status and dte-sweep) hand to src/sii/submission.ts. */
export function submissionDeps(deps: WorkerDeps): SubmissionDeps {
  return { sql: deps.sql, boss: deps.boss, secrets: deps.secrets, config: deps.config, urls: invoiceUrls(deps.config) };
}

/** Uploads a merchant's documents waiting for SII (docs/decisions.md §15). */
export async function submitDtes(deps: WorkerDeps, data: unknown): Promise<void> {
  await submitMerchant(submissionDeps(deps), payload.parse(data).merchant_id);
}

/** One submission of a merchant at a time per worker: its documents go up together. */
export const DTE_CONCURRENCY = { localConcurrency: 4, perGroup: 1, batchSize: 1 };

export const job = defineJob({
  // docs/decisions.md §15: a merchant's documents to SII. SII down or slow is retried with backoff for
  // about a day (capped at an hour apart); the sweep picks up anything still owed after that.
  // The lease outlasts a seed, a token and an upload at their 30 s timeouts.
  queue: { name: queues.dteSubmit.name, expireInSeconds: 180, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 40, retryDelay: 2, retryBackoff: true, retryDelayMax: 3600, notify: true },
  runner: 'each',
  concurrency: DTE_CONCURRENCY,
  run: (deps: WorkerDeps, job) => submitDtes(deps, job.data),
});
