import { PgBoss } from 'pg-boss';
import type { Db, Queue, SendOptions, JobInsert } from 'pg-boss';
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

// expireInSeconds is how long one run may hold its job, longer than the work's own timeout so a
// live worker is never raced. A worker that died is found sooner, by its heartbeat (every
// HEARTBEAT_REFRESH_SECONDS while a job runs): a job whose heartbeat is HEARTBEAT_SECONDS old
// goes back to the queue at the next monitor pass, and then waits its first retry delay.
// Effect queues notify: an enqueued job wakes a worker on commit instead of at its next poll.
// The e-mail's backoff spreads its 11 retries over about 1.7 to 3.4 hours.
const HEARTBEAT_SECONDS = 10;
export const HEARTBEAT_REFRESH_SECONDS = 2;
export const MONITOR_INTERVAL_SECONDS = 2;

export const queues = {
  emailSend: { name: 'email-send', expireInSeconds: 60, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 11, retryDelay: 3, retryBackoff: true, notify: true },
  overdueSweep: { name: 'overdue-sweep', expireInSeconds: 120, retryLimit: 2, retryDelay: 30 },
  remindersSchedule: { name: 'reminders-schedule', expireInSeconds: 120, retryLimit: 2, retryDelay: 30 },
  idempotencyPurge: { name: 'idempotency-purge', expireInSeconds: 120, retryLimit: 2, retryDelay: 60 },
  // Fan-out only writes rows: quick, and safe to repeat (one delivery per event and endpoint).
  webhookFanout: { name: 'webhook-fanout', expireInSeconds: 60, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 10, retryDelay: 1, retryBackoff: true, notify: true },
  // One attempt per job; the next attempt is a new job on the schedule of docs/decisions.md §10, so
  // pg-boss's own retries only cover a worker that died or a database that blinked. The lease
  // outlasts the 15 s request timeout.
  webhookDeliver: { name: 'webhook-deliver', expireInSeconds: 30, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 20, retryDelay: 1, retryBackoff: true, notify: true },
  // One job per session at its expires_at (and a periodic sweep with no checkout_id). A run that
  // finds its session not due yet (clocks a little apart) throws, and the backoff retries it.
  checkoutExpire: { name: 'checkout-expire', expireInSeconds: 60, retryLimit: 10, retryDelay: 5, retryBackoff: true },
  // docs/decisions.md §15: a merchant's documents to SII. SII down or slow is retried with backoff for
  // about a day (capped at an hour apart); the sweep picks up anything still owed after that.
  // The lease outlasts a seed, a token and an upload at their 30 s timeouts.
  dteSubmit: { name: 'dte-submit', expireInSeconds: 180, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 40, retryDelay: 2, retryBackoff: true, retryDelayMax: 3600, notify: true },
  // One poll of an upload's state; a state still under way is a new job further on, a failed
  // call is retried like the submission.
  dteStatus: { name: 'dte-status', expireInSeconds: 120, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 40, retryDelay: 2, retryBackoff: true, retryDelayMax: 3600 },
  dteSweep: { name: 'dte-sweep', expireInSeconds: 120, retryLimit: 2, retryDelay: 30 },
  // docs/decisions.md §18: the daily purge of what is older than the retention, in short batches; a run
  // that removes a month at once takes minutes, and its heartbeat keeps it its own meanwhile.
  eventPurge: { name: 'event-purge', expireInSeconds: 3600, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 2, retryDelay: 300 },
} as const satisfies Record<string, Queue>;

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

// Held while queues are migrated, so two release processes never upgrade at once.
const QUEUE_MIGRATION_LOCK = 727_002;
// The schema pg-boss 10 created (schema version 24); pg-boss 12 migrates from 25 only.
const LEGACY_SCHEMA = 'pgboss_v10';
const FIRST_SUPPORTED_VERSION = 25;

/**
 * Creates or migrates pg-boss's schema and our queues; run by the release step. A database that a
 * pg-boss 10 release created is upgraded in place: its schema is set aside, a new one is created,
 * and every job still owed (created, retry, or active under a worker of the old release) is moved
 * across with its id, data, due time and remaining retries, in the same transaction that drops
 * the old schema.
 */
export async function migrateQueues(sql: Sql): Promise<void> {
  // pg-boss migrates with BEGIN … COMMIT in one script: that needs one connection of its own.
  const conn = await sql.reserve();
  const boss = new PgBoss({ db: executor(conn as unknown as Sql), migrate: true, supervise: false, schedule: false });
  boss.on('error', () => {});
  try {
    await conn`SELECT pg_advisory_lock(${QUEUE_MIGRATION_LOCK})`;
    const legacy = await setLegacySchemaAside(conn as unknown as Sql);
    await boss.start();
    const existing = new Map((await boss.getQueues()).map((q) => [q.name, q]));
    for (const q of Object.values(queues)) {
      if (existing.has(q.name)) {
        // heartbeatSeconds is fixed when a queue is created.
        const { heartbeatSeconds: _fixed, ...changeable } = q as Queue;
        await boss.updateQueue(q.name, changeable);
      } else await boss.createQueue(q.name, q);
    }
    if (legacy) await moveLegacyJobs(conn as unknown as Sql, boss);
  } finally {
    await boss.stop({ graceful: false, close: false }).catch(() => {});
    await conn`SELECT pg_advisory_unlock(${QUEUE_MIGRATION_LOCK})`.catch(() => {});
    conn.release();
  }
}

/** Renames a pg-boss 10 schema out of the way; true when one is waiting to be moved. */
async function setLegacySchemaAside(db: Sql): Promise<boolean> {
  const [installed] = await db<{ found: boolean }[]>`SELECT to_regclass('pgboss.version') IS NOT NULL AS found`;
  const [current] = installed?.found ? await db<{ version: number }[]>`SELECT version::int AS version FROM pgboss.version LIMIT 1` : [];
  if (current && current.version < FIRST_SUPPORTED_VERSION) {
    await db.unsafe(`ALTER SCHEMA pgboss RENAME TO ${LEGACY_SCHEMA}`);
    return true;
  }
  // A release that set the old schema aside and died before moving its jobs.
  const [aside] = await db`SELECT 1 FROM pg_namespace WHERE nspname = ${LEGACY_SCHEMA}`;
  return aside !== undefined;
}

interface LegacyJob {
  id: string;
  name: string;
  data: object | null;
  priority: number;
  retries_left: number;
  retry_delay: number;
  retry_backoff: boolean;
  start_after: Date;
  singleton_key: string | null;
  group_id: string | null;
}

// A uuid read from a job's data, or null: old jobs' data is checked, never trusted.
const dataId = (key: string) => `CASE WHEN j.data->>'${key}' ~ '^[0-9a-fA-F-]{36}$' THEN (j.data->>'${key}')::uuid END`;

/**
 * Moves what the pg-boss 10 schema still owes into pg-boss 12's and drops it, in one transaction
 * on the migration's own connection (a pool of one has no other). The old job table is locked
 * first: a request of the old release still committing its job waits, and its job is moved too.
 * A job keeps its id, data, priority, due time (an interrupted one is due now) and the runs it had
 * left, and gets the group this release gives its kind.
 */
async function moveLegacyJobs(conn: Sql, boss: PgBoss): Promise<void> {
  const names = Object.values(queues).map((q) => q.name);
  await conn.unsafe('BEGIN');
  try {
    await conn.unsafe(`LOCK TABLE ${LEGACY_SCHEMA}.job IN EXCLUSIVE MODE`);
    const owed = await conn.unsafe<LegacyJob[]>(
      `SELECT j.id, j.name, j.data, j.priority,
              greatest(j.retry_limit - j.retry_count - CASE WHEN j.state = 'retry' THEN 1 ELSE 0 END, 0) AS retries_left,
              j.retry_delay, j.retry_backoff,
              CASE WHEN j.state = 'active' THEN now() ELSE j.start_after END AS start_after, j.singleton_key,
              CASE j.name
                WHEN $2 THEN (SELECT merchant_id::text FROM emails WHERE id = ${dataId('email_id')})
                WHEN $3 THEN (SELECT merchant_id::text FROM events WHERE id = ${dataId('event_id')})
                WHEN $4 THEN (SELECT endpoint_id::text FROM webhook_deliveries WHERE id = ${dataId('delivery_id')})
              END AS group_id
         FROM ${LEGACY_SCHEMA}.job j
        WHERE j.state IN ('created', 'retry', 'active') AND j.name = ANY($1::text[])`,
      [names, queues.emailSend.name, queues.webhookFanout.name, queues.webhookDeliver.name],
    );
    for (const name of names) {
      const jobs: JobInsert[] = owed
        .filter((j) => j.name === name)
        .map((j) => ({
          id: j.id,
          data: j.data ?? {},
          priority: j.priority,
          retryLimit: j.retries_left,
          retryDelay: j.retry_delay,
          retryBackoff: j.retry_backoff,
          startAfter: j.start_after,
          ...(j.singleton_key ? { singletonKey: j.singleton_key } : {}),
          ...(j.group_id ? { group: { id: j.group_id } } : {}),
        }));
      for (let i = 0; i < jobs.length; i += 500) await boss.insert(name, jobs.slice(i, i + 500), { db: executor(conn) });
    }
    await conn.unsafe(`DROP SCHEMA ${LEGACY_SCHEMA} CASCADE`);
    await conn.unsafe('COMMIT');
  } catch (err) {
    await conn.unsafe('ROLLBACK').catch(() => {});
    throw err;
  }
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
