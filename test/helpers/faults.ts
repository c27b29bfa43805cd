import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort, startEmbedded, type EmbeddedDb } from '../../src/db/embedded.js';
import { createSql, type Sql } from '../../src/db/client.js';
import { migrate } from '../../src/migrate.js';
import { jobQueues } from '../../jobs/index.js';

export interface PrivatePostgres {
  url: string;
  /** The test's own pool: it reconnects by itself once the server is back. */
  sql: Sql;
  /** A fast shutdown (SIGINT): open sessions are terminated, new connections refused. */
  stop(): Promise<void>;
  /** The same server again: same data directory, same port. */
  start(): Promise<void>;
}

/**
 * A PostgreSQL server of this test alone, migrated, which the test may stop and start: the
 * shared server the other test files use must never go down under them. Removed with its data
 * when the test ends (registered first, so it runs after the processes that use it are gone).
 */
export async function startPrivatePostgres(t: { teardown(fn: () => unknown): void }): Promise<PrivatePostgres> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'invoicing-faults-'));
  // As root, src/db/embedded runs the server as the postgres user, which must reach the folder.
  await chmod(dir, 0o755);
  const port = await freePort();
  let server: EmbeddedDb | null = await startEmbedded(dir, port);
  const url = server.url;
  const sql = createSql(url, { max: 4, application: 'invoicing-test' });
  t.teardown(async () => {
    await sql.end({ timeout: 1 }).catch(() => {});
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });
  await migrate(sql, jobQueues);
  return {
    url,
    sql,
    async stop() {
      await server?.stop();
      server = null;
    },
    async start() {
      server = await startEmbedded(dir, port);
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
