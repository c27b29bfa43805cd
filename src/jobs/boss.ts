import PgBoss from 'pg-boss';
import type { Queryable, Sql } from '../db/client.js';

const TRANSACTION_SCRIPT = /^\s*BEGIN\s*;([\s\S]*);\s*COMMIT\s*;\s*$/i;

/**
 * pg-boss speaks `executeSql(text, values)`; this seam lets it run on our postgres.js pool or,
 * for `send`, inside the caller's transaction: a rolled-back request leaves no job behind.
 */
export function executor(db: Queryable): PgBoss.Db {
  return {
    async executeSql(text: string, values?: unknown[]) {
      // pg-boss leaves optional values undefined (node-pg sends NULL); postgres.js serialises
      // objects itself from the parameter types the server describes (jsonb), so they pass as is.
      const params = (values ?? []).map((v) => (v === undefined ? null : v));
      // Its batch insert (the one cron schedules use) sends JSON already serialised for a json
      // parameter; postgres.js would encode that string again into a JSON scalar.
      if (typeof params[0] === 'string' && text.includes('json_to_recordset($1)')) params[0] = JSON.parse(params[0]);
      // Maintenance (expiring leases, archiving) is one `BEGIN; …; COMMIT;` script; postgres.js
      // refuses BEGIN on a pooled connection, so the script's body runs in a transaction of the
      // pool's own. (Not on a reserved connection: a reservation queued while PostgreSQL drops
      // connections can wait forever, porsager/postgres#1195, and maintenance with it.)
      const script = TRANSACTION_SCRIPT.exec(text);
      if (script && 'begin' in db) {
        const rows = await db.begin((tx) => tx.unsafe(script[1]!, params as never[]));
        return { rows: [...rows] };
      }
      const rows = await db.unsafe(text, params as never[]);
      return { rows: [...rows] };
    },
  };
}

// Each number is how long one run may hold its job before pg-boss hands it to another worker:
// longer than the work's own timeout, so a live worker is never raced, short enough that a
// job held by a dead worker comes back within about a minute.
// pg-boss treats a lease that ran out like a failure: the job waits its first retry delay
// before it runs again. The e-mail's first delay is therefore short (5–10 s) and the backoff
// does the rest: 11 retries spread over about 3 to 6 hours.
export const queues = {
  emailSend: { name: 'email-send', expireInSeconds: 60, retryLimit: 11, retryDelay: 5, retryBackoff: true },
  overdueSweep: { name: 'overdue-sweep', expireInSeconds: 120, retryLimit: 2, retryDelay: 30 },
  remindersSchedule: { name: 'reminders-schedule', expireInSeconds: 120, retryLimit: 2, retryDelay: 30 },
  idempotencyPurge: { name: 'idempotency-purge', expireInSeconds: 120, retryLimit: 2, retryDelay: 60 },
  // Fan-out only writes rows: quick, and safe to repeat (one delivery per event and endpoint).
  webhookFanout: { name: 'webhook-fanout', expireInSeconds: 60, retryLimit: 10, retryDelay: 5, retryBackoff: true },
  // One attempt per job; the next attempt is a new job on the schedule of decisions §10, so
  // pg-boss's own retries only cover a worker that died or a database that blinked. The lease
  // outlasts the 15 s request timeout.
  webhookDeliver: { name: 'webhook-deliver', expireInSeconds: 30, retryLimit: 20, retryDelay: 5, retryBackoff: true },
  // One job per session at its expires_at (and a periodic sweep with no checkout_id). A run that
  // finds its session not due yet (clocks a little apart) throws, and the backoff retries it.
  checkoutExpire: { name: 'checkout-expire', expireInSeconds: 60, retryLimit: 10, retryDelay: 5, retryBackoff: true },
} as const satisfies Record<string, PgBoss.Queue>;

export type QueueName = (typeof queues)[keyof typeof queues]['name'];

export interface BossOptions {
  /** Only the worker process keeps the maintenance and cron timers. */
  worker: boolean;
}

// How often a worker looks for leases that ran out (one worker per interval does the work, the
// others only ask). pg-boss's default, 120 s, would leave a dead worker's job stranded for up to
// two minutes after its lease: decisions §5 wants it back within about a minute.
const MAINTENANCE_INTERVAL_SECONDS = 10;

export function createBoss(sql: Sql, opts: BossOptions): PgBoss {
  return new PgBoss({
    db: executor(sql),
    migrate: false,
    supervise: opts.worker,
    schedule: opts.worker,
    maintenanceIntervalSeconds: MAINTENANCE_INTERVAL_SECONDS,
  });
}

/** Creates pg-boss's schema and our queues; run by the migration step under its lock. */
export async function migrateQueues(sql: Sql): Promise<void> {
  // pg-boss migrates with BEGIN … COMMIT in one script: that needs one connection of its own.
  const conn = await sql.reserve();
  const boss = new PgBoss({ db: executor(conn as unknown as Sql), migrate: true, supervise: false, schedule: false });
  boss.on('error', () => {});
  try {
    await boss.start();
    const existing = new Set((await boss.getQueues()).map((q) => q.name));
    for (const q of Object.values(queues)) {
      if (existing.has(q.name)) await boss.updateQueue(q.name, q);
      else await boss.createQueue(q.name, q);
    }
  } finally {
    await boss.stop({ graceful: false, close: false });
    conn.release();
  }
}

/** Enqueues inside the caller's transaction: the job exists exactly when the change commits. */
export async function enqueue(
  boss: PgBoss,
  db: Queryable,
  queue: QueueName,
  data: object,
  options: Omit<PgBoss.SendOptions, 'db'> = {},
): Promise<string | null> {
  return boss.send(queue, data, { ...options, db: executor(db) });
}
