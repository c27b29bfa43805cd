// The request transaction sends its trailing statements with the COMMIT: that may change nothing
// of what commits and what rolls back.
import t from 'tap';
import { createTestDatabase } from './helpers/db.js';
import { isPipelined, pipelinedTransaction } from '../src/db/transaction.js';

t.test('pipelinedTransaction', async (t) => {
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  const { sql } = db;
  await sql`CREATE TABLE notes (n int PRIMARY KEY)`;
  const notes = async () => (await sql<{ n: number }[]>`SELECT n FROM notes ORDER BY n`).map((r) => r.n);

  t.test('the first statement runs inside the transaction', async (t) => {
    await sql`TRUNCATE notes`;
    const err = await pipelinedTransaction(sql, async (tx) => {
      const [row] = await tx<{ open: boolean }[]>`SELECT now() = statement_timestamp() AS open`;
      t.equal(row?.open, false, 'now() is the transaction start, not the statement start');
      await tx`INSERT INTO notes VALUES (1)`;
      throw new Error('stop');
    }).catch((e: Error) => e);
    t.equal(err.message, 'stop');
    t.same(await notes(), [], 'rolled back');
  });

  t.test('statements sent with the COMMIT are committed with it', async (t) => {
    await sql`TRUNCATE notes`;
    const result = await pipelinedTransaction(sql, async (tx) => {
      await tx`INSERT INTO notes VALUES (1)`;
      tx.commitWith(tx`INSERT INTO notes VALUES (2)`);
      tx.commitWith(tx`INSERT INTO notes VALUES (3)`);
      return 'done';
    });
    t.equal(result, 'done');
    t.same(await notes(), [1, 2, 3]);
  });

  t.test('a failing statement sent with the COMMIT rolls everything back and is thrown', async (t) => {
    await sql`TRUNCATE notes`;
    const err = await pipelinedTransaction(sql, async (tx) => {
      await tx`INSERT INTO notes VALUES (1)`;
      tx.commitWith(tx`INSERT INTO notes VALUES (1)`);
    }).catch((e: { code?: string }) => e);
    t.equal((err as { code?: string } | undefined)?.code, '23505', 'the unique violation itself');
    t.same(await notes(), []);
  });

  t.test('a statement that fails unawaited is an error, not a silent rollback', async (t) => {
    await sql`TRUNCATE notes`;
    const err = await pipelinedTransaction(sql, async (tx) => {
      await tx`INSERT INTO notes VALUES (1)`;
      tx`INSERT INTO notes VALUES (1)`.execute().catch(() => {});
      await new Promise((r) => setTimeout(r, 50));
    }).catch((e: Error) => e);
    t.ok(err instanceof Error, 'rejected');
    t.same(await notes(), []);
  });

  t.test('inside a savepoint nothing is held for the COMMIT; the savepoint rolls back alone', async (t) => {
    await sql`TRUNCATE notes`;
    await pipelinedTransaction(sql, async (tx) => {
      await tx`INSERT INTO notes VALUES (1)`;
      tx.commitWith(tx`INSERT INTO notes VALUES (2)`);
      await tx
        .savepoint(async (sp) => {
          t.equal(isPipelined(sp), false, 'a savepoint handle cannot defer to the COMMIT');
          await sp`INSERT INTO notes VALUES (3)`;
          throw new Error('this item fails');
        })
        .catch(() => {});
      await tx.savepoint(async (sp) => {
        await sp`INSERT INTO notes VALUES (4)`;
      });
    });
    t.same(await notes(), [1, 2, 4]);
  });

  t.test('a connection that dies mid-transaction fails that transaction only', async (t) => {
    const err = await pipelinedTransaction(sql, async (tx) => {
      const [row] = await tx<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      await db.sql.begin((other) => other`SELECT pg_terminate_backend(${row!.pid})`).catch(() => null);
      await new Promise((r) => setTimeout(r, 100));
      await tx`SELECT 1`;
    }).catch((e: { code?: string }) => e);
    t.equal((err as { code?: string } | undefined)?.code, 'CONNECTION_CLOSED');
    const after = await Promise.all(Array.from({ length: 8 }, (_, i) => sql<{ n: number }[]>`SELECT ${i}::int AS n`.then(() => 'ok', (e: { code?: string }) => e.code)));
    t.same(after, Array(8).fill('ok'), 'every later query is served');
    for (let i = 0; i < 8; i++) await sql`SELECT 1`;
    t.pass('and one after another');
  });

  t.test('the connection goes back to the pool clean', async (t) => {
    // More transactions than the pool has connections, failing and succeeding alternately.
    await sql`TRUNCATE notes`;
    const runs = Array.from({ length: 20 }, (_, i) =>
      pipelinedTransaction(sql, async (tx) => {
        await tx`INSERT INTO notes VALUES (${i})`;
        if (i % 2) throw new Error('odd');
      }).catch(() => null),
    );
    await Promise.all(runs);
    t.same(
      await notes(),
      Array.from({ length: 10 }, (_, i) => i * 2),
    );
    const [row] = await sql<{ open: number }[]>`
      SELECT count(*)::int AS open FROM pg_stat_activity
       WHERE datname = current_database() AND state LIKE 'idle in transaction%'`;
    t.equal(row?.open, 0, 'no connection left inside a transaction');
  });
});
