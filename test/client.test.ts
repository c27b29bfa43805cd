// The official client (@invoicing/client) against the document the API serves: its generated types
// are what openapi-typescript makes of that document today (regenerate with
// `npm run client:generate`), and its build runs in plain Node, as an integrator's code would.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { SCHEMA_FILE, typesOf } from '../sdk/generate.js';
import { signatureHeader } from '../src/webhooks/signature.js';
import { testApp } from './helpers/app.js';

const run = promisify(execFile);

t.test('sdk/schema.ts is what openapi-typescript generates from the served document', async (t) => {
  const h = await testApp(t);
  const res = await h.app.inject({ url: '/api/v1/external/docs/openapi.json' });
  t.equal(res.statusCode, 200);
  const generated = await typesOf(res.json());
  const committed = await readFile(SCHEMA_FILE, 'utf8');
  // On a difference, the first differing line says where the document moved.
  const a = generated.split('\n');
  const b = committed.split('\n');
  const line = a.findIndex((l, i) => l !== b[i]);
  t.equal(line, -1, line < 0 ? 'no drift' : `line ${line + 1}: document says ${JSON.stringify(a[line])}, schema.ts says ${JSON.stringify(b[line])}; run npm run client:generate`);
  t.ok(generated === committed, 'byte for byte');
});

t.test('the built package runs in plain Node: client calls and webhook verification', async (t) => {
  const secret = 'whsec_' + 'a'.repeat(32);
  const body = JSON.stringify({ id: 'e1', type: 'invoice.paid' });
  const now = Math.floor(Date.now() / 1000);
  const script = `
    import { createInvoicingClient, constructWebhookEvent, WebhookVerificationError } from '@invoicing/client';
    import { verifyWebhookSignature } from '@invoicing/client/webhooks';
    const [body, header, secret, stale] = process.argv.slice(1);
    const out = { type: constructWebhookEvent(body, header, secret).type };
    try { verifyWebhookSignature(body, stale, secret); } catch (e) { out.stale = e instanceof WebhookVerificationError && e.reason; }
    try { verifyWebhookSignature(body + ' ', header, secret); } catch (e) { out.altered = e.reason; }
    try { createInvoicingClient({ baseUrl: 'http://127.0.0.1:1/api/v1/external', apiKey: 'k' }); } catch (e) { out.prefix = e.message.includes('without /api/v1/external'); }
    out.client = typeof createInvoicingClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k' }).GET;
    console.log(JSON.stringify(out));`;
  // No loader: the package's own JavaScript, resolved through its exports as a dependent resolves it.
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script, body, signatureHeader(secret, now, body), secret, signatureHeader(secret, now - 301, body)], {
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  t.same(JSON.parse(stdout), { type: 'invoice.paid', stale: 'timestamp_out_of_tolerance', altered: 'no_matching_signature', prefix: true, client: 'function' });
});

t.test("the README's TypeScript client example compiles under tsc --strict against the package", async (t) => {
  const readme = await readFile('README.md', 'utf8');
  const section = readme.slice(readme.indexOf('\n## TypeScript client'));
  const example = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  t.ok(example?.includes('createInvoicingClient'), 'the section has its example');

  const dir = await mkdtemp(path.join(tmpdir(), 'client-readme-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  await writeFile(
    path.join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], types: ['node'], strict: true, noEmit: true },
      files: ['example.ts', 'retry.ts'],
    }),
  );
  await writeFile(path.join(dir, 'example.ts'), example ?? '');
  // The package types `retry` by its pattern: an integrator switches on its three forms.
  await writeFile(
    path.join(dir, 'retry.ts'),
    `import { createInvoicingClient } from '@invoicing/client';
const api = createInvoicingClient({ baseUrl: 'http://localhost:3000', apiKey: 'k' });
const got = await api.GET('/api/v1/external/me');
if (got.error) {
  const retry: 'never' | 'safe' | \`after_seconds:\${number}\` = got.error.retry;
  // @ts-expect-error a string of another form is no retry
  const later: typeof got.error.retry = 'later';
  console.log(retry, later, got.error.details);
}
export {};
`,
  );
  // The package and @types/node, installed as in an integrator's project.
  await symlink(path.resolve('node_modules'), path.join(dir, 'node_modules'), 'dir');
  const tsc = path.resolve('sdk/node_modules/typescript/bin/tsc');
  const output = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir }).then(
    () => '',
    (err: { stdout?: string; stderr?: string }) => `${err.stdout ?? ''}${err.stderr ?? ''}`,
  );
  t.equal(output, '', 'no compiler message');
});
