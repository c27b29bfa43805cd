import { z } from 'zod';
import { attemptDelivery, transactOn } from '../src/webhooks/delivery.js';
import type { WorkerDeps } from './worker.js';

const payload = z.object({ delivery_id: z.uuid(), attempt: z.number().int().positive() });

/**
 * One attempt of one delivery. A worker that dies mid-attempt records nothing: the job comes
 * back when its lease runs out and makes the same attempt again, so no attempt is lost.
 */
export async function deliverWebhook(deps: WorkerDeps, data: unknown): Promise<void> {
  const { delivery_id, attempt } = payload.parse(data);
  await attemptDelivery(deps.sql, transactOn(deps.sql), deps, delivery_id, attempt);
}
