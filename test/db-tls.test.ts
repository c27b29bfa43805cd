// TLS to PostgreSQL as libpq does it (src/db/tls.ts, used by createSql): sslmode in DATABASE_URL
// or PGSSLMODE, the root certificate in sslrootcert, PGSSLROOTCERT or ~/.postgresql/root.crt,
// against real servers with and without TLS. Heroku Postgres needs TLS, with a certificate that
// no public CA signs, and its DATABASE_URL has no sslmode: the default must connect to it as it is.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { createSql, type Sql } from '../src/db/client.js';
import { selfSignedCertificate } from './helpers/self-signed.js';
import { startTestServer } from './helpers/tls-postgres.js';

const run = promisify(execFile);

// The libpq variables and the ~/.postgresql/root.crt of whoever runs the tests stay out of them.
for (const name of ['PGSSLMODE', 'PGSSLROOTCERT', 'PGSSLNEGOTIATION', 'PGHOST']) delete process.env[name];
const home = mkdtempSync(path.join(os.tmpdir(), 'tls-home-'));
process.env.HOME = home;

const [tlsServer, plainServer] = await Promise.all([startTestServer({ tls: true }), startTestServer({ tls: false })]);
t.teardown(async () => {
  await Promise.all([tlsServer.stop(), plainServer.stop()]);
  rmSync(home, { recursive: true, force: true });
});
const rootCert = tlsServer.certFile!;
const otherCert = path.join(home, 'other.crt');
writeFileSync(otherCert, selfSignedCertificate().cert);
const withRoot = (file: string) => `sslrootcert=${encodeURIComponent(file)}`;

/** createSql as the app calls it, with these variables in the environment while it reads them. */
function pool(url: string, env: Record<string, string> = {}): Sql {
  Object.assign(process.env, env);
  try {
    return createSql(url, { max: 1 });
  } finally {
    for (const name of Object.keys(env)) delete process.env[name];
  }
}

/** Whether the pool's connection is encrypted, as the server sees it. */
async function encrypted(url: string, env?: Record<string, string>): Promise<boolean> {
  const sql = pool(url, env);
  try {
    const [row] = await sql<{ ssl: boolean }[]>`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`;
    return row!.ssl;
  } finally {
    await sql.end();
  }
}

t.test('with no sslmode (libpq: prefer) the connection is encrypted when the server offers TLS, plain when not', async (t) => {
  t.equal(await encrypted(tlsServer.url()), true);
  t.equal(await encrypted(tlsServer.url('', { user: 'tls_only' })), true, 'a server that refuses plain connections, as Heroku Postgres does');
  t.equal(await encrypted(plainServer.url()), false);
});

t.test('require encrypts without checking the certificate, and fails against a server without TLS', async (t) => {
  t.equal(await encrypted(tlsServer.url('?sslmode=require')), true, 'a self-signed certificate');
  t.equal(await encrypted(tlsServer.url('?sslmode=require', { host: '127.0.0.2' })), true, 'a name the certificate does not cover');
  await t.rejects(encrypted(plainServer.url('?sslmode=require')));
  t.equal(await encrypted(tlsServer.url('?ssl=true')), true, 'libpq reads the JDBC spelling ssl=true as sslmode=require');
  await t.rejects(encrypted(plainServer.url('?ssl=true')));
});

t.test('disable never encrypts', async (t) => {
  t.equal(await encrypted(tlsServer.url('?sslmode=disable')), false);
  await t.rejects(encrypted(tlsServer.url('?sslmode=disable', { user: 'tls_only' })), { code: '28000' }, 'refused by a server that wants TLS');
});

t.test('allow connects wherever libpq does; it tries TLS first, like prefer', async (t) => {
  t.equal(await encrypted(tlsServer.url('?sslmode=allow')), true);
  t.equal(await encrypted(tlsServer.url('?sslmode=allow', { user: 'tls_only' })), true);
  t.equal(await encrypted(plainServer.url('?sslmode=allow')), false);
});

t.test('verify-full needs a root certificate, and checks the certificate and the host name', async (t) => {
  t.throws(() => createSql(tlsServer.url('?sslmode=verify-full')), {
    name: 'ConfigError',
    message: `Invalid configuration:\n  DATABASE_URL: sslmode verify-full needs the server's root certificate, and "${path.join(home, '.postgresql', 'root.crt')}" does not exist (name its file with sslrootcert in DATABASE_URL or PGSSLROOTCERT, or use sslrootcert=system for the public CAs)`,
  });
  t.equal(await encrypted(tlsServer.url(`?sslmode=verify-full&${withRoot(rootCert)}`)), true, 'sslrootcert is not sent to the server as a setting');
  await t.rejects(encrypted(tlsServer.url(`?sslmode=verify-full&${withRoot(rootCert)}`, { host: '127.0.0.2' })), {
    code: 'ERR_TLS_CERT_ALTNAME_INVALID',
    message: /127\.0\.0\.2/,
  });
  await t.rejects(encrypted(tlsServer.url(`?sslmode=verify-full&${withRoot(otherCert)}`)), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  t.throws(() => createSql(tlsServer.url(`?sslmode=verify-full&${withRoot(home)}`)), {
    name: 'ConfigError',
    message: /could not read root certificate file/,
  });
});

t.test('verify-ca checks the certificate but not the host name', async (t) => {
  t.throws(() => createSql(tlsServer.url('?sslmode=verify-ca')), { name: 'ConfigError', message: /verify-ca needs the server's root certificate/ });
  t.equal(await encrypted(tlsServer.url(`?sslmode=verify-ca&${withRoot(rootCert)}`, { host: '127.0.0.2' })), true);
  await t.rejects(encrypted(tlsServer.url(`?sslmode=verify-ca&${withRoot(otherCert)}`)), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
});

t.test('require with a root certificate checks the certificate, as verify-ca', async (t) => {
  t.equal(await encrypted(tlsServer.url(`?sslmode=require&${withRoot(rootCert)}`, { host: '127.0.0.2' })), true);
  await t.rejects(encrypted(tlsServer.url(`?sslmode=require&${withRoot(otherCert)}`)), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  t.equal(await encrypted(tlsServer.url(`?sslmode=require&${withRoot(path.join(home, 'none.crt'))}`)), true, 'a root certificate file that does not exist is no root certificate');
});

t.test('~/.postgresql/root.crt is the root certificate when none is named', async (t) => {
  mkdirSync(path.join(home, '.postgresql'));
  t.teardown(() => rmSync(path.join(home, '.postgresql'), { recursive: true, force: true }));
  copyFileSync(otherCert, path.join(home, '.postgresql', 'root.crt'));
  await t.rejects(encrypted(tlsServer.url('?sslmode=require')), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
  t.equal(await encrypted(tlsServer.url()), true, 'prefer does not check it');
  copyFileSync(rootCert, path.join(home, '.postgresql', 'root.crt'));
  t.equal(await encrypted(tlsServer.url('?sslmode=verify-full')), true);
});

t.test('sslrootcert=system trusts the system CAs, and only with verify-full', async (t) => {
  await t.rejects(encrypted(tlsServer.url('?sslrootcert=system')), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }, 'verify-full by default');
  t.throws(() => createSql(tlsServer.url('?sslmode=require&sslrootcert=system')), {
    name: 'ConfigError',
    message: 'Invalid configuration:\n  DATABASE_URL: sslmode "require" is too weak for sslrootcert=system (use verify-full)',
  });
});

t.test('PGSSLMODE and PGSSLROOTCERT apply when the URL does not say; the URL wins', async (t) => {
  t.equal(await encrypted(tlsServer.url(), { PGSSLMODE: 'disable' }), false);
  await t.rejects(encrypted(plainServer.url(), { PGSSLMODE: 'require' }));
  t.equal(await encrypted(tlsServer.url(), { PGSSLMODE: 'verify-full', PGSSLROOTCERT: rootCert }), true);
  t.equal(await encrypted(tlsServer.url('?sslmode=require'), { PGSSLMODE: 'disable' }), true);
  t.equal(await encrypted(tlsServer.url('?sslmode=disable'), { PGSSLMODE: 'verify-full' }), false);
  t.equal(await encrypted(tlsServer.url(`?${withRoot(rootCert)}`), { PGSSLMODE: 'verify-full', PGSSLROOTCERT: otherCert }), true);
});

t.test('an unknown sslmode is a configuration error naming the value and where it was read', async (t) => {
  t.throws(() => createSql(tlsServer.url('?sslmode=verify_full')), {
    name: 'ConfigError',
    message: 'Invalid configuration:\n  DATABASE_URL: sslmode "verify_full" is not one of disable, allow, prefer, require, verify-ca, verify-full',
  });
  t.throws(() => pool(tlsServer.url(), { PGSSLMODE: 'Require' }), {
    name: 'ConfigError',
    message: 'Invalid configuration:\n  PGSSLMODE: sslmode "Require" is not one of disable, allow, prefer, require, verify-ca, verify-full',
  });
  t.throws(() => createSql(tlsServer.url('?sslmode=')), { name: 'ConfigError', message: /sslmode "" is not one of/ });
  t.throws(() => createSql(tlsServer.url('?ssl=1')), { name: 'ConfigError', message: /ssl=1 is not a libpq parameter/ });
});

t.test('sslnegotiation=direct (PostgreSQL 17+) needs an sslmode that insists on TLS', async (t) => {
  t.equal(await encrypted(tlsServer.url('?sslmode=require&sslnegotiation=direct')), true);
  t.throws(() => createSql(tlsServer.url('?sslnegotiation=direct')), {
    name: 'ConfigError',
    message: 'Invalid configuration:\n  DATABASE_URL: sslnegotiation=direct needs sslmode require, verify-ca or verify-full, not "prefer"',
  });
  t.throws(() => pool(tlsServer.url(), { PGSSLNEGOTIATION: 'fast' }), { name: 'ConfigError', message: /PGSSLNEGOTIATION: sslnegotiation "fast"/ });
});

t.test('the release step migrates over TLS against a server that refuses plain connections; a bad sslmode stops it with the message alone', async (t) => {
  const cli = (url: string) =>
    run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'migrate'], { env: { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'silent' } });
  const { stdout } = await cli(tlsServer.url('', { user: 'tls_only' }));
  t.match(JSON.parse(stdout), { applied: Array });
  const sql = pool(tlsServer.url('', { user: 'tls_only' }));
  t.teardown(() => sql.end());
  t.ok((await sql`SELECT 1 FROM pg_namespace WHERE nspname = 'pgboss'`).length, "pg-boss's schema too");

  const failed = await cli(plainServer.url('?sslmode=verify_full')).then(
    () => null,
    (err: { code: number; stderr: string }) => err,
  );
  t.equal(failed?.code, 1);
  t.equal(failed?.stderr, 'Invalid configuration:\n  DATABASE_URL: sslmode "verify_full" is not one of disable, allow, prefer, require, verify-ca, verify-full\n');
});
