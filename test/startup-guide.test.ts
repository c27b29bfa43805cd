// A newcomer's first minute: `npm start` says in plain words where the reference is, where the
// data and the e-mails go, whether the console is on, and, while there is no merchant, how to make
// the first one and its key; `GET /` leads to the reference; `.env` is read, the process
// environment winning over it.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_ENV, testApp } from './helpers/app.js';
import { createTestDatabase } from './helpers/db.js';
import { until } from './helpers/until.js';
import { readEnvFile } from '../src/env-file.js';
import { startupGuide } from '../src/startup-guide.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ADMIN_TOKEN = 'a'.repeat(40);

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

t.test('the guide: the reference, the data, the e-mails, the console and the first merchant', async (t) => {
  const config = { publicBaseUrl: 'http://localhost:3000', SMTP_URL: undefined, DATA_DIR: './.data', ADMIN_TOKEN: undefined };
  const fresh = startupGuide({ config, embeddedDataDir: '/var/lib/invoicing-api/x/pg', hasMerchant: false });
  t.match(fresh, 'Reference:  http://localhost:3000/api/v1/external/docs');
  t.match(fresh, 'embedded PostgreSQL, its data in /var/lib/invoicing-api/x/pg');
  t.match(fresh, `written to ${path.resolve('./.data/outbox')} (read them with npm run --silent cli -- outbox list)`);
  t.match(fresh, 'Console:    off; set ADMIN_TOKEN');
  t.match(fresh, 'npm run --silent cli -- merchants create --name');
  t.match(fresh, "npm run --silent cli -- keys create --merchant MERCHANT_ID --scopes '*'");

  const running = startupGuide({ config: { ...config, SMTP_URL: 'smtp://mail:25', ADMIN_TOKEN }, embeddedDataDir: null, hasMerchant: true });
  t.match(running, 'the server of DATABASE_URL');
  t.match(running, 'sent through SMTP_URL');
  t.match(running, 'Console:    http://localhost:3000/admin');
  t.notMatch(running, 'merchants create', 'no first-merchant commands once there is one');
});

t.test('.env fills what the environment lacks; the environment wins; no file is no error', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'env-file-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, '.env');
  await writeFile(file, '# a comment\nPORT=4000\nEMAIL_FROM="Facturas <f@andes.cl>"\nLOG_LEVEL=debug\n');
  const env: NodeJS.ProcessEnv = { PORT: '3000' };
  readEnvFile(file, env);
  t.same(env, { PORT: '3000', EMAIL_FROM: 'Facturas <f@andes.cl>', LOG_LEVEL: 'debug' });
  const untouched: NodeJS.ProcessEnv = { PORT: '1' };
  readEnvFile(path.join(dir, 'missing.env'), untouched);
  t.same(untouched, { PORT: '1' });
});

t.test('GET / leads to the reference', async (t) => {
  const h = await testApp(t);
  const res = await h.app.inject({ url: '/' });
  t.equal(res.statusCode, 302);
  t.equal(res.headers.location, '/api/v1/external/docs');
  t.equal((await h.app.inject({ url: res.headers.location as string })).statusCode, 200);
});

t.test('npm start, from a folder with a .env, prints the guide once and serves on the environment\'s port', async (t) => {
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  const cwd = await mkdtemp(path.join(os.tmpdir(), 'start-'));
  t.teardown(() => rm(cwd, { recursive: true, force: true }));
  const port = await freePort();
  // The .env turns the console on and names a port the environment overrides.
  await writeFile(path.join(cwd, '.env'), `ADMIN_TOKEN=${ADMIN_TOKEN}\nPORT=1\n`);
  const { DATABASE_URL: _, TEST_DATABASE_URL: __, ADMIN_TOKEN: ___, ...inherited } = process.env;
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), path.join(ROOT, 'src/main.ts')], {
    cwd,
    env: { ...inherited, ENCRYPTION_KEY: TEST_ENV.ENCRYPTION_KEY, DATABASE_URL: db.url, PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  await until('the guide', () => out.includes('No merchant yet'), 60_000).catch(() => t.fail(out));
  t.match(out, `Invoicing API ready at http://127.0.0.1:${port}`);
  t.match(out, `Console:    http://127.0.0.1:${port}/admin`, "the .env's ADMIN_TOKEN was read");
  t.match(out, 'the server of DATABASE_URL');
  t.equal(out.split('Invoicing API ready').length, 2, 'printed once');
  const home = await fetch(`http://127.0.0.1:${port}/`, { redirect: 'manual' });
  t.equal(home.status, 302, "served on the environment's port, not the .env's");
  t.equal(home.headers.get('location'), '/api/v1/external/docs');
});
