// The rows that grow with every event, removed a batch at a time once older than the retention
// (docs/decisions.md §18). Each statement is its own short transaction over at most `limit` rows, takes
// only the locks of the rows it removes, and skips a row someone holds (SKIP LOCKED): the purge
// never waits on a request or the worker, and they wait on it for one batch at most.
import type { Sql } from '../db/client.js';

/** Deliveries (and, by cascade, their attempt logs) created before `cutoff`, except one an attempt holds now. */
export async function deleteDeliveriesBefore(sql: Sql, cutoff: Date, now: Date, limit: number): Promise<number> {
  const res = await sql`
    DELETE FROM webhook_deliveries
     WHERE id IN (SELECT id FROM webhook_deliveries
                   WHERE created_at < ${cutoff}
                     AND (leased_until IS NULL OR leased_until < ${now})
                   ORDER BY created_at
                   LIMIT ${limit}
                   FOR UPDATE SKIP LOCKED)`;
  return res.count;
}

/** Events created before `cutoff`. */
export async function deleteEventsBefore(sql: Sql, cutoff: Date, limit: number): Promise<number> {
  const res = await sql`
    DELETE FROM events
     WHERE id IN (SELECT id FROM events
                   WHERE created_at < ${cutoff}
                   ORDER BY created_at
                   LIMIT ${limit}
                   FOR UPDATE SKIP LOCKED)`;
  return res.count;
}

/** E-mail records created before `cutoff`, except one a send holds now. */
export async function deleteEmailsBefore(sql: Sql, cutoff: Date, now: Date, limit: number): Promise<number> {
  const res = await sql`
    DELETE FROM emails
     WHERE id IN (SELECT id FROM emails
                   WHERE created_at < ${cutoff}
                     AND (sending_until IS NULL OR sending_until < ${now})
                   ORDER BY created_at
                   LIMIT ${limit}
                   FOR UPDATE SKIP LOCKED)`;
  return res.count;
}
