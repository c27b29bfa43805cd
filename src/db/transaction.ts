import type postgres from 'postgres';
import type { Queryable, Sql, Tx } from './client.js';

type Reserved = postgres.ReservedSql<Record<string, never>>;
// Statements of any row shape are queued together.
type Pending = postgres.PendingQuery<any>;

/** A transaction whose last statements can travel with its COMMIT. */
export type PipelinedTx = Tx & {
  /**
   * Queues a statement to be sent with the end of the transaction (or of the savepoint it is
   * in), so it costs no round trip of its own; its failure rolls that back.
   */
  commitWith(statement: Pending): void;
};

export function isPipelined(db: Queryable): db is PipelinedTx {
  return typeof (db as Partial<PipelinedTx>).commitWith === 'function';
}

/** Sends the queued statements and then `end`, in one write; the first failure is thrown. */
async function endWith(queued: Pending[], end: Pending): Promise<void> {
  for (const statement of queued) statement.execute();
  end.execute();
  // Answers arrive in the order sent; the first failure among them is the one to report.
  const settled = await Promise.allSettled([...queued, end]);
  for (const outcome of settled) if (outcome.status === 'rejected') throw outcome.reason;
  const ended = settled.at(-1) as PromiseFulfilledResult<postgres.RowList<postgres.Row[]>>;
  // COMMIT of a transaction that a statement aborted answers ROLLBACK instead of failing.
  if (ended.value.command === 'ROLLBACK') throw new Error('the transaction was rolled back: one of its statements failed unawaited');
}

/**
 * A transaction on a reserved connection whose BEGIN travels with its first statement, and
 * whose last statements can travel with its COMMIT: a request that would wait for BEGIN, then
 * for each statement, then for COMMIT, waits for two round trips fewer. postgres.js's own
 * `begin` waits for BEGIN before running the callback.
 *
 * Every statement of `fn` must be awaited or passed to `commitWith`: one that fails unawaited
 * aborts the transaction, and its COMMIT then answers ROLLBACK, which is thrown as an error
 * rather than reported as success.
 */
export async function pipelinedTransaction<T>(sql: Sql, fn: (tx: PipelinedTx) => Promise<T>): Promise<T> {
  const conn: Reserved = await sql.reserve();
  try {
    const begun = conn`BEGIN`.execute();
    begun.catch(() => {});
    const scopes: Pending[][] = [[]];
    let result: T;
    try {
      result = await fn(asTransaction(conn, scopes));
      await begun;
    } catch (err) {
      await conn`ROLLBACK`.catch(() => {});
      throw err;
    }
    await endWith(scopes[0]!, conn`COMMIT`);
    return result;
  } finally {
    conn.release();
  }
}

/**
 * The reserved connection with postgres.js's savepoint interface, run as SAVEPOINT statements;
 * `scopes` holds the statements queued for the end of the transaction and of each open savepoint.
 */
function asTransaction(conn: Reserved, scopes: Pending[][]): PipelinedTx {
  let savepoints = 0;
  const savepoint = async <T>(fn: (sp: Tx) => Promise<T>): Promise<T> => {
    const name = `s${savepoints++}`;
    await conn.unsafe(`SAVEPOINT ${name}`);
    scopes.push([]);
    try {
      const result = await fn(tx);
      await endWith(scopes.at(-1)!, conn.unsafe(`RELEASE SAVEPOINT ${name}`));
      return result;
    } catch (err) {
      await conn.unsafe(`ROLLBACK TO SAVEPOINT ${name}`);
      throw err;
    } finally {
      scopes.pop();
    }
  };
  const commitWith = (statement: Pending) => {
    scopes.at(-1)!.push(statement);
  };
  const tx = Object.assign(conn, { savepoint, commitWith }) as unknown as PipelinedTx;
  return tx;
}
