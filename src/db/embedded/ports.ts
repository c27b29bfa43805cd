import { writeFile } from 'node:fs/promises';
import { createServer, Socket } from 'node:net';
import path from 'node:path';
import { readText } from './fs-util.js';

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

/**
 * EMBEDDED_PG_PORT, else the recorded port, else a free one; recorded. A recorded port that another
 * program took since this cluster last ran is given up for a free one; a requested one is not.
 */
export async function choosePort(root: string, requested?: number): Promise<number> {
  const recorded = Number((await readText(path.join(root, 'pg-port')))?.trim()) || null;
  let port = requested ?? recorded ?? (await freePort());
  if (await isAccepting(port)) {
    if (requested) throw new Error(`Port ${port} (EMBEDDED_PG_PORT) is taken by another program: set EMBEDDED_PG_PORT to a free port, or unset it`);
    port = await freePort();
  }
  return recordPort(root, port);
}

export async function recordPort(root: string, port: number): Promise<number> {
  await writeFile(path.join(root, 'pg-port'), `${port}\n`);
  return port;
}

export async function isAccepting(port: number): Promise<boolean> {
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
