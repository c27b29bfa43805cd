import type { Sql } from '../db/client.js';
import { clock } from '../clock.js';

export interface RateLimitState {
  limit: number;
  remaining: number;
  /** Unix seconds when the window ends. */
  reset: number;
  exceeded: boolean;
}

const WINDOW_SECONDS = 60;

/**
 * Fixed one-minute windows counted in Postgres so every web process shares one counter.
 * Each hit is its own autocommit statement on an UNLOGGED table: it never holds a lock
 * inside a business transaction and costs no WAL flush.
 */
export async function hitRateLimit(sql: Sql, bucket: string, limit: number): Promise<RateLimitState> {
  const nowSec = Math.floor(clock.now().getTime() / 1000);
  const windowStart = nowSec - (nowSec % WINDOW_SECONDS);
  const [row] = await sql<{ hits: number }[]>`
    INSERT INTO rate_limit_windows (bucket, window_start, hits) VALUES (${bucket}, ${windowStart}, 1)
    ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limit_windows.hits + 1
    RETURNING hits`;
  const hits = row?.hits ?? 1;
  return {
    limit,
    remaining: Math.max(0, limit - hits),
    reset: windowStart + WINDOW_SECONDS,
    exceeded: hits > limit,
  };
}

export function secondsUntilReset(state: RateLimitState): number {
  const nowSec = Math.floor(clock.now().getTime() / 1000);
  return Math.min(WINDOW_SECONDS, Math.max(1, state.reset - nowSec));
}

export async function purgeRateLimitWindows(sql: Sql): Promise<number> {
  const nowSec = Math.floor(clock.now().getTime() / 1000);
  const res = await sql`DELETE FROM rate_limit_windows WHERE window_start < ${nowSec - 2 * WINDOW_SECONDS}`;
  return res.count;
}
