import { z } from 'zod';
import { invoiceUrls } from '../src/http/urls.js';
import { pollSubmission, submitMerchant, sweepSubmissions, type SubmissionDeps } from '../src/dte/submission.js';
import type { WorkerDeps } from './worker.js';

// Old jobs outlive deploys: the payload is checked, never trusted.
const submitPayload = z.object({ merchant_id: z.uuid() });
const statusPayload = z.object({ submission_id: z.uuid(), poll: z.number().int().min(0).default(0) });

function submissionDeps(deps: WorkerDeps): SubmissionDeps {
  return { sql: deps.sql, boss: deps.boss, secrets: deps.secrets, config: deps.config, urls: invoiceUrls(deps.config) };
}

/** Uploads a merchant's documents waiting for SII (docs/decisions.md §15). */
export async function submitDtes(deps: WorkerDeps, data: unknown): Promise<void> {
  await submitMerchant(submissionDeps(deps), submitPayload.parse(data).merchant_id);
}

/** Polls one upload's state at SII. */
export async function pollDteStatus(deps: WorkerDeps, data: unknown): Promise<void> {
  const { submission_id, poll } = statusPayload.parse(data);
  await pollSubmission(submissionDeps(deps), submission_id, poll);
}

/** Queues whatever is still owed to SII. */
export async function sweepDtes(deps: WorkerDeps): Promise<void> {
  await sweepSubmissions(submissionDeps(deps));
}
