// The worker stands apart from the web app: its module graph holds no HTTP server, so a change to
// routes cannot break (or bloat) the process that sends e-mails and webhooks. And a new job is one
// file in jobs/ plus its line in jobs/index.ts, which these tests hold the worker to.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { build } from 'esbuild';

t.test('jobs/worker.ts reaches neither the Fastify app nor fastify itself', async (t) => {
  const result = await build({
    entryPoints: ['jobs/worker.ts'],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs);
  t.ok(inputs.includes('jobs/worker.ts') && inputs.includes('src/webhooks/delivery.ts'), 'the graph was walked');
  const imports = Object.values(result.metafile.inputs).flatMap((i) => i.imports.map((x) => x.path));
  t.same(inputs.filter((f) => /^src\/(app|server|routes|main)\.ts$|^src\/http\/(auth|api)/.test(f)), [], 'no web module');
  t.same([...new Set(imports.filter((p) => /^(fastify|@fastify\/|@trpc\/)/.test(p)))], [], 'no HTTP framework package');
  // E-mail composition and delivery are domain work: their links come in with their deps.
  const email = Object.entries(result.metafile.inputs).filter(([f]) => f.startsWith('src/email/'));
  t.ok(email.some(([f]) => f === 'src/email/deliver.ts'), 'src/email is in the graph');
  t.same(
    email.flatMap(([f, i]) => i.imports.filter((x) => /^src\/http\/|^(fastify|@fastify\/)/.test(x.path)).map((x) => `${f} -> ${x.path}`)),
    [],
    'src/email imports neither src/http nor fastify',
  );
});

t.test('every file in jobs/ declares one job, named after its queue, and the worker registers it', async (t) => {
  const { jobs } = await import('../jobs/index.js');
  const { queues } = await import('../src/queue/boss.js');
  const files = (await readdir('jobs')).filter((f) => f.endsWith('.ts') && f !== 'worker.ts' && f !== 'index.ts').sort();
  t.ok(files.length > 0, 'jobs/ was read');
  for (const file of files) {
    const declared = ((await import(`../jobs/${file.replace(/\.ts$/, '.js')}`)) as { job?: (typeof jobs)[number] }).job;
    t.equal(declared?.queue.name, file.replace(/\.ts$/, ''), `${file} exports the job of its queue`);
    t.ok(declared && jobs.includes(declared), `${file}'s job is in jobs/index.ts`);
  }
  t.equal(jobs.length, files.length, 'jobs/index.ts lists no job twice and none from elsewhere');
  t.same(jobs.map((j) => j.queue.name).sort(), Object.values(queues).map((q) => q.name).sort(), "src/queue/boss.ts's queue names are the jobs' queues");
});

t.test('jobs/worker.ts stays a short registry and entry point', async (t) => {
  const lines = (await readFile('jobs/worker.ts', 'utf8')).split('\n').length - 1;
  t.ok(lines <= 150, `jobs/worker.ts has ${lines} lines (at most 150)`);
});

t.test('only the process entries of src import jobs/', async (t) => {
  const sources = (await readdir('src', { recursive: true })).filter((f) => f.endsWith('.ts') && !f.includes('node_modules'));
  const importers: string[] = [];
  for (const f of sources) if (/from '(\.\.\/)+jobs\//.test(await readFile(path.join('src', f), 'utf8'))) importers.push(`src/${f}`);
  t.same(importers.sort(), ['src/cli.ts', 'src/main.ts'], 'the release step and `npm start` hand jobs/ to src, nothing else reaches it');
});
