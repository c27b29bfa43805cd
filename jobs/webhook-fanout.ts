import { z } from 'zod';
import { fanOutEvent } from '../src/webhooks/service.js';
import type { WorkerDeps } from './worker.js';

// Old jobs outlive deploys: the payload is checked, never trusted.
const payload = z.object({ event_id: z.uuid() });

/** One delivery per subscribed endpoint, each with its first attempt queued. */
export async function fanOut(deps: WorkerDeps, data: unknown): Promise<number> {
  const { event_id } = payload.parse(data);
  return fanOutEvent(deps.sql, deps, event_id);
}
