// Apart from src/queue/boss.ts because only the release step runs it: pg-boss 12 cannot migrate
// the schema pg-boss 10 made (this project's releases before Node 24), see docs/processes.md.
import { PgBoss } from 'pg-boss';
import type { JobInsert, Queue } from 'pg-boss';
import type { Sql } from '../db/client.js';
import { executor, queues } from './boss.js';

// Held while queues are migrated, so two release processes never upgrade at once.
const QUEUE_MIGRATION_LOCK = 727_002;
// The schema pg-boss 10 created (schema version 24); pg-boss 12 migrates from 25 only.
const LEGACY_SCHEMA = 'pgboss_v10';
const FIRST_SUPPORTED_VERSION = 25;

/**
 * Creates or migrates pg-boss's schema and the queues `definitions` declares (every job of jobs/);
 * run by the release step. A database that a pg-boss 10 release created is upgraded in place: its
 * schema is set aside, a new one is created, and every job still owed (created, retry, or active
 * under a worker of the old release) is moved across with its id, data, due time and remaining
 * retries, in the same transaction that drops the old schema.
 */
export async function migrateQueues(sql: Sql, definitions: readonly Queue[]): Promise<void> {
  // pg-boss migrates with BEGIN … COMMIT in one script: that needs one connection of its own.
  const conn = await sql.reserve();
  const boss = new PgBoss({ db: executor(conn as unknown as Sql), migrate: true, supervise: false, schedule: false });
  boss.on('error', () => {});
  try {
    await conn`SELECT pg_advisory_lock(${QUEUE_MIGRATION_LOCK})`;
    const legacy = await setLegacySchemaAside(conn as unknown as Sql);
    await boss.start();
    const existing = new Map((await boss.getQueues()).map((q) => [q.name, q]));
    for (const q of definitions) {
      if (existing.has(q.name)) {
        // heartbeatSeconds is fixed when a queue is created.
        const { heartbeatSeconds: _fixed, ...changeable } = q;
        await boss.updateQueue(q.name, changeable);
      } else await boss.createQueue(q.name, q);
    }
    if (legacy) await moveLegacyJobs(conn as unknown as Sql, boss, definitions.map((q) => q.name));
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
async function moveLegacyJobs(conn: Sql, boss: PgBoss, names: string[]): Promise<void> {
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
