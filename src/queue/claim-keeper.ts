/**
 * Keeps a run's claim on a row alive while the run waits on the outside world (an SMTP server, a
 * webhook receiver). Claims are short so that the claim of a worker that died runs out about when
 * pg-boss's heartbeat check hands its job to another worker; a live run renews its claim instead.
 *
 * `renew` writes the new claim and returns its token (what the run must present when it records
 * the outcome), or null when the claim is no longer this run's. A renewal that fails (the database
 * away) is let go: the claim may then run out, and recording the outcome finds that out.
 */
export interface ClaimKeeper<T> {
  /** Stops renewing, once any renewal in flight has landed; resolves with the final token. */
  stop(): Promise<T>;
}

export function keepClaim<T>(token: T, renew: (token: T) => Promise<T | null>, everyMs: number): ClaimKeeper<T> {
  let current = token;
  let inFlight: Promise<void> = Promise.resolve();
  let stopped = false;
  const timer = setInterval(() => {
    inFlight = inFlight.then(async () => {
      if (stopped) return;
      try {
        const next = await renew(current);
        if (next === null) clearInterval(timer);
        else current = next;
      } catch {
        // Let go: see above.
      }
    });
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await inFlight;
      return current;
    },
  };
}
