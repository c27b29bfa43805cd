// The embedded PostgreSQL of `npm start`, the CLI and `npm test` (no DATABASE_URL). As root it
// runs as the postgres user, which cannot enter a 0700 folder such as /root: a clone there must
// work all the same, with no password file left in /tmp, and a start that fails says so in a line.
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, readdir, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { createSql } from '../src/db/client.js';
import { freePort, startEmbedded, type EmbeddedDb } from '../src/db/embedded.js';
import { exists } from '../src/db/embedded/fs-util.js';

const run = promisify(execFile);
const skip = process.getuid?.() === 0 ? false : 'as root only: the server then runs as the postgres user, whose reach is what is tested';

const passwordFiles = async () => (await readdir(os.tmpdir())).filter((f) => f.startsWith('pg-password-')).sort();

type Tap = { teardown(fn: () => unknown): void };

/**
 * A folder of `mode` in `parent`, holding the DATA_DIR `data`. When the test ends its servers are
 * stopped and the folder is removed, with the cluster recorded outside it if there is one.
 */
async function dataDirIn(t: Tap, servers: EmbeddedDb[], parent: string, mode: number): Promise<{ base: string; dataDir: string }> {
  const base = await mkdtemp(path.join(parent, 'invoicing-embedded-'));
  await chmod(base, mode);
  const dataDir = path.join(base, 'data');
  t.teardown(async () => {
    for (const s of servers) await s.stop();
    const outside = await readFile(path.join(dataDir, 'pg-cluster'), 'utf8').catch(() => null);
    if (outside) {
      await rm(path.dirname(outside.trim()), { recursive: true, force: true });
      await rmdir(path.dirname(path.dirname(outside.trim()))).catch(() => {}); // when no other is left
    }
    await rm(base, { recursive: true, force: true });
  });
  return { base, dataDir };
}

/** A folder like /root (0700, root's), holding the DATA_DIR `data`. */
const privateDataDir = (t: Tap, servers: EmbeddedDb[]) => dataDirIn(t, servers, os.homedir(), 0o700);

/**
 * Writes `value` through the server `first`, stops it and starts the server of `dataDir` again:
 * resolves to that second server and what it holds.
 */
async function restart(first: EmbeddedDb, dataDir: string, servers: EmbeddedDb[], value: string) {
  let sql = createSql(first.url, { max: 1 });
  await sql`CREATE TABLE kept (v text)`;
  await sql`INSERT INTO kept VALUES (${value})`;
  await sql.end();
  await first.stop();

  const second = await startEmbedded(dataDir);
  servers.push(second);
  sql = createSql(second.url, { max: 1 });
  const rows = await sql`SELECT v FROM kept`;
  await sql.end();
  return { second, rows };
}

/** An entry point with no DATABASE_URL (the embedded server of DATA_DIR); killed after a minute, so an `npm start` that does start cannot hang the test. */
async function entryPoint(script: string, args: string[], env: Record<string, string>) {
  const { DATABASE_URL: _, TEST_DATABASE_URL: __, ...inherited } = process.env;
  return run(process.execPath, ['--import', 'tsx', script, ...args], { env: { ...inherited, LOG_LEVEL: 'silent', ...env }, timeout: 60_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

t.test('as root, a DATA_DIR in a 0700 folder: the cluster lives outside it, answers, and keeps its data', { skip }, async (t) => {
  const before = await passwordFiles();
  const servers: EmbeddedDb[] = [];
  const { base, dataDir } = await privateDataDir(t, servers);

  const first = await startEmbedded(dataDir, await freePort());
  servers.push(first);
  const pgDir = (await readFile(path.join(dataDir, 'pg-cluster'), 'utf8')).trim();
  t.notOk(pgDir.startsWith(`${base}/`), `the cluster (${pgDir}) is where the postgres user can reach it`);
  t.ok(await exists(path.join(pgDir, 'PG_VERSION')), 'and it is initialised there');
  t.equal((await stat(base)).mode & 0o777, 0o700, 'the folder above DATA_DIR is left as it was');

  const { second, rows } = await restart(first, dataDir, servers, 'across restarts');
  t.equal(second.url, first.url, 'the recorded port again');
  t.same(rows, [{ v: 'across restarts' }], 'the recorded cluster again, with its data');
  await second.stop();

  t.same(await passwordFiles(), before, 'no pg-password file left in the temporary folder');
  t.notOk(await exists(path.join(path.dirname(pgDir), 'pg-password')), 'nor beside the cluster');
});

t.test('as root, the real CLI migrates the embedded database of a DATA_DIR in a 0700 folder, then finds it again', { skip }, async (t) => {
  const before = await passwordFiles();
  const { dataDir } = await privateDataDir(t, []);
  const env = { DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(await freePort()) };

  const first = await entryPoint('src/cli.ts', ['migrate'], env);
  t.equal(first.code, 0, first.stderr);
  t.ok(JSON.parse(first.stdout).applied.length > 0, 'migrations applied');
  const pgDir = (await readFile(path.join(dataDir, 'pg-cluster'), 'utf8')).trim();
  t.notOk(await exists(path.join(pgDir, 'postmaster.pid')), 'the CLI stopped the server it started');

  const again = await entryPoint('src/cli.ts', ['migrate'], env);
  t.equal(again.code, 0, again.stderr);
  t.same(JSON.parse(again.stdout), { applied: [] }, 'the same database: nothing left to apply');
  t.same(await passwordFiles(), before, 'no pg-password file left in the temporary folder');
});

t.test('a DATA_DIR the postgres user can reach keeps its cluster inside it, opened 0755, and uses it again', { skip }, async (t) => {
  const servers: EmbeddedDb[] = [];
  const { dataDir } = await dataDirIn(t, servers, os.tmpdir(), 0o755);

  const first = await startEmbedded(dataDir, await freePort());
  servers.push(first);
  t.ok(await exists(path.join(dataDir, 'pg', 'PG_VERSION')), 'the cluster is $DATA_DIR/pg');
  t.notOk(await exists(path.join(dataDir, 'pg-cluster')), 'and nothing points elsewhere');
  t.equal((await stat(dataDir)).mode & 0o777, 0o755);

  const { rows } = await restart(first, dataDir, servers, 'in place');
  t.same(rows, [{ v: 'in place' }]);
});

t.test('a start that fails prints one line saying what to do, no stack, and exits 1', { skip }, async (t) => {
  const { base, dataDir } = await privateDataDir(t, []);
  const taken = createServer((socket) => socket.destroy()); // a listener, but no PostgreSQL
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => taken.close(resolve)));
  const port = String((taken.address() as { port: number }).port);
  await writeFile(path.join(base, 'a-file'), '');

  const cases: { what: string; script: string; args: string[]; env: Record<string, string>; says: RegExp }[] = [
    { what: 'the CLI, port taken', script: 'src/cli.ts', args: ['migrate'], env: { DATA_DIR: dataDir, EMBEDDED_PG_PORT: port }, says: /EMBEDDED_PG_PORT/ },
    { what: 'npm start, port taken', script: 'src/main.ts', args: [], env: { DATA_DIR: dataDir, EMBEDDED_PG_PORT: port, PORT: '0' }, says: /EMBEDDED_PG_PORT/ },
    { what: 'the CLI, DATA_DIR not a folder', script: 'src/cli.ts', args: ['migrate'], env: { DATA_DIR: path.join(base, 'a-file', 'data') }, says: /set DATA_DIR/ },
  ];
  for (const c of cases) {
    const r = await entryPoint(c.script, c.args, c.env);
    t.equal(r.code, 1, `${c.what}: exit 1`);
    t.equal(r.stderr.trimEnd().split('\n').length, 1, `${c.what}: one line: ${r.stderr}`);
    t.match(r.stderr, c.says, `${c.what}: says what to do`);
    t.notMatch(r.stderr, /^\s+at /m, `${c.what}: no stack`);
  }
});
