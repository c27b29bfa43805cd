import { spawn } from 'node:child_process';
import path from 'node:path';
import { startEmbedded } from '../src/db/embedded.js';
import { ensureChromium } from './helpers/chromium-install.js';

/**
 * `npm test`: the tap suite against DATABASE_URL's server when set, otherwise against an embedded
 * PostgreSQL started for the run (data in .data/test) and stopped after it; with Chromium found or
 * installed for the browser tests.
 */
async function main(): Promise<number> {
  // The webhook tests' HTTPS receiver has a self-signed certificate; deliveries trust it the way
  // a deployment trusts a private CA: through NODE_EXTRA_CA_CERTS, read when node starts.
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_EXTRA_CA_CERTS: path.resolve('test/helpers/tls/receiver.crt') };
  const chromium = ensureChromium((line) => process.stdout.write(`${line}\n`));
  if ('path' in chromium) env.CHROMIUM_PATH = chromium.path;
  else {
    env.CHROMIUM_PROBLEM = chromium.problem;
    process.stdout.write(`# ${chromium.problem}\n`);
  }
  let stop = async () => {};
  if (!env.DATABASE_URL && !env.TEST_DATABASE_URL) {
    const embedded = await startEmbedded(path.resolve('.data/test'));
    env.TEST_DATABASE_URL = embedded.url;
    stop = embedded.stop;
  }
  const server = new URL(env.TEST_DATABASE_URL ?? env.DATABASE_URL!);
  process.stdout.write(`# database server ${server.host}\n`);
  const tap = spawn(path.resolve('node_modules/.bin/tap'), process.argv.slice(2), { env, stdio: 'inherit' });
  const code = await new Promise<number>((resolve) => tap.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0))));
  await stop();
  return code;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
