import type { TestApp } from './app.js';

/**
 * Sessions of the test's database inside a transaction and waiting for their client: a request
 * that called out (a gateway, the SII) from inside its transaction would be one of them while
 * the outside service is answering (docs/decisions.md §10).
 */
export async function idleInTransaction(h: TestApp): Promise<number> {
  const [row] = await h.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`;
  return row!.n;
}
