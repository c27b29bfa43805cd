import { z } from 'zod';
import { attemptDeliveries, transactOn, type AttemptRef } from '../src/webhooks/delivery.js';
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
