import { z } from 'zod';
import { invoiceUrls } from '../src/http/urls.js';
import { deliverRecordedEmail, EMAIL_LEASE_SECONDS } from '../src/email/deliver.js';
import { HEARTBEAT_SECONDS, queues } from '../src/queue/boss.js';
import { defineJob, isFinalAttempt } from '../src/queue/runners.js';
import type { WorkerDeps } from './worker.js';

// Old jobs outlive deploys: the payload is checked, never trusted.
const payload = z.object({ email_id: z.uuid() });

/**
 * One run of an e-mail's job. `finalAttempt`: pg-boss has no retry left, so a failure marks the
 * row failed instead of leaving it for the next run.
 */
export async function deliverEmail(deps: WorkerDeps, data: unknown, finalAttempt: boolean): Promise<void> {
  const { email_id } = payload.parse(data);
  await deliverRecordedEmail({ ...deps, urls: invoiceUrls(deps.config) }, email_id, finalAttempt);
}

export const job = defineJob({
  // Notify: an enqueued job wakes a worker on commit instead of at its next poll. The backoff
  // spreads the 11 retries over about 1.7 to 3.4 hours.
  queue: { name: queues.emailSend.name, expireInSeconds: EMAIL_LEASE_SECONDS, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 11, retryDelay: 3, retryBackoff: true, notify: true },
  runner: 'each',
  // Grouped by merchant; 16 at once over the SMTP pool's 8 connections.
  concurrency: { localConcurrency: 16, perGroup: 8, batchSize: 1 },
  run: (deps: WorkerDeps, job) => deliverEmail(deps, job.data, isFinalAttempt(job)),
});
