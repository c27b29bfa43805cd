import type postgres from 'postgres';
import type { Queryable, Sql, Tx } from './client.js';

// Statements of any row shape are queued together; PendingQuery is invariant in its rows (values()
// returns them), so no narrower type accepts every statement.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Pending = postgres.PendingQuery<any>;

/** A transaction whose last statements can travel with its COMMIT. */
export type PipelinedTx = Tx & {
  /**
   * Queues a statement to be sent with the COMMIT, so that it costs no round trip of its own;
   * should it fail, the transaction is rolled back and its error is thrown.
   */
  commitWith(statement: Pending): void;
};

/** False inside a savepoint too: postgres.js hands its callback a handle of its own. */
export function isPipelined(db: Queryable): db is PipelinedTx {
  return typeof (db as Partial<PipelinedTx>).commitWith === 'function';
}

/**
 * postgres.js's `begin` whose last statements travel with the COMMIT: a request whose answer
 * and event are written last waits for one round trip instead of three. (BEGIN itself still
 * waits for its answer: sending it with the first statement needs a reserved connection, and a
 * reservation postgres.js 3.4.9 queues can wait forever when PostgreSQL drops the connection it
 * waits for, porsager/postgres#1195.)
 */
export async function pipelinedTransaction<T>(sql: Sql, fn: (tx: PipelinedTx) => Promise<T>): Promise<T> {
  const trailing: Pending[] = [];
  const result = await sql.begin(async (tx) => {
    const value = await fn(Object.assign(tx, { commitWith: (statement: Pending) => void trailing.push(statement) }));
    // Sent now, ahead of the COMMIT that `begin` sends once this callback returns.
    for (const statement of trailing) statement.execute();
    return value;
  });
  // A trailing statement that failed aborted the transaction, and its COMMIT answered ROLLBACK,
  // which `begin` does not check: their own outcome decides.
  for (const statement of trailing) await statement;
  return result as T;
}
