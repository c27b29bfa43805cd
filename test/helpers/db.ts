import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import { createSql, type Sql } from '../../src/db/client.js';
import { migrate, migrationFiles } from '../../src/migrate.js';
import { jobQueues } from '../../jobs/index.js';

// Any constant: it only serialises template creation between test processes.
const TEMPLATE_LOCK = 727_002;

/**
 * The server tests run against: DATABASE_URL when given (tests create their own databases on it),
 * otherwise the embedded server that `npm test` started and named in TEST_DATABASE_URL.
 */
export function serverUrl(): string {
  const given = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  if (!given) throw new Error('No database server: run the suite with `npm test`, or set DATABASE_URL.');
  return given;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

async function templateName(): Promise<string> {
  const hash = createHash('sha256');
  for (const f of await migrationFiles()) hash.update(f).update(await readFile(path.resolve('sql', f)));
  // The queues' options (declared by the job files) are part of the schema too.
  hash.update(JSON.stringify(jobQueues));
  return `invoicing_tpl_${hash.digest('hex').slice(0, 12)}`;
}

/** A migrated template database, created once per schema version. */
async function ensureTemplate(admin: postgres.Sql, base: string): Promise<string> {
  const name = await templateName();
  // A session lock on one reserved connection: CREATE DATABASE cannot run inside a transaction.
  const conn = await admin.reserve();
  try {
    await conn`SELECT pg_advisory_lock(${TEMPLATE_LOCK})`;
    const [exists] = await conn`SELECT 1 FROM pg_database WHERE datname = ${name}`;
    if (!exists) {
      const building = `${name}_build_${randomBytes(3).toString('hex')}`;
      await conn.unsafe(`CREATE DATABASE "${building}"`);
      // A pool like production's: migrations must not assume a single connection.
      const sql = createSql(withDatabase(base, building), { max: 4 });
      try {
        await migrate(sql, jobQueues);
      } finally {
        await sql.end();
      }
      await conn.unsafe(`ALTER DATABASE "${building}" RENAME TO "${name}"`);
    }
  } finally {
    await conn`SELECT pg_advisory_unlock(${TEMPLATE_LOCK})`.catch(() => {});
    conn.release();
  }
  return name;
}

export interface TestDatabase {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

/** A fresh, migrated database of this test's own, dropped when `drop` is called. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const base = serverUrl();
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  const template = await ensureTemplate(admin, base);
  const name = `invoicing_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  const url = withDatabase(base, name);
  const sql = createSql(url, { max: 4, application: 'invoicing-test' });
  return {
    url,
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await admin.end();
    },
  };
}
