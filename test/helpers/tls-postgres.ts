import { chmod, chown, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { freePort } from '../../src/db/embedded.js';
import { serverUser } from '../../src/db/embedded/postgres-user.js';
import { installedPrograms, reachablePrograms } from '../../src/db/embedded/programs.js';
import { initialise, launch } from '../../src/db/embedded/server.js';
import { selfSignedCertificate } from './self-signed.js';

export interface TestServer {
  /**
   * postgres://…@host:port/postgres with `query` appended. User `postgres` may connect with or
   * without TLS; user `tls_only` (on a TLS server) only over TLS, as on Heroku Postgres.
   */
  url(query?: string, as?: { host?: string; user?: 'postgres' | 'tls_only' }): string;
  /** The server certificate's file, its own root (it is self-signed), when TLS is on. */
  certFile?: string;
  stop(): Promise<void>;
}

/**
 * A throw-away PostgreSQL listening on 127.0.0.1 and 127.0.0.2, with TLS on a fresh self-signed
 * certificate or with no TLS at all. The certificate names 127.0.0.1 and localhost only, so
 * 127.0.0.2 reaches the same server under a name the certificate does not cover.
 */
export async function startTestServer(opts: { tls: boolean }): Promise<TestServer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pg-tls-'));
  // As root the server runs as the `postgres` user, which must reach its data folder.
  await chmod(dir, 0o755);
  const dataDir = path.join(dir, 'data');
  const port = await freePort();
  // The embedded PostgreSQL's own runner, as npm start uses it: as root the server runs as the
  // `postgres` user, from a copy of the programs it can reach when the clone's folder is private.
  const runAs = await serverUser();
  const usable = await reachablePrograms(await installedPrograms(), runAs);
  await initialise(usable.initdb, dataDir, runAs);

  await writeFile(
    path.join(dataDir, 'pg_hba.conf'),
    ['127.0.0.1/32', '127.0.0.2/32']
      .flatMap((net) => [`host all postgres ${net} scram-sha-256`, `hostssl all tls_only ${net} scram-sha-256`])
      .join('\n') + '\n',
  );
  const settings = ['listen_addresses=127.0.0.1,127.0.0.2'];
  let certFile: string | undefined;
  if (opts.tls) {
    const { key, cert } = selfSignedCertificate();
    certFile = path.join(dir, 'root.crt');
    await writeFile(certFile, cert);
    // PostgreSQL refuses a key that anyone but its owner may read, and the owner must be the
    // server's user: the data folder's owner, as whom initdb ran.
    const owner = await stat(dataDir);
    const keyFile = path.join(dataDir, 'server.key');
    await writeFile(path.join(dataDir, 'server.crt'), cert);
    await writeFile(keyFile, key, { mode: 0o600 });
    await chown(keyFile, owner.uid, owner.gid);
    settings.push('ssl=on', 'ssl_cert_file=server.crt', 'ssl_key_file=server.key');
  }
  const stop = await launch(usable.postgres, dataDir, port, runAs, settings);

  const url: TestServer['url'] = (query = '', { host = '127.0.0.1', user = 'postgres' } = {}) =>
    `postgres://${user}:postgres@${host}:${port}/postgres${query}`;
  const admin = postgres(url(), { max: 1, onnotice: () => {} });
  await admin`CREATE ROLE tls_only LOGIN SUPERUSER PASSWORD 'postgres'`;
  await admin.end();
  return {
    url,
    certFile,
    async stop() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
