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
/** How long a process may keep hits to itself: the most the others' view of a counter lags. */
export const FLUSH_INTERVAL_MS = 200;
/** A bucket unused here for this long is no longer refreshed: only its next request needs it. */
const REFRESH_FOR_MS = 10_000;

interface Bucket {
  /** Unix seconds when the bucket's window began. */
  window: number;
  /** The shared total at this process's last flush, its own flushed hits included. */
  shared: number;
  /** Hits in the flush under way. */
  sending: number;
  /** Hits not yet sent. */
  pending: number;
  /** The window's first flush, which the bucket's first requests wait for. */
  ready: Promise<void> | null;
  /** Date.now() of this process's last hit. */
  lastHit: number;
}

function windowStart(): number {
  const nowSec = Math.floor(clock.now().getTime() / 1000);
  return nowSec - (nowSec % WINDOW_SECONDS);
}

/**
 * Fixed one-minute windows shared by every web process through Postgres, without a round trip
 * per request: hits are counted here and added to the shared row every FLUSH_INTERVAL_MS by one
 * upsert per process, which also brings back what the other processes added. A request is
 * decided on that shared total plus this process's unsent hits, so the processes together may
 * let through at most one flush interval's worth of each other's hits beyond the limit.
 *
 * The first request of a bucket in a window waits for a flush instead, so a process that has
 * just started, or a key seldom used, is decided on the true count. Every bucket used here in
 * the last REFRESH_FOR_MS is refreshed on each flush, so a process learns of another's hits on a
 * key within one interval even when it has none of its own to send.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  /** Buckets of a window that closed with hits not yet sent: they still count, once. */
  private readonly closing: [string, Bucket][] = [];
  private timer: NodeJS.Timeout | null = null;
  private inFlight: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  private closed = false;
  /** Whether the last flush left buckets worth refreshing, so the timer goes on. */
  private refreshing = false;

  constructor(
    private readonly sql: Sql,
    private readonly onError: (err: unknown) => void,
  ) {}

  async hit(name: string, limit: number): Promise<RateLimitState> {
    const window = windowStart();
    let bucket = this.buckets.get(name);
    if (bucket && bucket.window === window) {
      bucket.pending += 1;
      bucket.lastHit = Date.now();
      if (bucket.ready) await bucket.ready;
    } else {
      if (bucket && bucket.pending > 0) this.closing.push([name, bucket]);
      const fresh: Bucket = { window, shared: 0, sending: 0, pending: 1, ready: null, lastHit: Date.now() };
      this.buckets.set(name, fresh);
      fresh.ready = this.flush().then(
        () => void (fresh.ready = null),
        (err: unknown) => {
          // Forgotten, so that the next request tries again rather than failing on this error.
          if (this.buckets.get(name) === fresh) this.buckets.delete(name);
          throw err;
        },
      );
      await fresh.ready;
      bucket = fresh;
    }
    this.schedule();
    const hits = bucket.shared + bucket.sending + bucket.pending;
    return { limit, remaining: Math.max(0, limit - hits), reset: window + WINDOW_SECONDS, exceeded: hits > limit };
  }

  /** Sends every unsent hit and refreshes the buckets in use; one statement at a time. */
  flush(): Promise<void> {
    if (this.queued) return this.queued;
    if (!this.inFlight) {
      this.inFlight = this.send().finally(() => (this.inFlight = null));
      return this.inFlight;
    }
    this.queued = this.inFlight
      .catch(() => {})
      .then(() => {
        this.queued = null;
        return this.flush();
      });
    return this.queued;
  }

  /** Stops the timer and shares what is left; no query is made after it resolves. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.flush().catch(this.onError);
  }

  private schedule(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush().then(
        () => {
          if (this.refreshing) this.schedule();
        },
        (err: unknown) => {
          this.onError(err);
          this.schedule();
        },
      );
    }, FLUSH_INTERVAL_MS);
    this.timer.unref();
  }

  private async send(): Promise<void> {
    const current = windowStart();
    const recent = Date.now() - REFRESH_FOR_MS;
    const batch: [string, Bucket][] = [];
    this.refreshing = false;
    // Buckets that leave the map with hits: a failed send puts them back here to try again.
    const closed = this.closing.splice(0);
    for (const entry of [...closed]) {
      entry[1].sending = entry[1].pending;
      entry[1].pending = 0;
      batch.push(entry);
    }
    for (const [name, bucket] of this.buckets) {
      if (bucket.window !== current) {
        // A closed window is sent once more only if it has hits to add, then forgotten.
        this.buckets.delete(name);
        if (bucket.pending === 0) continue;
        closed.push([name, bucket]);
      } else if (bucket.pending === 0 && bucket.lastHit < recent) {
        continue;
      } else {
        this.refreshing = true;
      }
      bucket.sending = bucket.pending;
      bucket.pending = 0;
      batch.push([name, bucket]);
    }
    if (batch.length === 0) return;
    let totals: Map<string, number>;
    try {
      totals = await addHits(
        this.sql,
        batch.map(([name, b]) => ({ bucket: name, window: b.window, hits: b.sending })),
      );
    } catch (err) {
      for (const [, b] of batch) {
        b.pending += b.sending;
        b.sending = 0;
      }
      this.closing.push(...closed);
      throw err;
    }
    for (const [name, b] of batch) {
      b.shared = totals.get(`${name} ${b.window}`) ?? b.shared + b.sending;
      b.sending = 0;
    }
  }
}

/**
 * Adds each bucket's hits to its window (rows in one order, so concurrent flushes of several
 * processes cannot deadlock) and returns every window's total, keyed by `bucket window`. Buckets
 * with nothing to add are only read. An UNLOGGED table: no WAL, and losing it on a crash only
 * resets a minute's windows.
 */
async function addHits(sql: Sql, rows: { bucket: string; window: number; hits: number }[]): Promise<Map<string, number>> {
  const result = await sql<{ bucket: string; window_start: string; hits: number }[]>`
    WITH batch AS (
      SELECT * FROM unnest(${rows.map((r) => r.bucket)}::text[], ${rows.map((r) => r.window)}::bigint[],
                           ${rows.map((r) => r.hits)}::int[]) AS b(bucket, window_start, hits)
    ), added AS (
      INSERT INTO rate_limit_windows (bucket, window_start, hits)
      SELECT bucket, window_start, hits FROM batch WHERE hits > 0 ORDER BY bucket, window_start
      ON CONFLICT (bucket, window_start) DO UPDATE SET hits = rate_limit_windows.hits + EXCLUDED.hits
      RETURNING bucket, window_start, hits
    )
    SELECT bucket, window_start::text, hits FROM added
    UNION ALL
    SELECT w.bucket, w.window_start::text, w.hits
      FROM rate_limit_windows w JOIN batch b USING (bucket, window_start)
     WHERE b.hits = 0`;
  return new Map(result.map((r) => [`${r.bucket} ${r.window_start}`, r.hits]));
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
