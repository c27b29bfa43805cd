import { once } from 'node:events';
import { chown, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readText } from './fs-util.js';
import { isAccepting } from './ports.js';
import type { RunAs } from './postgres-user.js';
import { spawnAs, supervise } from './supervise.js';

// The superuser's password is part of every URL this module hands out: nothing secret.
const PASSWORD = 'postgres';

export const urlOf = (port: number) => `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`;

/** Creates the cluster in `pgDir` (an absent or empty folder). */
export async function initialise(initdb: string, pgDir: string, runAs: RunAs | null): Promise<void> {
  await mkdir(pgDir, { recursive: true, mode: 0o700 });
  if (runAs) await chown(pgDir, runAs.uid, runAs.gid);
  // initdb reads the password from a file, which its user must be able to read. It sits beside
  // the cluster rather than in /tmp and is removed whatever happens; a process killed meanwhile
  // leaves it there, to be overwritten by the next attempt.
  const pwfile = path.join(path.dirname(pgDir), 'pg-password');
  await writeFile(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  try {
    if (runAs) await chown(pwfile, runAs.uid, runAs.gid);
    const args = [`--pgdata=${pgDir}`, '--auth=password', '--username=postgres', `--pwfile=${pwfile}`, '--lc-messages=C'];
    await supervise(spawnAs(initdb, args, runAs), null).catch((err: Error) => {
      throw new Error(`Could not create the embedded PostgreSQL cluster in ${pgDir}: ${err.message}`);
    });
  } finally {
    await rm(pwfile, { force: true });
  }
}

/**
 * Starts the server on `port` and resolves, once it accepts connections, to its stop. `settings`
 * (`name=value`) come after the defaults, so a later one wins.
 */
export async function launch(postgres: string, pgDir: string, port: number, runAs: RunAs | null, settings: string[] = []): Promise<() => Promise<void>> {
  // Only where the URL points: were 127.0.0.1's port taken, it fails rather than serving on ::1 alone.
  const args = ['-D', pgDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', ...settings.flatMap((s) => ['-c', s])];
  const child = spawnAs(postgres, args, runAs);
  await supervise(child, 'database system is ready to accept connections').catch((err: Error) => {
    const taken = /could not create any TCP\/IP sockets/.test(err.message);
    throw new Error(
      taken
        ? `Port ${port} of the embedded PostgreSQL is taken by another program: set EMBEDDED_PG_PORT to a free port, or unset it`
        : `The embedded PostgreSQL (${pgDir}) did not start: ${err.message}`,
    );
  });
  // A process that exits without stopping the server (a start that failed after it, a crash)
  // stops it on the way out; only after a SIGKILL does it run on, and the next start uses it.
  const stopOnExit = () => child.kill('SIGINT');
  process.on('exit', stopOnExit);
  child.unref();
  return async () => {
    process.off('exit', stopOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.ref(); // else the event loop may end before the server has, and the process with it
    const exited = once(child, 'exit');
    child.kill('SIGINT'); // fast shutdown: sessions are ended, the data is kept
    await exited;
  };
}

/** The port of this cluster's server when one runs (its postmaster.pid names a live process that accepts). */
export async function runningPort(pgDir: string): Promise<number | null> {
  const [pid, , , port] = ((await readText(path.join(pgDir, 'postmaster.pid'))) ?? '').split('\n').map(Number);
  if (!pid || !port || !alive(pid)) return null;
  return (await isAccepting(port)) ? port : null;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
