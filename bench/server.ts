import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { freePort } from '../src/db/embedded.js';

export interface WebProcess {
  pid: number;
  port: number;
  baseUrl: string;
  /** Starts a new RSS window; `peakKb()` reports the highest VmRSS sampled since. */
  markRss(): void;
  peakKb(): number;
  /** VmHWM: the kernel's peak resident set of the process's whole life. */
  hwmKb(): number;
  /** Last lines the process wrote to stdout/stderr (for error reports). */
  output(): string;
  stop(): Promise<void>;
}

function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let built = false;

/** `npm run build` once per bench process: the web process runs the tsc output, as the Procfile does. */
function buildOnce(cwd: string): void {
  if (built) return;
  execFileSync('npm', ['run', 'build', '--silent'], { cwd, stdio: ['ignore', 'ignore', 'inherit'] });
  built = true;
}

/**
 * `node dist/src/server.js` (the Procfile's `web`, built first) as a child, bound to 127.0.0.1 on a free port, production
 * mode, warn-level logs. Resolves once /readyz answers 200.
 */
export async function startWebProcess(opts: {
  cwd: string;
  databaseUrl: string;
  poolSize: number;
  readyTimeoutMs?: number;
  /** Extra node flags, e.g. --cpu-prof (bench/profile.ts). */
  nodeArgs?: string[];
  /** Another server to run in its place, answering /readyz too (bench/floor-server.ts). */
  script?: string;
  env?: Record<string, string>;
}): Promise<WebProcess> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  buildOnce(opts.cwd);
  const child: ChildProcess = spawn(process.execPath, [...(opts.nodeArgs ?? []), opts.script ?? 'dist/src/server.js'], {
    cwd: opts.cwd,
    env: {
      ...process.env,
      DATABASE_URL: opts.databaseUrl,
      DATABASE_POOL_SIZE: String(opts.poolSize),
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      PUBLIC_BASE_URL: baseUrl,
      // Required with DATABASE_URL (it seals webhook secrets); the bench database is thrown away.
      ENCRYPTION_KEY: process.env.ENCRYPTION_KEY ?? randomBytes(32).toString('hex'),
      // The load comes from one key over every connection: the per-key cap on requests in flight
      // (10, a guard between one merchant's integrations) would answer most of it 429.
      API_CONCURRENCY_PER_KEY: '1024',
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid;
  if (!pid) throw new Error('could not spawn the web process');

  // Never leave the server behind, whatever way the bench process ends.
  const killOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', killOnExit);

  let tail: string[] = [];
  let logLines = 0;
  const keep = (chunk: Buffer) => {
    const lines = chunk.toString('utf8').split('\n').filter(Boolean);
    logLines += lines.length;
    tail = [...tail, ...lines].slice(-40);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);

  let exited = false;
  const exitedPromise = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );

  let windowPeak = 0;
  const sampler = setInterval(() => {
    const rss = statusKb(pid, 'VmRSS');
    if (rss > windowPeak) windowPeak = rss;
  }, 100);
  sampler.unref();

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    clearInterval(sampler);
    if (!exited) {
      child.kill('SIGTERM');
      const timeout = sleep(10_000).then(() => 'timeout');
      if ((await Promise.race([exitedPromise.then(() => 'exited'), timeout])) === 'timeout') {
        child.kill('SIGKILL');
        await exitedPromise;
      }
    }
    process.off('exit', killOnExit);
  };

  const web: WebProcess = {
    pid,
    port,
    baseUrl,
    markRss: () => {
      windowPeak = statusKb(pid, 'VmRSS');
    },
    peakKb: () => Math.max(windowPeak, statusKb(pid, 'VmRSS')),
    hwmKb: () => statusKb(pid, 'VmHWM'),
    output: () => `${logLines} line(s) logged; last:\n${tail.join('\n')}`,
    stop,
  };

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 30_000);
  try {
    for (;;) {
      if (exited) throw new Error(`web process exited during start-up (code ${child.exitCode}):\n${tail.join('\n')}`);
      if (Date.now() > deadline) throw new Error(`web process not ready after ${opts.readyTimeoutMs ?? 30_000} ms:\n${tail.join('\n')}`);
      const ok = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await sleep(100);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return web;
}
