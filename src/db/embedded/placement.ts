import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { exists, readText } from './fs-util.js';
import type { RunAs } from './postgres-user.js';
import { runningPort } from './server.js';

/**
 * As root, where a cluster lives when the postgres user cannot reach the data folder (and where
 * the programs are copied when it cannot reach node_modules): /var/lib is kept across reboots and
 * never swept, unlike /tmp and /var/tmp (systemd-tmpfiles ages out /var/tmp after 30 days).
 */
export const OUTSIDE = '/var/lib/invoicing-api';

/**
 * Where the cluster of `root` lives. As root the server runs as the postgres user, which must be
 * able to pass through every folder above the cluster. Making the user's own folders (a 0700
 * /root) passable would open them to every account, so the cluster stays in the data folder only
 * when they already are (then the data folder itself is opened, 0755, as before); otherwise it
 * goes under /var/lib/invoicing-api in a folder named after the data folder's real path, and its
 * place is recorded in the data folder, which keeps finding it even after the folder is moved.
 */
export async function placeCluster(root: string, runAs: RunAs | null): Promise<string> {
  const record = path.join(root, 'pg-cluster');
  const recorded = (await readText(record))?.trim();
  if (recorded) return recorded;
  const inPlace = path.join(root, 'pg');
  if (!runAs) return inPlace;
  if (await canReach(runAs, path.dirname(root))) {
    await chmod(root, 0o755);
    return inPlace;
  }
  if (await exists(path.join(inPlace, 'PG_VERSION'))) {
    throw new Error(`PostgreSQL runs as the user postgres, which cannot reach the cluster ${inPlace}: move DATA_DIR (${root}) to a folder every user can enter, or set DATABASE_URL`);
  }
  const realRoot = await realpath(root);
  const home = path.join(OUTSIDE, createHash('sha256').update(realRoot).digest('hex').slice(0, 16));
  const pgDir = path.join(home, 'pg');
  // No data folder records it, so a cluster already there belonged to a data folder at this same
  // path that was deleted since: start afresh, as deleting the folder does to a cluster inside it
  // (and the encryption key of its webhook secrets went with that folder).
  if (await runningPort(pgDir)) {
    throw new Error(`A PostgreSQL server still runs on ${pgDir}, the cluster of a deleted DATA_DIR at ${realRoot}: stop it, then start again`);
  }
  await rm(home, { recursive: true, force: true });
  await openFolder(home);
  await writeFile(path.join(home, 'data-dir'), `${realRoot}\n`);
  await writeFile(record, `${pgDir}\n`);
  return pgDir;
}

/** Creates `dir` (and OUTSIDE above it) passable by every user, whatever the umask. */
export async function openFolder(dir: string): Promise<void> {
  for (const d of [OUTSIDE, dir]) {
    await mkdir(d, { recursive: true });
    await chmod(d, 0o755);
  }
}

/**
 * Whether `runAs` can reach `target` (search permission on every folder on the way, and on
 * `target` itself): asked of the kernel by running `test -x` as that user, spawned the way the
 * server is, so supplementary groups and ACLs count exactly as they will for it.
 */
export async function canReach(runAs: RunAs, target: string): Promise<boolean> {
  return new Promise((resolve) => {
    spawn('/bin/sh', ['-c', 'test -x "$1"', 'sh', target], { ...runAs, stdio: 'ignore' })
      .once('error', () => resolve(false))
      .once('exit', (code) => resolve(code === 0));
  });
}
