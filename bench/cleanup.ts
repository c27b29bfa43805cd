/**
 * The clean-up steps of a bench script, run once, newest first, whether it ends by success, error,
 * signal or time-out, so that no web process or bench database is left behind. Past `budgetMs`
 * the script cleans up and exits with code 2.
 */
export function cleanupRegistry(log: (msg: string) => void, budgetMs?: number) {
  const steps: (() => unknown)[] = [];
  let cleaning: Promise<void> | null = null;
  const cleanup = (): Promise<void> => {
    cleaning ??= (async () => {
      for (const step of steps.reverse()) {
        try {
          await step();
        } catch (err) {
          log(`cleanup step failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    })();
    return cleaning;
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: cleaning up`);
      void cleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }
  if (budgetMs !== undefined) {
    setTimeout(() => {
      log(`time budget of ${budgetMs / 1000} s exceeded: aborting`);
      void cleanup().finally(() => process.exit(2));
    }, budgetMs).unref();
  }
  return {
    /** The shape test helpers take (`t.teardown`), so they can be reused here. */
    teardown: (step: () => unknown) => void steps.push(step),
    cleanup,
  };
}
