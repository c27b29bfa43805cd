/**
 * `npm run bench:volume` (issue 6 item 5): do the list and read endpoints stay fast when one
 * merchant has 1,000,000 invoices, and do their queries use indexes? Seeds a throw-away database,
 * drives the real web process with autocannon, EXPLAINs the exact SQL the endpoints run and
 * records the run in its section of bench/RESULTS.md.
 *
 * Environment: DATABASE_URL (local server; without it the embedded server of .data/bench),
 * VOLUME_INVOICES (default 1000000), VOLUME_DURATION (s, default 10), VOLUME_WARMUP (s, default 2),
 * DATABASE_POOL_SIZE (default 10).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { createSql, type Sql } from '../src/db/client.js';
import { getInvoiceWithItems, listInvoices, type InvoiceFilters } from '../src/invoices/queries.js';
import { API_PREFIX } from '../src/http/urls.js';
import { openBenchDatabase, seedMerchant } from './db.js';
import { startWebProcess, type WebProcess } from './server.js';
import { runHttp, type HttpLoad, type Measurement } from './load.js';
import { loadAverage, machineInfo } from './report.js';
import { recordRun, RESULTS_FILE, type Section } from './results.js';
import { cleanupRegistry } from './cleanup.js';
import { intEnv } from './settings.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const INVOICES = intEnv('VOLUME_INVOICES', 1_000_000, 10_000, 5_000_000);
const DURATION = intEnv('VOLUME_DURATION', 10, 1, 60);
const WARMUP = intEnv('VOLUME_WARMUP', 2, 1, 30);
const POOL = intEnv('DATABASE_POOL_SIZE', 10, 1, 90);
const CLIENTS = 3_000;
const CHUNK = 100_000;
const GET_CONNECTIONS = 16;
const BULK_CONNECTIONS = 4;
const BULK_SIZE = 50;
const GET_P99_TARGET_MS = 50;
const BULK_P50_TARGET_MS = 200;
const UPDATED_SINCE_MATCHES = 3_000;
const PAGE_OFFSET = 10_000;
// Seeding plus ~7 measured scenarios fits well inside this; past it the database is dropped anyway.
const TIME_BUDGET_MS = 20 * 60_000;

const log = (msg: string) => process.stderr.write(`[volume] ${msg}\n`);

const { teardown, cleanup } = cleanupRegistry(log, TIME_BUDGET_MS);

/**
 * One chunk of invoices [from, to) and their single item, in one statement. Everything is derived
 * from the series number so the data is reproducible apart from ids, tokens and the random dates.
 */
async function seedChunk(sql: Sql, merchantId: string, from: number, to: number): Promise<void> {
  await sql.unsafe(
    `WITH g AS (
       SELECT n,
              -- Spread over ~2 years in the order the rows are written, as invoices created over
              -- time are (a table's pages follow its creation times), give or take an hour.
              now() - interval '730 days' * (1 - n::float8 / ${INVOICES}) - random() * interval '1 hour' AS created_at,
              (ARRAY['draft','draft','sent','sent','viewed','paid','paid','paid','overdue','cancelled'])[1 + (hashint4(n) & 2147483647) % 10] AS status,
              (hashint4(n + 7) & 2147483647) % ${CLIENTS} AS c,
              ((n % 997) + 1) * 1000 AS subtotal
         FROM generate_series($2::int, $3::int - 1) AS n
     ), ins AS (
       INSERT INTO invoices (id, merchant_id, client_id, client_name, client_email, invoice_number,
                             external_reference, status, currency, issue_date, due_date, is_tax_exempt,
                             tax_inclusive, tax_rate, subtotal, tax_total, total, amount_paid, public_token,
                             locale, sent_at, paid_at, cancelled_at, created_at, updated_at)
       SELECT gen_random_uuid(), $1::uuid, md5($1::text || ':client:' || g.c)::uuid,
              'Cliente Volumen ' || g.c, 'cliente' || g.c || '@volumen.example',
              CASE WHEN g.status <> 'draft' THEN 'INV-' || lpad(g.n::text, 7, '0') END,
              CASE WHEN g.n % 5 = 0 THEN 'ext-' || g.n END,
              g.status, 'CLP', g.created_at::date, g.created_at::date + 30, false, false, 19.00,
              g.subtotal, round(g.subtotal * 0.19), g.subtotal + round(g.subtotal * 0.19),
              CASE WHEN g.status = 'paid' THEN g.subtotal + round(g.subtotal * 0.19) ELSE 0 END,
              'vol_' || g.n || '_' || md5(random()::text),
              'es',
              CASE WHEN g.status <> 'draft' THEN g.created_at END,
              CASE WHEN g.status = 'paid' THEN g.created_at + interval '10 days' END,
              CASE WHEN g.status = 'cancelled' THEN g.created_at + interval '3 days' END,
              g.created_at,
              -- Most invoices change within weeks of creation, so few are updated recently.
              least(now(), g.created_at + random() * interval '40 days')
         FROM g
       RETURNING id, subtotal
     )
     INSERT INTO invoice_items (id, invoice_id, position, description, quantity, unit_price, line_total)
     SELECT gen_random_uuid(), ins.id, 0, 'Servicio mensual', 1, ins.subtotal, ins.subtotal FROM ins`,
    [merchantId, from, to],
  );
}

async function seedVolume(sql: Sql, merchantId: string): Promise<{ seconds: number; analyzeSeconds: number }> {
  const t0 = performance.now();
  await sql.unsafe(
    `INSERT INTO clients (id, merchant_id, name, email, created_at, updated_at)
     SELECT md5($1::text || ':client:' || c)::uuid, $1::uuid, 'Cliente Volumen ' || c, 'cliente' || c || '@volumen.example',
            now() - interval '731 days', now() - interval '731 days'
       FROM generate_series(0, ${CLIENTS - 1}) AS c`,
    [merchantId],
  );
  const chunks: [number, number][] = [];
  for (let from = 1; from <= INVOICES; from += CHUNK) chunks.push([from, Math.min(INVOICES + 1, from + CHUNK)]);
  // Two writers: more only queue behind the same WAL and index pages on a small machine.
  let next = 0;
  const writer = async () => {
    while (next < chunks.length) {
      const [from, to] = chunks[next++]!;
      const c0 = performance.now();
      await seedChunk(sql, merchantId, from, to);
      log(`seeded invoices ${from}..${to - 1} in ${((performance.now() - c0) / 1000).toFixed(1)} s`);
    }
  };
  await Promise.all([writer(), writer()]);
  // Keeps later invoice numbers (send_immediately) clear of the seeded ones.
  await sql.unsafe(`UPDATE invoice_counters SET last_number = $2 WHERE merchant_id = $1`, [merchantId, INVOICES]);
  const seconds = (performance.now() - t0) / 1000;
  const a0 = performance.now();
  // VACUUM too: a table that has been live for two years has its visibility map set.
  await sql.unsafe(`VACUUM (ANALYZE) invoices`);
  await sql.unsafe(`VACUUM (ANALYZE) invoice_items`);
  await sql.unsafe(`ANALYZE clients`);
  // And on disk: the seed's gigabyte of dirty pages is written now, not by a checkpoint that
  // would run through the measurements (an old table's pages were written long ago).
  await sql.unsafe(`CHECKPOINT`);
  return { seconds, analyzeSeconds: (performance.now() - a0) / 1000 };
}

interface Captured {
  query: string;
  params: unknown[];
}

/**
 * The statement a query function sends, taken from postgres.js's debug hook, so the plan shown is
 * the one for the SQL the endpoint really runs rather than a hand-copied approximation.
 */
async function capture(url: string, run: (db: Sql) => Promise<unknown>): Promise<Captured> {
  const seen: Captured[] = [];
  const db = postgres(url, {
    max: 1,
    onnotice: () => {},
    debug: (_conn: number, query: string, params: unknown[]) => {
      seen.push({ query, params: [...params] });
    },
  }) as unknown as Sql;
  try {
    await run(db);
  } finally {
    await db.end({ timeout: 5 });
  }
  const last = seen.at(-1);
  if (!last) throw new Error('no statement captured');
  return last;
}

async function explain(sql: Sql, c: Captured): Promise<string> {
  const rows = await sql.unsafe<{ 'QUERY PLAN': string }[]>(`EXPLAIN (ANALYZE, BUFFERS) ${c.query}`, c.params as never[]);
  return rows.map((r) => r['QUERY PLAN']).join('\n');
}

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '–');

interface Scenario {
  name: string;
  path: string;
  vary?: HttpLoad['vary'];
  /** The query function call the endpoint makes, for the plan. */
  query: (db: Sql) => Promise<unknown>;
}

async function main(): Promise<number> {
  const started = Date.now();
  const db = await openBenchDatabase(log, teardown);
  log(`database ${db.name} (${db.source}), PostgreSQL ${db.serverVersion}`);
  const machine = machineInfo(db.serverVersion);
  log(`load average before: ${machine.loadBefore}`);

  const sql: Sql = createSql(db.url, { max: 4, application: 'invoicing-bench-volume' });
  teardown(() => sql.end({ timeout: 5 }));
  const seed = await seedMerchant(sql);
  log(`seeding ${INVOICES} invoices`);
  const seeded = await seedVolume(sql, seed.merchantId);
  const [{ invoices: invoiceCount, items: itemCount, size }] = await sql.unsafe<{ invoices: string; items: string; size: string }[]>(
    `SELECT (SELECT count(*) FROM invoices)::text AS invoices, (SELECT count(*) FROM invoice_items)::text AS items,
            pg_size_pretty(pg_total_relation_size('invoices') + pg_total_relation_size('invoice_items')) AS size`,
  ) as unknown as [{ invoices: string; items: string; size: string }];
  log(`seeded ${invoiceCount} invoices / ${itemCount} items (${size}) in ${fmt(seeded.seconds)} s; vacuum, analyze and checkpoint ${fmt(seeded.analyzeSeconds)} s`);

  const ids = (await sql.unsafe<{ id: string }[]>(`SELECT id FROM invoices TABLESAMPLE SYSTEM (2) LIMIT 10000`)).map((r) => r.id);
  const [{ since }] = (await sql.unsafe(
    `SELECT updated_at AS since FROM invoices WHERE merchant_id = $1 ORDER BY updated_at DESC OFFSET ${UPDATED_SINCE_MATCHES - 1} LIMIT 1`,
    [seed.merchantId],
  )) as unknown as [{ since: Date }];
  const updatedSince = since.toISOString();
  const [{ n: sinceMatches }] = (await sql.unsafe(`SELECT count(*)::int AS n FROM invoices WHERE merchant_id = $1 AND updated_at >= $2`, [
    seed.merchantId,
    updatedSince,
  ])) as unknown as [{ n: number }];
  const [{ n: paidCount }] = (await sql.unsafe(`SELECT count(*)::int AS n FROM invoices WHERE merchant_id = $1 AND status = 'paid'`, [
    seed.merchantId,
  ])) as unknown as [{ n: number }];

  const web: WebProcess = await startWebProcess({ cwd: ROOT, databaseUrl: db.url, poolSize: POOL });
  teardown(async () => {
    await web.stop();
    log('web process stopped');
  });
  log(`web process ${web.pid} ready on ${web.baseUrl}`);
  const auth = { 'x-api-key': seed.apiKey };

  const pick = () => ids[Math.floor(Math.random() * ids.length)]!;
  const m = seed.merchantId;
  const list = (f: InvoiceFilters, offset = 0) => (d: Sql) => listInvoices(d, m, f, 50, offset);
  const scenarios: Scenario[] = [
    { name: 'GET /invoices (first page)', path: `${API_PREFIX}/invoices`, query: list({}) },
    { name: `GET /invoices?offset=${PAGE_OFFSET}`, path: `${API_PREFIX}/invoices?offset=${PAGE_OFFSET}`, query: list({}, PAGE_OFFSET) },
    {
      name: `GET /invoices/{id} (${ids.length} random ids)`,
      path: `${API_PREFIX}/invoices/${ids[0]}`,
      vary: () => ({ path: `${API_PREFIX}/invoices/${pick()}` }),
      query: (d) => getInvoiceWithItems(d, m, ids[0]!),
    },
    { name: `GET /invoices?status=paid (${paidCount} match)`, path: `${API_PREFIX}/invoices?status=paid`, query: list({ status: 'paid' }) },
    {
      name: `GET /invoices?updated_since=… (${sinceMatches} match)`,
      path: `${API_PREFIX}/invoices?updated_since=${encodeURIComponent(updatedSince)}`,
      query: list({ updated_since: updatedSince }),
    },
  ];

  const rows: { s: Scenario; m: Measurement; pass: boolean }[] = [];
  const plans: { name: string; sql: Captured; plan: string; seqScan: boolean }[] = [];
  for (const s of scenarios) {
    const probe = await fetch(`${web.baseUrl}${s.path}`, { headers: auth });
    if (probe.status !== 200) throw new Error(`${s.name}: probe answered ${probe.status} ${await probe.text()}`);
    const load = (seconds: number) =>
      runHttp({ url: web.baseUrl, method: 'GET', headers: auth, path: s.path, vary: s.vary, connections: GET_CONNECTIONS, seconds, timeout: 30 });
    log(`${s.name}: warm-up ${WARMUP} s`);
    await load(WARMUP);
    log(`${s.name}: measuring ${DURATION} s`);
    const meas = await load(DURATION);
    const pass = meas.p99 < GET_P99_TARGET_MS && meas.failed + meas.errors === 0;
    log(`${s.name}: ${fmt(meas.rps, 0)} req/s, p50 ${fmt(meas.p50, 2)} ms, p99 ${fmt(meas.p99, 2)} ms, ${meas.failed + meas.errors} failed → ${pass ? 'PASS' : 'FAIL'}`);
    rows.push({ s, m: meas, pass });

    const captured = await capture(db.url, s.query);
    const plan = await explain(sql, captured);
    plans.push({ name: s.name, sql: captured, plan, seqScan: /Seq Scan on invoices\b/.test(plan) });
  }

  // Bulk: 50 invoices for existing clients (looked up by e-mail), a fresh Idempotency-Key each call.
  const bulkBody = JSON.stringify({
    invoices: Array.from({ length: BULK_SIZE }, (_, i) => ({
      client: { name: `Cliente Volumen ${i * 37}`, email: `cliente${i * 37}@volumen.example` },
      due_date: '2030-12-31',
      items: [{ description: 'Servicio mensual', quantity: 1, unit_price: 10000 + i }],
    })),
  });
  let counter = 0;
  const bulkLoad = (seconds: number) =>
    runHttp({
      url: web.baseUrl,
      method: 'POST',
      timeout: 30,
      headers: { ...auth, 'content-type': 'application/json' },
      path: `${API_PREFIX}/invoices/bulk`,
      body: bulkBody,
      vary: () => ({ headers: { 'idempotency-key': `volume-${db.name}-${++counter}` } }),
      connections: BULK_CONNECTIONS,
      seconds,
    });
  const bulkProbe = await fetch(`${web.baseUrl}${API_PREFIX}/invoices/bulk`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': 'volume-probe' },
    body: bulkBody,
  });
  const probeBody = (await bulkProbe.json()) as { succeeded?: number };
  if (bulkProbe.status !== 200 || probeBody.succeeded !== BULK_SIZE) {
    throw new Error(`bulk probe: ${bulkProbe.status} ${JSON.stringify(probeBody).slice(0, 500)}`);
  }
  log(`bulk: warm-up ${WARMUP} s`);
  await bulkLoad(WARMUP);
  log(`bulk: measuring ${DURATION} s`);
  const bulk = await bulkLoad(DURATION);
  const bulkPass = bulk.p50 < BULK_P50_TARGET_MS && bulk.failed + bulk.errors === 0;
  log(`bulk: ${fmt(bulk.rps, 1)} calls/s, p50 ${fmt(bulk.p50, 1)} ms, p99 ${fmt(bulk.p99, 1)} ms → ${bulkPass ? 'PASS' : 'FAIL'}`);

  machine.loadAfter = loadAverage();
  const when = new Date();
  const failures = [...rows.map((r) => ({ name: r.s.name, m: r.m })), { name: 'POST /invoices/bulk', m: bulk }]
    .filter((r) => r.m.failed + r.m.errors > 0)
    .map(
      (r) =>
        `- ${r.name}: ${r.m.failed} non-2xx (${JSON.stringify(r.m.statusCodes)}), ${r.m.errors} transport errors${r.m.firstError ? `; first: ${r.m.firstError}` : ''}`,
    );
  const section = [
    `### Volume run of ${when.toISOString()}`,
    '',
    `- Command: \`${process.env.npm_lifecycle_event === 'bench:volume' ? 'npm run bench:volume' : 'tsx bench/volume.ts'}\`, database: ${db.source}`,
    `- Machine: ${machine.nproc} CPU(s) (${machine.cpu}), ${machine.memory} RAM, Node ${machine.node}, PostgreSQL ${machine.postgres}`,
    `- Load average (1/5/15 min) before: ${machine.loadBefore}; after: ${machine.loadAfter} (other engineers' tests share the machine)`,
    `- Data: 1 merchant, ${invoiceCount} invoices, ${itemCount} items, ${CLIENTS} clients, ${size} (invoices + items with indexes)`,
    `- Seed: ${fmt(seeded.seconds)} s (INSERT … SELECT generate_series, ${CHUNK} per statement, 2 writers, indexes in place); VACUUM ANALYZE and CHECKPOINT ${fmt(seeded.analyzeSeconds)} s`,
    `- Settings: GETs at ${GET_CONNECTIONS} connections, ${DURATION} s measured after ${WARMUP} s warm-up; web process DATABASE_POOL_SIZE=${POOL}, NODE_ENV=production`,
    '',
    '| Scenario | req/s | p50 ms | p99 ms | ok | failed / errors | target | result |',
    '|---|---:|---:|---:|---:|---:|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.s.name} | ${fmt(r.m.rps, 0)} | ${fmt(r.m.p50, 2)} | ${fmt(r.m.p99, 2)} | ${r.m.ok} | ${r.m.failed} / ${r.m.errors} | p99 < ${GET_P99_TARGET_MS} ms | ${r.pass ? 'PASS' : 'FAIL'} |`,
    ),
    `| POST /invoices/bulk (${BULK_SIZE} invoices, ${BULK_CONNECTIONS} connections) | ${fmt(bulk.rps, 1)} calls/s (${fmt(bulk.rps * BULK_SIZE, 0)} invoices/s) | ${fmt(bulk.p50, 1)} | ${fmt(bulk.p99, 1)} | ${bulk.ok} | ${bulk.failed} / ${bulk.errors} | p50 < ${BULK_P50_TARGET_MS} ms | ${bulkPass ? 'PASS' : 'FAIL'} |`,
    '',
    ...failures,
    `- updated_since instant: ${updatedSince}`,
    `- Plans: ${plans.some((p) => p.seqScan) ? `**Seq Scan on invoices in: ${plans.filter((p) => p.seqScan).map((p) => p.name).join(', ')}**` : 'no Seq Scan on invoices in any scenario'}. EXPLAIN (ANALYZE, BUFFERS) of the statement listInvoices/getInvoiceWithItems send (captured with postgres.js debug), run once after the load with the same parameters (a custom plan; the web process's prepared statements may switch to a generic plan after 5 runs): under Plans below.`,
  ].join('\n');

  process.stdout.write(`\n${section}\n`);
  const planText = plans
    .flatMap((p) => [
      `#### ${p.name}`,
      '',
      `Parameters: \`${JSON.stringify(p.sql.params)}\``,
      '',
      '```sql',
      p.sql.query.replace(/\n\s*\n/g, '\n').trim(),
      '```',
      '',
      '```',
      p.plan,
      '```',
      '',
    ])
    .join('\n');
  const p99 = (name: string) => fmt(rows.find((r) => r.s.name.startsWith(name))?.m.p99 ?? NaN, 1);
  await recordRun(VOLUME_SECTION, {
    run: section,
    loadBefore: machine.loadBefore,
    figures: [p99('GET /invoices (first'), p99('GET /invoices?offset'), p99('GET /invoices/{id}'), fmt(bulk.p50, 1), plans.some((p) => p.seqScan) ? '**yes**' : 'no'],
    plans: planText,
  });
  log(`wrote ${path.relative(ROOT, RESULTS_FILE)}; total ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return rows.every((r) => r.pass) && bulkPass ? 0 : 1;
}

const VOLUME_SECTION: Section = {
  id: 'volume',
  history: ['list p99 ms', 'page 10,000 p99 ms', 'read p99 ms', 'bulk p50 ms', 'Seq Scan'],
  intro: `## Volume (npm run bench:volume)

Produced by \`npm run bench:volume\` (bench/volume.ts). Each run seeds a
throw-away database with one merchant holding 1,000,000 invoices (one item each, a few thousand
clients, mixed statuses, created in row order over ~2 years give or take an hour, updated within 40 days;
runs before 2026-11-24T01:30Z spread creation times at random over the rows), then drives the real web process with
autocannon: the invoice list (first page, a deep page, status and updated_since filters) and
single-invoice reads at 16 connections (target p99 < 50 ms), and POST /invoices/bulk with 50
invoices per call at 4 connections (target p50 < 200 ms). Each run also records
EXPLAIN (ANALYZE, BUFFERS) of the exact SQL the list/read endpoints send: those must use indexes,
never a Seq Scan on invoices. Latencies are per request, in ms, measured by the client; the
machine is shared, so note the load average of each run.
`,
};

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
