import { PgBoss } from 'pg-boss';
import type { Db, SendOptions, JobInsert } from 'pg-boss';
import type { Queryable, Sql } from '../db/client.js';

const TRANSACTION_SCRIPT = /^\s*BEGIN\s*;([\s\S]*);\s*COMMIT\s*;\s*$/i;

/**
 * postgres.js answers a script of several statements with one result per statement; pg-boss
 * reads its markers (lock rows, cursors) from the rows of every statement, as node-pg gives them.
 */
function everyRow(result: readonly unknown[]): unknown[] {
  return result.length > 0 && result.every((r) => Array.isArray(r)) ? (result as unknown[][]).flat() : [...result];
}

/**
 * pg-boss speaks `executeSql(text, values)`; this seam lets it run on our postgres.js pool or,
 * for `send`, inside the caller's transaction: a rolled-back request leaves no job behind.
 * On the pool it also listens: pg-boss wakes its workers on NOTIFY through `listen`; with
 * `onJobsQueued` a queue's notification goes there instead of to pg-boss's own dispatch.
 */
export function executor(db: Queryable, onJobsQueued?: (queue: string) => void): Db {
  const adapter: Db = {
    async executeSql(text: string, values?: unknown[]) {
      // pg-boss leaves optional values undefined (node-pg sends NULL); postgres.js serialises
      // objects itself from the parameter types the server describes (jsonb), so they pass as is.
      const params = (values ?? []).map((v) => (v === undefined ? null : v));
      // Its batch insert (the one cron schedules use) sends JSON already serialised for a json
      // parameter; postgres.js would encode that string again into a JSON scalar.
      if (typeof params[0] === 'string' && text.includes('json_to_recordset($1)')) params[0] = JSON.parse(params[0]);
      // Maintenance and queue changes are `BEGIN; …; COMMIT;` scripts; postgres.js refuses BEGIN
      // on a pooled connection, so the script's body runs in a transaction of the pool's own.
      // (Not on a reserved connection: a reservation queued while PostgreSQL drops connections
      // can wait forever, porsager/postgres#1195, and maintenance with it.)
      const script = TRANSACTION_SCRIPT.exec(text);
      if (script && 'begin' in db) {
        return { rows: everyRow(await db.begin((tx) => tx.unsafe(script[1]!, params as never[]))) };
      }
      // Prepared once per connection: an unprepared statement with parameters costs postgres.js two
      // round trips (it asks the server for the parameters' types before binding them), and every
      // fetch, completion and enqueue is one. A statement without parameters goes as a simple query.
      return { rows: everyRow(await db.unsafe(text, params as never[], { prepare: true })) };
    },
  };
  if ('listen' in db) {
    // postgres.js keeps LISTEN on a connection of its own, outside the pool, and listens again
    // after every reconnect; each (re)subscription lets pg-boss fetch what it may have missed.
    adapter.listen = async (channel: string, onNotification: (payload: string) => void, onReconnect: () => void) => {
      const sub = await (db as Sql).listen(channel, onJobsQueued ?? onNotification, onReconnect);
      return { close: () => sub.unlisten() };
    };
  }
  return adapter;
}

/**
 * Wakes one idle fetch loop of the queue. pg-boss's own dispatch wakes every idle loop of a queue
 * on each notification: with tens of loops per queue, a burst of enqueued jobs cost ten empty
 * fetches per job (measured: 121,000 fetches for 9,500 jobs). One loop is enough: a loop that
 * finds work wakes the next (workers call this as each batch starts), so a burst spreads over as
 * many loops as it has jobs, and a lone job costs one fetch.
 */
export function wakeIdleLoop(boss: PgBoss, queue: string): void {
  const idle = boss.getWipData().find((w) => w.name === queue && w.count === 0 && w.state === 'active');
  if (idle) boss.notifyWorker(idle.id);
}

// A queue's expireInSeconds (declared with its job in jobs/) is how long one run may hold its job,
// longer than the work's own timeout so a live worker is never raced. A worker that died is found
// sooner, by its heartbeat (every HEARTBEAT_REFRESH_SECONDS while a job runs): a job whose
// heartbeat is HEARTBEAT_SECONDS old goes back to the queue at the next monitor pass, and then
// waits its first retry delay.
export const HEARTBEAT_SECONDS = 10;
export const HEARTBEAT_REFRESH_SECONDS = 2;
export const MONITOR_INTERVAL_SECONDS = 2;

// The names the web process enqueues by. Each queue's options, runner and schedule are declared
// with its job, one file in jobs/; the names stay here because src never imports jobs/.
export const queues = {
  emailSend: { name: 'email-send' },
  overdueSweep: { name: 'overdue-sweep' },
  remindersSchedule: { name: 'reminders-schedule' },
  idempotencyPurge: { name: 'idempotency-purge' },
  webhookFanout: { name: 'webhook-fanout' },
  webhookDeliver: { name: 'webhook-deliver' },
  checkoutExpire: { name: 'checkout-expire' },
  dteSubmit: { name: 'dte-submit' },
  dteStatus: { name: 'dte-status' },
  dteSweep: { name: 'dte-sweep' },
  eventPurge: { name: 'event-purge' },
} as const;

export type QueueName = (typeof queues)[keyof typeof queues]['name'];

export interface BossOptions {
  /** Only the worker process keeps the maintenance and cron timers, and listens. */
  worker: boolean;
}

export function createBoss(sql: Sql, opts: BossOptions): PgBoss {
  const boss: PgBoss = new PgBoss({
    db: executor(sql, (queue) => wakeIdleLoop(boss, queue)),
    migrate: false,
    supervise: opts.worker,
    schedule: opts.worker,
    useListenNotify: opts.worker,
    // Heartbeats and leases are checked this often, so a dead worker's job is back within
    // HEARTBEAT_SECONDS + this + its first retry delay.
    monitorIntervalSeconds: MONITOR_INTERVAL_SECONDS,
    superviseIntervalSeconds: MONITOR_INTERVAL_SECONDS,
  });
  return boss;
}

/** Enqueues inside the caller's transaction: the job exists exactly when the change commits. */
export async function enqueue(
  boss: PgBoss,
  db: Queryable,
  queue: QueueName,
  data: object,
  options: Omit<SendOptions, 'db'> = {},
): Promise<string | null> {
  return boss.send(queue, data, { ...options, db: executor(db) });
}

/** enqueue for many jobs of one queue in one statement, inside the caller's transaction. */
export async function enqueueMany(boss: PgBoss, db: Queryable, queue: QueueName, jobs: JobInsert[]): Promise<void> {
  if (jobs.length > 0) await boss.insert(queue, jobs, { db: executor(db) });
}
