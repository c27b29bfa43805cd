/**
 * `npm run bench`: the external API through the real web process versus the database work it
 * stands on (the ceiling, bench/ceiling.ts), at the same concurrency, in one run on one machine,
 * and that same work behind a bare Fastify route (the HTTP floor, bench/floor-server.ts): the most
 * any API on this stack reaches here. See bench/RESULTS.md.
 *
 * Environment: DATABASE_URL (a local server; a fresh database is created on it and dropped at the
 * end; without it the embedded server of .data/bench is used), DATABASE_POOL_SIZE (default 10,
 * used by both sides), BENCH_DURATION (s per side and round, default 5), BENCH_ROUNDS (default 3), BENCH_WARMUP (s,
 * default 3),
 * BENCH_CONNECTIONS (default 32). `--strict` exits 1 when API ÷ floor is below its target.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSql, type Sql } from '../src/db/client.js';
import { API_PREFIX } from '../src/http/urls.js';
import { openBenchDatabase, seedMerchant } from './db.js';
import { startWebProcess, type WebProcess } from './server.js';
import { createDraft, ITEMS, readInvoice, type CeilingTarget } from './ceiling.js';
import { runHttp, runLoops, type HttpLoad, type Measurement } from './load.js';
import { cpuBetween, cpuSnapshot } from './cpu.js';
import { combined, loadAverage, machineInfo, ratioOf, ratioLines, renderRun, table, RATIO_SECTION, type Ratio, type Row } from './report.js';
import { recordRun, RESULTS_FILE } from './results.js';
import { cleanupRegistry } from './cleanup.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TIME_BUDGET_MS = 240_000;

function intEnv(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${name} must be a whole number from 1 to ${max}`);
  return n;
}

const DURATION = intEnv('BENCH_DURATION', 5, 30);
const ROUNDS = intEnv('BENCH_ROUNDS', 3, 9);
const WARMUP = intEnv('BENCH_WARMUP', 3, 10);
const CONNECTIONS = intEnv('BENCH_CONNECTIONS', 32, 256);
const POOL = intEnv('DATABASE_POOL_SIZE', 10, 90);
const STRICT = process.argv.includes('--strict');

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

const { teardown, cleanup } = cleanupRegistry(log, TIME_BUDGET_MS);

function invoiceBody(): string {
  return JSON.stringify({
    client: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl', rut: '76.086.428-5' },
    due_date: '2030-12-31',
    items: ITEMS,
  });
}

function commandLine(): string {
  const env: string[] = [];
  if (process.env.DATABASE_URL) {
    const u = new URL(process.env.DATABASE_URL);
    if (u.password) u.password = '***';
    env.push(`DATABASE_URL=${u.toString()}`);
  }
  for (const k of ['DATABASE_POOL_SIZE', 'BENCH_DURATION', 'BENCH_WARMUP', 'BENCH_CONNECTIONS']) {
    if (process.env[k]) env.push(`${k}=${process.env[k]}`);
  }
  const cmd = process.env.npm_lifecycle_event === 'bench' ? 'npm run bench' : 'tsx bench/run.ts';
  const args = process.argv.slice(2);
  return [...env, cmd, ...(args.length ? (cmd.startsWith('npm') ? ['--', ...args] : args) : [])].join(' ');
}

function describeFailures(label: string, m: Measurement): string | null {
  if (m.failed + m.errors === 0) return null;
  const codes = Object.entries(m.statusCodes)
    .filter(([c]) => !c.startsWith('2'))
    .map(([c, n]) => `${c}×${n}`)
    .join(', ');
  return `${label}: ${m.failed} failed, ${m.errors} transport errors${codes ? ` (${codes})` : ''}${m.firstError ? `; first error: ${m.firstError}` : ''}`;
}

async function main(): Promise<number> {
  const started = Date.now();
  const db = await openBenchDatabase(log, teardown);
  log(`database ${db.name} (${db.source}), PostgreSQL ${db.serverVersion}`);
  const machine = machineInfo(db.serverVersion);

  const sql: Sql = createSql(db.url, { max: POOL, application: 'invoicing-bench-ceiling' });
  teardown(() => sql.end({ timeout: 5 }));
  const seed = await seedMerchant(sql);

  const web: WebProcess = await startWebProcess({ cwd: ROOT, databaseUrl: db.url, poolSize: POOL });
  teardown(async () => {
    await web.stop();
    log('web process stopped');
  });
  log(`web process ${web.pid} ready on ${web.baseUrl} (${Date.now() - started} ms since start)`);

  const headers = { 'x-api-key': seed.apiKey, 'content-type': 'application/json' };
  const created = await fetch(`${web.baseUrl}${API_PREFIX}/invoices`, {
    method: 'POST',
    headers: { ...headers, 'idempotency-key': 'bench-seed' },
    body: invoiceBody(),
  });
  const createdBody = (await created.json()) as { invoice_id?: string; client_id?: string };
  if (created.status !== 201 || !createdBody.invoice_id || !createdBody.client_id) {
    throw new Error(`seeding the invoice failed: ${created.status} ${JSON.stringify(createdBody)}\n${web.output()}`);
  }
  // The ceiling is handed the client the API looks up by e-mail.
  const target: CeilingTarget = {
    merchantId: seed.merchantId,
    invoiceId: createdBody.invoice_id,
    client: { id: createdBody.client_id, name: 'Comercial Andes SpA', email: 'pagos@andes.cl', rut: '76086428-5', phone: null, address: null, giro: null, comuna: null, ciudad: null },
  };
  const probe = await fetch(`${web.baseUrl}${API_PREFIX}/invoices/${target.invoiceId}`, { headers: { 'x-api-key': seed.apiKey } });
  const probeBody = (await probe.json()) as { items?: unknown[] };
  if (probe.status !== 200 || probeBody.items?.length !== 3) {
    throw new Error(`reading the seeded invoice failed: ${probe.status} ${JSON.stringify(probeBody)}`);
  }
  await readInvoice(sql, target);

  const floor: WebProcess = await startWebProcess({
    cwd: ROOT,
    databaseUrl: db.url,
    poolSize: POOL,
    script: 'bench/floor-server.ts',
    nodeArgs: ['--import', 'tsx'],
    env: { CEILING_TARGET: JSON.stringify(target) },
  });
  teardown(() => floor.stop());

  const rows: Row[] = [];
  const phase = async (label: string, pid: number | undefined, fn: () => Promise<Measurement>) => {
    log(`${label}: measuring ${DURATION} s`);
    const before = cpuSnapshot(db.name, pid);
    const m = await fn();
    const cpu = cpuBetween(before, cpuSnapshot(db.name, pid));
    const otherCpus = cpu.others / cpu.seconds;
    log(`${label}: ${m.rps.toFixed(0)} req/s, p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms, ${m.failed + m.errors} failed; other work ${otherCpus.toFixed(2)} CPUs`);
    return { m, otherCpus };
  };
  const http = (base: string, method: 'GET' | 'POST', path: string, more: Partial<HttpLoad> = {}) => (seconds: number) =>
    runHttp({ url: base, method, path, headers: { 'x-api-key': seed.apiKey }, connections: CONNECTIONS, seconds, ...more });
  const loops = (op: () => Promise<unknown>) => (seconds: number) => runLoops(op, CONNECTIONS, seconds);
  type Side = { side: Row['side']; pid: number | undefined; run: (s: number) => Promise<Measurement> };
  /**
   * A scenario's three sides, each warmed up once, then measured in ROUNDS rounds, each round the
   * three back to back in an order that turns by one per round.
   */
  const scenario = async (name: string, api: (s: number) => Promise<Measurement>, ceiling: (s: number) => Promise<Measurement>, bare: (s: number) => Promise<Measurement>) => {
    const sides: Side[] = [
      { side: 'API', pid: web.pid, run: api },
      { side: 'ceiling', pid: undefined, run: ceiling },
      { side: 'HTTP floor', pid: floor.pid, run: bare },
    ];
    for (const s of sides) {
      log(`${name} ${s.side}: warm-up ${WARMUP} s`);
      await s.run(WARMUP);
    }
    web.markRss();
    const measured = new Map<Row['side'], { m: Measurement; otherCpus: number }[]>(sides.map((s) => [s.side, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < sides.length; k++) {
        const s = sides[(round + k) % sides.length]!;
        measured.get(s.side)!.push(await phase(`${name} ${s.side} (round ${round + 1}/${ROUNDS})`, s.pid, () => s.run(DURATION)));
      }
    }
    const of = (side: Row['side']) => measured.get(side)!;
    for (const s of sides) {
      const ms = of(s.side);
      rows.push({
        scenario: name,
        side: s.side,
        m: combined(ms.map((x) => x.m)),
        otherCpus: ms.reduce((t, x) => t + x.otherCpus, 0) / ms.length,
        ...(s.side === 'API' ? { rssKb: web.peakKb() } : {}),
      });
    }
    return Array.from({ length: ROUNDS }, (_, i) => ({ api: of('API')[i]!.m, ceiling: of('ceiling')[i]!.m, floor: of('HTTP floor')[i]!.m }));
  };

  // A. GET one invoice.
  const get = await scenario(
    'GET /invoices/{id}',
    http(web.baseUrl, 'GET', `${API_PREFIX}/invoices/${target.invoiceId}`),
    loops(() => readInvoice(sql, target)),
    http(floor.baseUrl, 'GET', '/invoice'),
  );

  // B. POST one invoice with 3 items, a fresh Idempotency-Key each time.
  let counter = 0;
  const runTag = db.name.slice(-8);
  const post = await scenario(
    'POST /invoices (3 items)',
    http(web.baseUrl, 'POST', `${API_PREFIX}/invoices`, {
      headers,
      body: invoiceBody(),
      vary: () => ({ headers: { 'idempotency-key': `bench-${runTag}-${++counter}` } }),
    }),
    loops(() => createDraft(sql, target)),
    http(floor.baseUrl, 'POST', '/invoices', { headers: { 'content-type': 'application/json' }, body: invoiceBody() }),
  );

  const hwmKb = web.hwmKb();
  machine.loadAfter = loadAverage();
  const ratios = [ratioOf('GET', get, 0.85), ratioOf('POST', post, 0.5)];
  const notes = rows.map((r) => describeFailures(`${r.scenario} ${r.side}`, r.m)).filter((n): n is string => n !== null);

  const settings = `${CONNECTIONS} connections / concurrent loops, ${ROUNDS} rounds of ${DURATION} s per side after ${WARMUP} s of warm-up per side, DATABASE_POOL_SIZE=${POOL} on both sides, web process NODE_ENV=production LOG_LEVEL=warn, database: ${db.source}`;
  const report = renderRun({ date: new Date(), command: commandLine(), machine, settings, rows, ratios, hwmKb, notes });

  process.stdout.write(`\n${table(rows)}\n\n${ratioLines(ratios)}\n- Web process VmHWM: ${(hwmKb / 1024).toFixed(0)} MiB\n`);
  for (const n of notes) process.stdout.write(`- ${n}\n`);
  const [getRatio, postRatio] = ratios as [Ratio, Ratio];
  await recordRun(RATIO_SECTION, {
    run: report,
    loadBefore: machine.loadBefore,
    figures: [getRatio.ofFloor.toFixed(3), postRatio.ofFloor.toFixed(3), getRatio.ratio.toFixed(3), postRatio.ratio.toFixed(3)],
  });
  log(`wrote ${path.relative(ROOT, RESULTS_FILE)}; total ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return STRICT && ratios.some((r) => !r.floorPass) ? 1 : 0;
}

main().then(
  async (code) => {
    await cleanup();
    process.exit(code);
  },
  async (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await cleanup();
    process.exit(1);
  },
);
