import { clock } from '../clock.js';
import type { Sql } from '../db/client.js';
import { deleteDeliveriesBefore, deleteEmailsBefore, deleteEventsBefore } from './queries.js';

const DAY_MS = 24 * 60 * 60 * 1000;
// Small enough that a batch (a delivery's attempts come with it) is a few milliseconds of locks,
// large enough that a month of a busy platform's rows goes in minutes.
export const PURGE_BATCH = 2000;

export interface PurgeResult {
  deliveries: number;
  events: number;
  emails: number;
}

/**
 * Removes the events, webhook deliveries with their attempt logs, and e-mail records older than
 * `retentionDays` (docs/decisions.md §18), a batch at a time until none is left. Invoices, notes,
 * payments, their PDFs and the signed DTEs are never touched: the law keeps tax documents six years.
 * A pause between batches leaves the database to the requests and the worker.
 */
export async function purgeExpiredEvents(sql: Sql, retentionDays: number, opts: { batch?: number; pauseMs?: number } = {}): Promise<PurgeResult> {
  const batch = opts.batch ?? PURGE_BATCH;
  const pause = opts.pauseMs ?? 20;
  const now = clock.now();
  const cutoff = new Date(now.getTime() - retentionDays * DAY_MS);
  const result: PurgeResult = { deliveries: 0, events: 0, emails: 0 };
  const drain = async (step: () => Promise<number>, key: keyof PurgeResult) => {
    for (;;) {
      const n = await step();
      result[key] += n;
      if (n < batch) return;
      await new Promise((r) => setTimeout(r, pause));
    }
  };
  await drain(() => deleteDeliveriesBefore(sql, cutoff, now, batch), 'deliveries');
  await drain(() => deleteEventsBefore(sql, cutoff, batch), 'events');
  await drain(() => deleteEmailsBefore(sql, cutoff, now, batch), 'emails');
  return result;
}
