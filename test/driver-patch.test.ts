// The patched postgres.js stays patched: patches/postgres+3.4.9.patch applies to a pristine 3.4.9
// through the real postinstall line, a patch that no longer fits fails the install, and the
// start-up check (src/db/driver-check.ts) accepts the installed driver and refuses, in one line
// saying what to do, an unpatched copy or another release. The same for pg-boss and its patch.
// The pristine copy is the installed one with the patch reversed, so no network is needed.
import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertPatched, loadedPackageRoot, PG_BOSS, POSTGRES_JS, type PatchedPackage } from '../src/db/driver-check.js';

const loadedPostgresRoot = () => loadedPackageRoot(POSTGRES_JS);
const assertPatchedPostgres = (root?: string) => assertPatched(POSTGRES_JS, root);

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PATCH = 'patches/postgres+3.4.9.patch';
const PATCHED_FILES = ['connection.js', 'index.js', 'queue.js'].flatMap((f) => ['src', 'cjs/src', 'cf/src'].map((dir) => `${dir}/${f}`));
const POSTINSTALL = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { postinstall: string } }).scripts.postinstall;

/** Runs `command` in `cwd` the way npm runs a script: the project's bin folder and this node first on PATH. */
function run(cwd: string, command: string) {
  const PATH = [path.join(ROOT, 'node_modules', '.bin'), path.dirname(process.execPath), process.env.PATH].join(path.delimiter);
  const r = spawnSync('sh', ['-c', command], { cwd, env: { ...process.env, PATH, FORCE_COLOR: '0' }, encoding: 'utf8' });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

/** An app folder holding the patch and a pristine copy of `pkg`: the installed copy, the patch reversed. */
function pristineApp(t: Test, pkg: PatchedPackage = POSTGRES_JS): { app: string; driver: string } {
  const patch = `patches/${pkg.name}+${pkg.version}.patch`;
  const app = mkdtempSync(path.join(tmpdir(), 'driver-patch-'));
  t.teardown(() => rmSync(app, { recursive: true, force: true }));
  const driver = path.join(app, 'node_modules', pkg.name);
  cpSync(loadedPackageRoot(pkg), driver, { recursive: true });
  cpSync(path.join(ROOT, patch), path.join(app, patch));
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'driver-patch-fixture', private: true, dependencies: { [pkg.name]: pkg.version } }));
  const reversed = run(app, 'patch-package --reverse --error-on-fail');
  if (reversed.status !== 0) throw new Error(`reversing ${patch} on a copy of the installed ${pkg.label} failed (is it patched?):\n${reversed.output}`);
  return { app, driver };
}

const read = (root: string, file: string) => readFileSync(path.join(root, file), 'utf8');

t.test('the driver this process loads is the patched 3.4.9', async (t) => {
  t.equal(loadedPostgresRoot(), path.join(ROOT, 'node_modules', 'postgres'));
  t.doesNotThrow(() => assertPatchedPostgres());
});

t.test('an unpatched 3.4.9 fails the check with one line saying what to do', async (t) => {
  const { driver } = pristineApp(t);
  for (const file of PATCHED_FILES) t.notMatch(read(driver, file), 'invoicing:', `${file} is pristine`);
  const err = t.throws(() => assertPatchedPostgres(driver)) as Error;
  t.notMatch(err.message, '\n');
  t.match(err.message, `postgres.js at ${driver} is not patched (missing: "invoicing: closed-socket guard (porsager/postgres#1208)" in src/connection.js, `);
  for (const issue of ['#747', '#1199', '#1223']) t.match(err.message, issue);
  t.match(err.message, /\): run `npm install` \(its postinstall applies patches\/postgres\+3\.4\.9\.patch\); installs with --ignore-scripts skip it$/);
});

t.test('the postinstall applies the patch to a pristine 3.4.9, and again harmlessly', async (t) => {
  const { app, driver } = pristineApp(t);
  const applied = run(app, POSTINSTALL);
  t.equal(applied.status, 0, 'the postinstall succeeds', { output: applied.output });
  for (const file of PATCHED_FILES) t.equal(read(driver, file), read(loadedPostgresRoot(), file), `${file} as installed`);
  t.doesNotThrow(() => assertPatchedPostgres(driver));
  // npm runs the postinstall on every install, over a driver it may have left patched.
  const again = run(app, POSTINSTALL);
  t.equal(again.status, 0, 'the postinstall succeeds over the patched driver', { output: again.output });
  t.doesNotThrow(() => assertPatchedPostgres(driver));
});

t.test('a patch that no longer fits the code fails the install', async (t) => {
  const { app, driver } = pristineApp(t);
  // What a release that changed the patched code looks like to the patch: one context line differs.
  const patchFile = path.join(app, PATCH);
  const patch = readFileSync(patchFile, 'utf8');
  const context = '     const x = socket.write(chunk, fn)\n';
  t.ok(patch.includes(context), 'the patch has the context line');
  writeFileSync(patchFile, patch.replace(context, '     const x = socket.write(chunk, fn) // changed upstream\n'));
  const failed = run(app, POSTINSTALL);
  t.not(failed.status, 0, 'the install fails', { output: failed.output });
  t.match(failed.output, 'Failed to apply patch for package postgres');
  t.throws(() => assertPatchedPostgres(driver), /is not patched/);
});

t.test('another release fails the check, patched or not', async (t) => {
  const driver = path.join(mkdtempSync(path.join(tmpdir(), 'driver-patch-')), 'postgres');
  t.teardown(() => rmSync(path.dirname(driver), { recursive: true, force: true }));
  cpSync(loadedPostgresRoot(), driver, { recursive: true });
  const pkg = JSON.parse(read(driver, 'package.json')) as { version: string };
  writeFileSync(path.join(driver, 'package.json'), JSON.stringify({ ...pkg, version: '3.4.10' }));
  const err = t.throws(() => assertPatchedPostgres(driver)) as Error;
  t.notMatch(err.message, '\n');
  t.match(err.message, `postgres.js at ${driver} is 3.4.10, but patches/postgres+3.4.9.patch fixes 3.4.9: run \`npm install\``);
});

t.test('the pg-boss this process loads is the patched 12.38.0, and an unpatched one fails the check', async (t) => {
  t.equal(loadedPackageRoot(PG_BOSS), path.join(ROOT, 'node_modules', 'pg-boss'));
  t.doesNotThrow(() => assertPatched(PG_BOSS));
  const { app, driver } = pristineApp(t, PG_BOSS);
  t.notMatch(read(driver, 'dist/manager.js'), 'invoicing:', 'the reversed copy is pristine');
  const err = t.throws(() => assertPatched(PG_BOSS, driver)) as Error;
  t.notMatch(err.message, '\n');
  t.match(err.message, `pg-boss at ${driver} is not patched (missing: "invoicing: a job gives its group slot back as it ends (releaseGroupSlot)" in dist/manager.js): run \`npm install\``);
  const applied = run(app, POSTINSTALL);
  t.equal(applied.status, 0, 'the postinstall patches it', { output: applied.output });
  t.equal(read(driver, 'dist/manager.js'), read(loadedPackageRoot(PG_BOSS), 'dist/manager.js'), 'dist/manager.js as installed');
  t.doesNotThrow(() => assertPatched(PG_BOSS, driver));
});
