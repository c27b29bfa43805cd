import { spawn, type ChildProcess } from 'node:child_process';
import { TEST_ENV } from './app.js';
import { until } from './until.js';

export interface Child {
  process: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal) and when it happened. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

/** A process of the app run from its real entry point, SIGKILLed when the test ends if still running. */
export function spawnApp(t: { teardown(fn: () => unknown): void }, script: string, env: Record<string, string>): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, ...TEST_ENV, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => (output += chunk.toString());
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
  );
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  return { process: child, output: () => output, exited };
}

/** Fails with the child's output when it exits before `ready`. */
export async function whenReady(child: Child, what: string, ready: () => Promise<boolean> | boolean): Promise<void> {
  const early = child.exited.then(({ code, signal }) => {
    throw new Error(`${what} exited (${code ?? signal}) before it was ready: ${child.output()}`);
  });
  early.catch(() => {});
  await Promise.race([until(`${what} to be ready`, ready, 30_000), early]);
}

/**
 * A worker process (jobs/worker.ts), ready once it says so. That is an info line of its log, so it
 * runs at LOG_LEVEL=info whatever `env` says (its only other lines are warnings and errors).
 */
export async function startWorkerProcess(t: { teardown(fn: () => unknown): void }, env: Record<string, string>): Promise<Child> {
  const worker = spawnApp(t, 'jobs/worker.ts', { ...env, LOG_LEVEL: 'info' });
  await whenReady(worker, 'the worker', () => worker.output().includes('invoicing worker ready'));
  return worker;
}
