// The npm audit gate (.ci/audit.mjs, issue 6 item 4) run for real: npm audit against an advisory
// service on a local port that answers as the registry's bulk endpoint does. The registry this
// suite usually reaches refuses that endpoint, so the gate's "unavailable" path is proved too.
import t from 'tap';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { gunzipSync } from 'node:zlib';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

interface Advisory {
  severity: 'low' | 'moderate' | 'high' | 'critical';
  title: string;
}

/** An advisory service: `advisories` by package name, or an HTTP status the bulk endpoint answers. */
async function advisoryService(t: { teardown(fn: () => unknown): void }, answer: Record<string, Advisory> | number) {
  const asked: string[][] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.includes('/security/advisories/bulk')) {
        res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      if (typeof answer === 'number') {
        res.writeHead(answer).end();
        return;
      }
      const raw = Buffer.concat(chunks);
      const body = JSON.parse((req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8')) as Record<string, string[]>;
      asked.push(Object.keys(body));
      const found: Record<string, unknown[]> = {};
      let id = 1;
      for (const [name, adv] of Object.entries(answer)) {
        if (!body[name]) continue;
        found[name] = [{ id: id++, url: `https://advisories.example/${name}`, title: adv.title, severity: adv.severity, vulnerable_versions: '<1000.0.0', cwe: [], cvss: { score: 0, vectorString: null } }];
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(found));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { registry: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, asked };
}

/** Runs the gate with npm pointed at `registry` and a cache of its own: npm caches audit answers. */
function gate(t: { teardown(fn: () => unknown): void }, registry: string, env: Record<string, string> = {}): Promise<{ code: number; out: string }> {
  const cache = mkdtempSync(path.join(tmpdir(), 'audit-cache-'));
  t.teardown(() => rmSync(cache, { recursive: true, force: true }));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['.ci/audit.mjs'],
      { cwd: ROOT, env: { ...process.env, npm_config_registry: registry, npm_config_cache: cache, ...env }, timeout: 120_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

t.test('a high advisory against a production dependency fails the gate, naming it', async (t) => {
  const svc = await advisoryService(t, { fastify: { severity: 'high', title: 'Request smuggling' } });
  const { code, out } = await gate(t, svc.registry);
  t.equal(code, 1, out);
  t.match(out, /- fastify \[high\]: Request smuggling \(https:\/\/advisories\.example\/fastify\)/);
  t.ok(svc.asked[0]?.includes('fastify'), 'the installed tree was sent to the service');
});

t.test('a critical advisory fails it too', async (t) => {
  const svc = await advisoryService(t, { 'bignumber.js': { severity: 'critical', title: 'Wrong sums' } });
  const { code, out } = await gate(t, svc.registry);
  t.equal(code, 1, out);
  t.match(out, /bignumber\.js \[critical\]: Wrong sums/);
});

t.test('moderate and low advisories are reported as a count but do not block', async (t) => {
  const svc = await advisoryService(t, { fastify: { severity: 'moderate', title: 'Slow regex' }, pino: { severity: 'low', title: 'Noise' } });
  const { code, out } = await gate(t, svc.registry);
  t.equal(code, 0, out);
  // Both packages, and the packages that depend on fastify, are counted.
  const lower = /no high or critical advisory in \d+ production dependencies; (\d+) packages with moderate or low ones/.exec(out);
  t.ok(lower && Number(lower[1]) >= 2, out);
});

t.test('development dependencies are not audited: they never reach a dyno', async (t) => {
  const svc = await advisoryService(t, { tap: { severity: 'critical', title: 'Test runner flaw' } });
  const { code, out } = await gate(t, svc.registry);
  t.equal(code, 0, out);
  t.ok(svc.asked.length > 0 && svc.asked.every((names) => !names.includes('tap')), 'tap was not sent');
});

t.test('an advisory service that cannot be asked is said so; AUDIT_REQUIRED=true makes that a failure', async (t) => {
  const svc = await advisoryService(t, 405);
  const lenient = await gate(t, svc.registry);
  t.equal(lenient.code, 0, lenient.out);
  t.match(lenient.out, /advisories unavailable \(405 Method Not Allowed/);
  const strict = await gate(t, svc.registry, { AUDIT_REQUIRED: 'true' });
  t.equal(strict.code, 1, strict.out);
  t.match(strict.out, /AUDIT_REQUIRED=true, failing/);
});
