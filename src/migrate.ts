import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Sql } from './db/client.js';
import { sqlDir as SQL_DIR } from './paths.js';
import type { Queue } from 'pg-boss';
import { migrateQueues } from './queue/boss-upgrade.js';

// Any constant works; it only has to be the same for every process that migrates.
const MIGRATION_LOCK = 727_001;

export async function migrationFiles(): Promise<string[]> {
  return (await readdir(SQL_DIR)).filter((f) => /^\d{3}_.*\.sql$/.test(f)).sort();
}

/**
 * Applies every pending forward-only migration, one process at a time, then creates or updates
 * `queues` (jobs/index.ts's jobQueues, passed in by the process entry so that src/db never reaches
 * jobs/). Returns the names applied.
 */
export async function migrate(sql: Sql, queues: readonly Queue[]): Promise<string[]> {
  const applied: string[] = [];
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`;
    const done = new Set((await tx<{ name: string }[]>`SELECT name FROM schema_migrations`).map((r) => r.name));
    for (const file of await migrationFiles()) {
      if (done.has(file)) continue;
      await tx.unsafe(await readFile(path.join(SQL_DIR, file), 'utf8'));
      await tx`INSERT INTO schema_migrations (name) VALUES (${file})`;
      applied.push(file);
    }
  });
  await migrateQueues(sql, queues);
  return applied;
}

/** True when every migration file has been applied (readiness). */
export async function migrationsCurrent(sql: Sql): Promise<boolean> {
  const files = await migrationFiles();
  const rows = await sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM schema_migrations WHERE name = ANY(${files}::text[])`;
  return rows[0]?.n === files.length;
}
