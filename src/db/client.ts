import postgres from 'postgres';
import { postgresTls } from './tls.js';

export type Sql = postgres.Sql<Record<string, never>>;
export type Tx = postgres.TransactionSql<Record<string, never>>;
/** Anything that runs a query: the pool or an open transaction. */
export type Queryable = Sql | Tx;

export interface DbOptions {
  max?: number;
  /** Seconds to wait for a connection before failing the query (→ 503). */
  connectTimeout?: number;
  application?: string;
  /**
   * false: a commit answers before its WAL record is flushed to disk (PostgreSQL's
   * synchronous_commit = off). Only for writes whose loss in a database crash is made good by
   * running the work again; see openQueuePool.
   */
  synchronousCommit?: boolean;
}

export function createSql(url: string, opts: DbOptions = {}): Sql {
  // libpq's PGSSL* variables apply to every connection the process opens, as postgres.js's own
  // PGHOST, PGUSER and PGPASSWORD do; so they are read here rather than through the Config.
  const tls = postgresTls(url, process.env);
  return postgres(tls.url, {
    ssl: tls.ssl,
    max: opts.max ?? 10,
    connect_timeout: opts.connectTimeout ?? 4,
    idle_timeout: 60,
    max_lifetime: 60 * 30,
    // After each failed connection postgres.js waits longer before the next (up to 20 s by
    // default), and a query handed to a connection that waits, waits too: while the database is
    // down a request would outlast the 5 s in which it must get its 503 (docs/decisions.md §13), and after
    // it is back requests would hang until the wait ran out.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 0.5),
    onnotice: () => {},
    // numeric and dates stay strings: money goes through bignumber.js, dates stay calendar dates.
    types: {
      numeric: { to: 1700, from: [1700], serialize: (v: string) => String(v), parse: (v: string) => v },
      date: { to: 1082, from: [1082], serialize: (v: string) => v, parse: (v: string) => v },
    } as never,
    connection: { application_name: opts.application ?? 'invoicing', ...(opts.synchronousCommit === false ? { synchronous_commit: 'off' } : {}) },
  }) as unknown as Sql;
}

/** True for errors that mean "the database cannot be reached right now". */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: string; errno?: string };
  const code = e.code ?? e.errno ?? '';
  return (
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'ENOTFOUND',
      'EPIPE',
      'CONNECT_TIMEOUT',
      'CONNECTION_CLOSED',
      'CONNECTION_ENDED',
      'CONNECTION_DESTROYED',
      '57P01', // admin_shutdown
      '57P02', // crash_shutdown
      '57P03', // cannot_connect_now (starting up / shutting down)
      '08000',
      '08003',
      '08006',
      '08001',
      '08004',
    ].includes(code)
  );
}
