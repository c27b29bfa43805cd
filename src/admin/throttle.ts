import type { Sql } from '../db/client.js';
import { clock } from '../clock.js';

// docs/decisions.md §19: the admin token cannot be guessed at speed. After REFUSALS_ALLOWED refused
// tokens from one address within a sliding minute, that address is refused (429) for LOCK_SECONDS,
// the right token too.
export const REFUSALS_ALLOWED = 10;
const WINDOW_SECONDS = 60;
const LOCK_SECONDS = 60;

/**
 * Kept in rate_limit_windows, the UNLOGGED table the API's rate limits share (rate-limit.ts), so
 * that every web process sees the same refusals and the same lock: a guesser spread over several
 * processes gets no more tries. Each refusal adds to a one-second row of `admin-refused:<address>`
 * (a sliding minute to the second); a lock is a row of `admin-locked:<address>` whose
 * window_start is when it began. Both are gone within two minutes (purgeRateLimitWindows), long
 * after they stop mattering. Admin calls are few: a query or two each costs nothing.
 */
function nowSeconds(): number {
  return Math.floor(clock.now().getTime() / 1000);
}

/** Seconds until the address's lock ends; null when it is not locked. */
export async function adminLockedFor(sql: Sql, address: string): Promise<number | null> {
  const now = nowSeconds();
  const rows = await sql<{ started: string | null }[]>`
    SELECT max(window_start)::text AS started FROM rate_limit_windows
     WHERE bucket = ${`admin-locked:${address}`} AND window_start > ${now - LOCK_SECONDS} AND window_start <= ${now}`;
  const started = rows[0]?.started;
  if (started === null || started === undefined) return null;
  return Math.max(1, Number(started) + LOCK_SECONDS - now);
}

/**
 * Counts one refused token of the address; true when this refusal locks it (the
 * REFUSALS_ALLOWED-th within a minute), once per lock however many processes refuse at once: the
 * address's refusals are counted one transaction after another under an advisory lock.
 */
export async function recordAdminRefusal(sql: Sql, address: string): Promise<boolean> {
  const now = nowSeconds();
  const refused = `admin-refused:${address}`;
  const locked = `admin-locked:${address}`;
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtextextended(${locked}, 0))`;
    await tx`
      INSERT INTO rate_limit_windows (bucket, window_start, hits) VALUES (${refused}, ${now}, 1)
      ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limit_windows.hits + 1`;
    const [state] = await tx<{ refusals: number; locked: boolean }[]>`
      SELECT (SELECT coalesce(sum(hits), 0)::int FROM rate_limit_windows
               WHERE bucket = ${refused} AND window_start > ${now - WINDOW_SECONDS} AND window_start <= ${now}) AS refusals,
             EXISTS (SELECT 1 FROM rate_limit_windows
                      WHERE bucket = ${locked} AND window_start > ${now - LOCK_SECONDS} AND window_start <= ${now}) AS locked`;
    if (!state || state.locked || state.refusals < REFUSALS_ALLOWED) return false;
    await tx`
      INSERT INTO rate_limit_windows (bucket, window_start, hits) VALUES (${locked}, ${now}, 1)
      ON CONFLICT (bucket, window_start) DO NOTHING`;
    return true;
  });
}
