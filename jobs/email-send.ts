import { z } from 'zod';
import { invoiceUrls } from '../src/http/urls.js';
import { deliverRecordedEmail } from '../src/email/deliver.js';
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
