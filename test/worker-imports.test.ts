// The worker stands apart from the web app: its module graph holds no HTTP server, so a change to
// routes cannot break (or bloat) the process that sends e-mails and webhooks.
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
