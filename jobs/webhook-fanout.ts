import { z } from 'zod';
import { fanOutEvents } from '../src/webhooks/service.js';
import type { WorkerDeps } from './worker.js';

// Old jobs outlive deploys: the payload is checked, never trusted.
const payload = z.object({ event_id: z.uuid() });

/** One delivery per subscribed endpoint of each event, each with its first attempt queued. */
export async function fanOut(deps: WorkerDeps, data: unknown[]): Promise<number> {
  return fanOutEvents(
    deps.sql,
    deps,
    data.map((d) => payload.parse(d).event_id),
  );
}
