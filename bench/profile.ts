/**
 * `tsx bench/profile.ts`: diagnostics behind bench/run.ts's ratios (not part of `npm run bench`).
 *
 * 1. The database work of each API request replayed straight through postgres.js, one statement
 *    group at a time, to price the idempotency and event statements and each extra round trip.
 * 2. HTTP floors (GET /healthz) and CPU accounting (bench process / web process / rest) while the
 *    API is under load, to see which process the CPUs go to.
 * 3. A V8 CPU profile of the web process under steady load: GET one invoice, GET a page of 50,
 *    POST (bench/cpu-profile-hook.ts).
 *
 * Same environment as run.ts (DATABASE_URL or embedded; PROFILE_SECONDS, default 5;
 * PROFILE_SECTIONS, e.g. `2,3`, default all three).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { createSql, type Sql } from '../src/db/client.js';
import { emitEvent } from '../src/events/emit.js';
import { createInvoice } from '../src/invoices/create.js';
import { createdResponse, invoiceResource } from '../src/invoices/resource.js';
import type { InvoiceDeps } from '../src/invoices/transitions.js';
import { createInvoiceBody } from '../src/invoices/schemas.js';
import { ApiKeyStore } from '../src/http/auth.js';
import { lookupKey, requestHash, storeAnswer } from '../src/http/idempotency.js';
import { API_PREFIX } from '../src/http/urls.js';
import { openBenchDatabase, seedMerchant } from './db.js';
import { startWebProcess, type WebProcess } from './server.js';
import { runHttp, runLoops, type Measurement } from './load.js';
import { cpuBetween, cpuSnapshot, type CpuSnapshot } from './cpu.js';
import { createDraft, insertDraft, ITEMS, readInvoice, type CeilingTarget } from './ceiling.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SECONDS = Number(process.env.PROFILE_SECONDS ?? 5);
const CONN = 32;
const POOL = Number(process.env.DATABASE_POOL_SIZE ?? 10);
const SECTIONS = new Set((process.env.PROFILE_SECTIONS ?? '1,2,3').split(',').map((n) => n.trim()));
const log = (msg: string) => process.stderr.write(`[profile] ${msg}\n`);
const out = (line = '') => process.stdout.write(`${line}\n`);

const BODY = { client: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl', rut: '76.086.428-5' }, due_date: '2030-12-31', items: ITEMS };

function row(label: string, m: Measurement, extra: string): void {
  out(`| ${label} | ${m.rps.toFixed(0)} | ${m.p50.toFixed(2)} | ${m.p99.toFixed(2)} | ${m.failed + m.errors} | ${extra} |`);
}

const HEAD = [
  '| Variant | ops/s | p50 ms | p99 ms | failed | CPU µs per op: this process / web / postgres / **total** | rest of machine busy |',
  '|---|---:|---:|---:|---:|---|---:|',
];

/** CPU µs per operation by process, and the share of the machine used by everything else. */
function cpuCost(a: CpuSnapshot, b: CpuSnapshot, ops: number): string {
  const c = cpuBetween(a, b);
  const us = (x: number) => ((x / Math.max(1, ops)) * 1e6).toFixed(0);
  return `${us(c.self)} / ${us(c.web)} / ${us(c.pg)} / **${us(c.self + c.web + c.pg)}** | ${((c.others / c.seconds) * 100).toFixed(0)}%`;
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

function where(url: string): string {
  if (!url) return '(native/gc)';
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1);
  return url;
}

/** Self time by package/file, top functions by self time, and inclusive time of our functions. */
async function summariseProfile(file: string, label: string): Promise<void> {
  const prof = JSON.parse(await readFile(file, 'utf8')) as { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[] };
  const totalSamples = prof.samples.length;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfCount = new Map<number, number>();
  for (const s of prof.samples) selfCount.set(s, (selfCount.get(s) ?? 0) + 1);

  const byPlace = new Map<string, number>();
  const byFn = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, count] of selfCount) {
    const n = byId.get(id)!;
    const place = n.callFrame.functionName === '(idle)' ? '(idle)' : n.callFrame.functionName === '(garbage collector)' ? '(gc)' : where(n.callFrame.url);
    byPlace.set(place, (byPlace.get(place) ?? 0) + count);
    const fn = `${n.callFrame.functionName || '(anonymous)'} ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + count);
    // Inclusive: every distinct src/ function on the stack gets the sample.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      const w = where(f.url);
      const key = w.startsWith('src/') ? `${f.functionName || '(anonymous)'} ${w}` : w.startsWith('node_modules') ? '' : '';
      if (key && !seen.has(key)) {
        seen.add(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + count);
      }
    }
  }
  const idle = byPlace.get('(idle)') ?? 0;
  const busy = totalSamples - idle;
  const pct = (n: number) => `${((n / busy) * 100).toFixed(1)}%`;
  const wallS = (prof.endTime - prof.startTime) / 1e6;
  out(`\n#### CPU profile of the web process: ${label}`);
  out(`${totalSamples} samples over ${wallS.toFixed(1)} s; ${((busy / totalSamples) * 100).toFixed(0)}% of samples on-CPU (percentages below are of on-CPU samples)\n`);
  out('Self time by package / file:\n');
  for (const [k, v] of [...byPlace].filter(([k]) => k !== '(idle)').sort((a, b) => b[1] - a[1]).slice(0, 16)) out(`- ${k}: ${pct(v)}`);
  out('\nTop functions by self time:\n');
  for (const [k, v] of [...byFn].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, 20)) out(`- ${k}: ${pct(v)}`);
  out('\nInclusive (synchronous) time of src/ functions:\n');
  for (const [k, v] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 20)) out(`- ${k}: ${pct(v)}`);
}

async function main(): Promise<void> {
  const db = await openBenchDatabase(log);
  const sql = createSql(db.url, { max: POOL, application: 'invoicing-bench-profile' });
  let web: WebProcess | null = null;
  const profDir = await mkdtemp(path.join(os.tmpdir(), 'invoicing-prof-'));
  try {
    const seed = await seedMerchant(sql);
    const auth = (await new ApiKeyStore(sql).lookup(seed.apiKey))!;
    // No pg-boss handle: these invoices are never sent, so nothing is queued.
    const deps = { urls: { apiBase: `http://127.0.0.1${API_PREFIX}`, publicBase: 'http://127.0.0.1' } } as unknown as InvoiceDeps;
    const input = createInvoiceBody.parse(BODY);
    const first = await sql.begin((tx) => createInvoice(tx, auth.merchant, input, deps));
    const invoiceId = first.id;
    const client = { id: first.client_id, name: first.client_name, email: first.client_email, rut: first.client_rut, phone: null, address: null, giro: null, comuna: null, ciudad: null };

    out(`## Diagnostics (${SECONDS} s per line, ${CONN} concurrent, pool ${POOL}, load average ${os.loadavg().map((n) => n.toFixed(2)).join(' / ')})\n`);
    let keyN = 0;
    if (SECTIONS.has('1')) {
      out('### 1. Database work only (postgres.js in this process, no HTTP)\n');
      HEAD.forEach((l) => out(l));
      // Statements per operation, counted by a one-connection pool with postgres.js's debug hook
      // (BEGIN and COMMIT included).
      let statements = 0;
      const counting = postgres(db.url, {
        max: 1,
        onnotice: () => {},
        debug: () => {
          statements++;
        },
      }) as unknown as Sql;
      await counting`SELECT 1`; // the connection's own start-up queries are not counted
      const loops = async (label: string, op: (s: Sql) => Promise<unknown>) => {
        statements = 0;
        await op(counting);
        const perOp = statements;
        await runLoops(() => op(sql), CONN, 1);
        const a = cpuSnapshot(db.name);
        const m = await runLoops(() => op(sql), CONN, SECONDS);
        row(`${label} [${perOp} statements]`, m, cpuCost(a, cpuSnapshot(db.name), m.ok));
        return m;
      };
      const target: CeilingTarget = { merchantId: seed.merchantId, invoiceId, client };
      await loops('G0 getInvoiceWithItems (= GET ceiling)', (s) => readInvoice(s, target));
      await loops('G1 SELECT 1 → getInvoiceWithItems (the price of one more round trip)', async (s) => {
        await s`SELECT 1`;
        await readInvoice(s, target);
      });

      await loops('G2 getInvoiceWithItems → invoiceResource → JSON.stringify (the route\'s own JS, no HTTP/auth/rate limit)', async (s) =>
        JSON.stringify(invoiceResource(await readInvoice(s, target), deps.urls)),
      );

      const route = `POST ${API_PREFIX}/invoices`;
      const hash = requestHash(BODY);
      await loops('P0 BEGIN; insertInvoice; COMMIT (= POST ceiling)', (s) => createDraft(s, target));
      await loops("P1 the API's POST database work: tx{lookupKey, client, invoice+items, event, storeAnswer}", (s) =>
        s.begin(async (tx) => {
          const key = `prof-${++keyN}`;
          await lookupKey(tx, seed.merchantId, route, key, hash);
          const r = await createInvoice(tx, auth.merchant, input, deps);
          await storeAnswer(tx, seed.merchantId, route, key, hash, 201, JSON.stringify(createdResponse(r, deps.urls)));
        }),
      );
      await loops('P2 createInvoice alone in a transaction (no idempotency)', (s) => s.begin((tx) => createInvoice(tx, auth.merchant, input, deps)));
      await loops('P3 BEGIN; insertInvoice; INSERT events (small payload); COMMIT', (s) =>
        s.begin(async (tx) => {
          await insertDraft(tx, target);
          await emitEvent(tx, deps.boss, seed.merchantId, 'invoice.created', { object: {} });
        }),
      );
      await counting.end({ timeout: 5 });
    }

    const keyHeaders = { 'x-api-key': seed.apiKey };
    if (SECTIONS.has('2')) {
      out('\n### 2. HTTP through the web process (autocannon in this process)\n');
      HEAD.forEach((l) => out(l));
      web = await startWebProcess({ cwd: ROOT, databaseUrl: db.url, poolSize: POOL });
      const http = async (label: string, pathName: string, headers: Record<string, string>, method: 'GET' | 'POST' = 'GET', body?: string) => {
        const load = (seconds: number) =>
          runHttp({
            url: web!.baseUrl, method, path: pathName, headers, body, connections: CONN, seconds,
            ...(method === 'POST' ? { vary: () => ({ headers: { 'idempotency-key': `h-${++keyN}` } }) } : {}),
          });
        await load(1);
        const a = cpuSnapshot(db.name, web!.pid);
        const m = await load(SECONDS);
        row(label, m, cpuCost(a, cpuSnapshot(db.name, web!.pid), m.ok));
      };
      await http('H0 GET /healthz (no auth, no database)', '/healthz', {});
      await http('H1 GET /invoices/{id}', `${API_PREFIX}/invoices/${invoiceId}`, keyHeaders);
      await http('H2 GET /invoices/{id} status summary (/status: no items, fewer fields)', `${API_PREFIX}/invoices/${invoiceId}/status`, keyHeaders);
      await http('H3 POST /invoices', `${API_PREFIX}/invoices`, { ...keyHeaders, 'content-type': 'application/json' }, 'POST', JSON.stringify(BODY));
      await web.stop();
      web = null;
    }

    if (SECTIONS.has('3')) {
      // Steady-state CPU profiles: the hook starts the profiler after warm-up and writes it before stop.
      const profileFile = path.join(profDir, 'web.cpuprofile');
      web = await startWebProcess({
        cwd: ROOT,
        databaseUrl: db.url,
        poolSize: POOL,
        nodeArgs: ['--import', 'tsx', '--import', './bench/cpu-profile-hook.ts'],
        env: { BENCH_CPU_PROFILE: profileFile },
      });
      // A full list page needs 50 invoices.
      for (let i = 0; i < 50; i++) {
        await fetch(`${web.baseUrl}${API_PREFIX}/invoices`, { method: 'POST', headers: { ...keyHeaders, 'content-type': 'application/json' }, body: JSON.stringify(BODY) });
      }
      const scenarios = [
        ['GET /invoices/{id}', 'GET', `${API_PREFIX}/invoices/${invoiceId}`],
        ['GET /invoices (a page of 50)', 'GET', `${API_PREFIX}/invoices?limit=50`],
        ['POST /invoices', 'POST', `${API_PREFIX}/invoices`],
      ] as const;
      for (const [label, method, urlPath] of scenarios) {
        const load = (seconds: number) =>
          runHttp({
            url: web!.baseUrl, method, connections: CONN, seconds,
            path: urlPath,
            headers: method === 'GET' ? keyHeaders : { ...keyHeaders, 'content-type': 'application/json' },
            ...(method === 'POST' ? { body: JSON.stringify(BODY), vary: () => ({ headers: { 'idempotency-key': `c-${++keyN}` } }) } : {}),
          });
        await load(2);
        await rm(profileFile, { force: true });
        process.kill(web.pid, 'SIGUSR2');
        await new Promise((r) => setTimeout(r, 200));
        const m = await load(SECONDS);
        process.kill(web.pid, 'SIGUSR2');
        for (let i = 0; i < 50 && !existsSync(profileFile); i++) await new Promise((r) => setTimeout(r, 100));
        if (existsSync(profileFile)) await summariseProfile(profileFile, `${label}, steady load (${m.rps.toFixed(0)} req/s during the profile)`);
        else out(`(no CPU profile written for ${label})`);
    }
    await web.stop();
    web = null;
    }
  } finally {
    await web?.stop();
    await sql.end({ timeout: 5 });
    await db.cleanup();
    await rm(profDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
