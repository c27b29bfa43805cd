/**
 * `npm run bench:events` (docs/decisions.md §18): the events API and the retention purge at a
 * platform's volume. Against a fresh database it loads BENCH_EVENTS events (default 10,000,000)
 * spread over 400 days and 10 merchants, each with its webhook delivery and one attempt log (0.1 %
 * of the deliveries failed), then, through the real web process (built, as the Procfile runs it):
 *
 * - the latency of GET /events for the merchant with a tenth of them (the first page, a page from
 *   a random cursor, one type, two types, a one-day window, delivery_success=false) and of
 *   GET /events/{id}, each asked one after another (p50, p99 of BENCH_EVENTS_SAMPLES each);
 * - the purge of the oldest month (retention 370 days of the 400) while the API serves a mixed
 *   load (GET /events, POST /clients, which writes an event), with the API's p99 during the purge
 *   beside its p99 under the same load without it.
 *
 * Records the run in its section of bench/RESULTS.md. Environment: DATABASE_URL (a local server;
 * without it the embedded server of .data/bench), BENCH_EVENTS, BENCH_EVENTS_SAMPLES (default 300).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSql, type Sql } from '../src/db/client.js';
import { purgeExpiredEvents } from '../src/retention/purge.js';
import { apiRequest } from './api-client.js';
import { cleanupRegistry } from './cleanup.js';
import { openBenchDatabase, seedMerchant, type Seed } from './db.js';
import { Latencies } from './load.js';
import { loadAverage, machineInfo } from './report.js';
import { recordRun, RESULTS_FILE, type Section } from './results.js';
import { startWebProcess, type WebProcess } from './server.js';
import { intEnv } from './settings.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const EVENTS = intEnv('BENCH_EVENTS', 10_000_000, 10_000, 100_000_000);
const SAMPLES = intEnv('BENCH_EVENTS_SAMPLES', 300, 20, 100_000);
const MERCHANTS = 10;
const SPAN_DAYS = 400;
const RETENTION_DAYS = 370;
const CHUNK = 500_000;
const LOAD_CONNECTIONS = 8;
const BASELINE_SECONDS = 30;
const TYPES = ['invoice.created', 'invoice.sent', 'invoice.paid', 'client.created', 'invoice.overdue', 'invoice.dte_accepted'];

const log = (msg: string) => process.stderr.write(`[events] ${msg}\n`);
const scope = cleanupRegistry(log, 3 * 60 * 60_000);

/**
 * The events, deliveries and attempts of [from, to) of the series, in one statement. Ids are
 * UUIDv7 made from each row's time, as the API makes them, so that they sort as time does.
 */
async function loadChunk(sql: Sql, merchants: string[], endpoints: string[], from: number, to: number, start: Date): Promise<void> {
  const spanMs = SPAN_DAYS * 86_400_000;
  await sql`
    WITH ev AS (
      INSERT INTO events (id, merchant_id, type, payload, created_at)
      SELECT x.id, x.merchant_id, x.type,
             json_build_object('id', x.id, 'type', x.type, 'created_at', to_char(x.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                               'api_version', 'v1', 'is_test', false,
                               'data', json_build_object('object', json_build_object('id', gen_random_uuid(), 'invoice_number', 'INV-' || lpad(x.i::text, 6, '0'),
                                                                                     'total', '119000.00', 'currency', 'CLP', 'status', 'sent'))),
             x.created_at
        FROM (SELECT i, ts AS created_at, (${merchants}::uuid[])[1 + i % ${MERCHANTS}] AS merchant_id,
                     (${TYPES}::text[])[1 + (i * 7 + i / ${MERCHANTS}) % ${TYPES.length}] AS type,
                     (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7' || substr(md5(i::text), 1, 3) || '8' || substr(md5(i::text), 4, 15))::uuid AS id
                FROM generate_series(${from}::bigint, ${to - 1}::bigint) AS i,
                     LATERAL (SELECT ${start}::timestamptz + (i * ${spanMs / EVENTS}::double precision) * interval '1 millisecond' AS ts) t) x
      RETURNING id, merchant_id, type, payload, created_at),
    d AS (
      INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, event_type, payload, status, attempts, max_attempts, last_response_status, completed_at, created_at, updated_at)
      SELECT (lpad(to_hex((extract(epoch FROM ev.created_at) * 1000)::bigint), 12, '0') || '7' || substr(md5('d' || ev.id::text), 1, 3) || '8' || substr(md5('d' || ev.id::text), 4, 15))::uuid,
             ev.merchant_id, (${endpoints}::uuid[])[array_position(${merchants}::uuid[], ev.merchant_id)], ev.id, ev.type, ev.payload::text,
             CASE WHEN hashtext(ev.id::text) % 1000 = 0 THEN 'failed' ELSE 'success' END, 1, 8,
             CASE WHEN hashtext(ev.id::text) % 1000 = 0 THEN 500 ELSE 200 END, ev.created_at, ev.created_at, ev.created_at
        FROM ev
      RETURNING id, created_at, last_response_status)
    INSERT INTO webhook_attempts (id, delivery_id, attempt_number, started_at, duration_ms, request_url, request_headers, response_status)
    SELECT (lpad(to_hex((extract(epoch FROM d.created_at) * 1000)::bigint), 12, '0') || '7' || substr(md5('a' || d.id::text), 1, 3) || '8' || substr(md5('a' || d.id::text), 4, 15))::uuid,
           d.id, 1, d.created_at, 40, 'https://erp.example/hooks', '{}'::jsonb, d.last_response_status
      FROM d`;
}

interface Timing {
  p50: number;
  p99: number;
  n: number;
}

async function timed(samples: number, call: (i: number) => Promise<{ status: number; text: string }>): Promise<Timing> {
  const latencies = new Latencies();
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    const res = await call(i);
    latencies.add(performance.now() - t0);
    if (res.status !== 200) throw new Error(`answered ${res.status}: ${res.text.slice(0, 300)}`);
  }
  const [p50, p99] = latencies.percentiles(50, 99);
  return { p50: p50!, p99: p99!, n: latencies.count };
}

let clientSeq = 0;

/** LOAD_CONNECTIONS loops of the mixed load until `done()` says stop; each answer's latency kept. */
async function mixedLoad(web: WebProcess, seed: Seed, done: () => boolean): Promise<Timing & { failed: number; rps: number }> {
  const latencies = new Latencies();
  let failed = 0;
  const started = performance.now();
  const loop = async (c: number) => {
    for (let i = 0; !done(); i++) {
      const t0 = performance.now();
      const res =
        i % 2 === 0
          ? await apiRequest(web.baseUrl, seed.apiKey, 'GET', '/events?limit=50')
          : await apiRequest(web.baseUrl, seed.apiKey, 'POST', '/clients', { name: `Cliente ${c}-${i}`, email: `c${++clientSeq}@bench.example` });
      if (res.status >= 200 && res.status < 300) latencies.add(performance.now() - t0);
      else failed++;
    }
  };
  await Promise.all(Array.from({ length: LOAD_CONNECTIONS }, (_, c) => loop(c)));
  const [p50, p99] = latencies.percentiles(50, 99);
  return { p50: p50!, p99: p99!, n: latencies.count, failed, rps: latencies.count / ((performance.now() - started) / 1000) };
}

const ms = (n: number) => `${n.toFixed(1)} ms`;

export const EVENTS_SECTION: Section = {
  id: 'events',
  intro: `## Events API and retention (npm run bench:events)

Produced by \`npm run bench:events\` (bench/events.ts) against a fresh database holding the
stated number of events over 400 days and 10 merchants, each event with its webhook delivery and
one attempt log. GET /events is measured for the merchant with a tenth of them, one request
after another; the purge removes the oldest month (retention 370 days) while 8 loops of mixed
API load (GET /events, POST /clients) run, beside the same load without it. Target
(docs/decisions.md §18): the list and each filter at p99 < 50 ms.`,
  history: ['Events', 'List p99', 'Worst filter p99', 'Purge of a month', 'API p99 without / during purge'],
};

async function main() {
  const db = await openBenchDatabase(log, scope.teardown);
  const machine = machineInfo(db.serverVersion);
  const sql = createSql(db.url, { max: 4, application: 'invoicing-bench-events', synchronousCommit: false });
  scope.teardown(() => sql.end({ timeout: 5 }));
  const seeds: Seed[] = [];
  for (let i = 0; i < MERCHANTS; i++) seeds.push(await seedMerchant(sql));
  const merchants = seeds.map((s) => s.merchantId);
  const endpoints: string[] = [];
  for (const merchantId of merchants) {
    const [row] = await sql<{ id: string }[]>`
      INSERT INTO webhook_endpoints (id, merchant_id, url, secret_encrypted, secret_prefix, created_at, updated_at)
      VALUES (gen_random_uuid(), ${merchantId}, 'https://erp.example/hooks', '\\x00'::bytea, 'whsec_be', now() - interval '500 days', now())
      RETURNING id`;
    endpoints.push(row!.id);
  }

  const start = new Date(Date.now() - SPAN_DAYS * 86_400_000);
  const loadStarted = performance.now();
  // Loaded without the secondary indexes, which are then built once each: maintaining a dozen
  // indexes row by row would make the load take hours. The primary keys stay: the load's own
  // joins use them.
  const indexes = await sql<{ name: string; definition: string }[]>`
    SELECT i.indexname AS name, i.indexdef AS definition FROM pg_indexes i
     WHERE i.schemaname = 'public' AND i.tablename IN ('events', 'webhook_deliveries', 'webhook_attempts')
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)`;
  for (const { name } of indexes) await sql.unsafe(`DROP INDEX "${name}"`);
  for (let from = 0; from < EVENTS; from += CHUNK) {
    await loadChunk(sql, merchants, endpoints, from, Math.min(EVENTS, from + CHUNK), start);
    log(`loaded ${Math.min(EVENTS, from + CHUNK).toLocaleString('en')} events with their deliveries and attempts`);
  }
  for (const { name, definition } of indexes) {
    await sql.begin(async (tx) => {
      await tx`SET LOCAL maintenance_work_mem = '512MB'`;
      await tx.unsafe(definition);
    });
    log(`built ${name}`);
  }
  await sql`ANALYZE`;
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  const [sizes] = await sql<{ events: string; deliveries: string; attempts: string }[]>`
    SELECT pg_size_pretty(pg_total_relation_size('events')) AS events,
           pg_size_pretty(pg_total_relation_size('webhook_deliveries')) AS deliveries,
           pg_size_pretty(pg_total_relation_size('webhook_attempts')) AS attempts`;
  log(`loaded in ${loadSeconds.toFixed(0)} s: ${JSON.stringify(sizes)}`);

  const web = await startWebProcess({ cwd: ROOT, databaseUrl: db.url, poolSize: 10, env: { EVENT_RETENTION_DAYS: String(RETENTION_DAYS) } });
  scope.teardown(() => web.stop());
  const measured = seeds[0]!;
  const cursors = (await sql<{ id: string }[]>`
    SELECT id FROM events WHERE merchant_id = ${measured.merchantId} ORDER BY random() LIMIT ${SAMPLES}`).map((r) => r.id);
  const day = (i: number) => {
    const from = new Date(start.getTime() + ((i * 7919) % (SPAN_DAYS - 1)) * 86_400_000);
    return `created_gte=${encodeURIComponent(from.toISOString())}&created_lt=${encodeURIComponent(new Date(from.getTime() + 86_400_000).toISOString())}`;
  };
  const get = (route: string) => apiRequest(web.baseUrl, measured.apiKey, 'GET', route);
  await timed(20, () => get('/events'));
  const scenarios: [string, (i: number) => Promise<{ status: number; text: string }>][] = [
    ['GET /events (first page of 50)', () => get('/events')],
    ['GET /events?starting_after= (a random event)', (i) => get(`/events?starting_after=${cursors[i % cursors.length]}`)],
    ['GET /events?type=invoice.paid', () => get('/events?type=invoice.paid')],
    ['GET /events?type=invoice.paid,client.created', () => get('/events?type=invoice.paid,client.created')],
    ['GET /events?created_gte=&created_lt= (a random day)', (i) => get(`/events?${day(i)}`)],
    ['GET /events?delivery_success=false', () => get('/events?delivery_success=false')],
    ['GET /events/{id} (a random event)', (i) => get(`/events/${cursors[i % cursors.length]}`)],
  ];
  const results: [string, Timing][] = [];
  for (const [name, call] of scenarios) {
    const r = await timed(SAMPLES, call);
    results.push([name, r]);
    log(`${name}: p50 ${ms(r.p50)}, p99 ${ms(r.p99)}`);
  }

  log(`mixed load without the purge, ${BASELINE_SECONDS} s`);
  const baselineEnd = performance.now() + BASELINE_SECONDS * 1000;
  const baseline = await mixedLoad(web, measured, () => performance.now() > baselineEnd);
  log('purging the oldest month under the same load');
  let purging = true;
  const purgeStarted = performance.now();
  const purge = purgeExpiredEvents(sql, RETENTION_DAYS).finally(() => (purging = false));
  const during = await mixedLoad(web, measured, () => !purging);
  const removed = await purge;
  const purgeSeconds = (performance.now() - purgeStarted) / 1000;
  log(`purge: ${JSON.stringify(removed)} in ${purgeSeconds.toFixed(1)} s`);

  const worst = results.filter(([name]) => name.includes('?')).reduce((a, b) => (b[1].p99 > a[1].p99 ? b : a));
  const machineLine = `${machine.nproc} CPUs (${machine.cpu}), ${machine.memory}, Node ${machine.node}, PostgreSQL ${machine.postgres}; load before ${machine.loadBefore}, after ${loadAverage()}`;
  const run = [
    `### Latest run: ${new Date().toISOString()}`,
    '',
    `Machine: ${machineLine}. Command: \`npm run bench:events\` (BENCH_EVENTS=${EVENTS}, BENCH_EVENTS_SAMPLES=${SAMPLES}).`,
    '',
    `Loaded ${EVENTS.toLocaleString('en')} events, as many deliveries and attempt logs, in ${loadSeconds.toFixed(0)} s: events ${sizes!.events}, deliveries ${sizes!.deliveries}, attempts ${sizes!.attempts}. The measured merchant has ${(EVENTS / MERCHANTS).toLocaleString('en')}.`,
    '',
    '| Request | p50 | p99 | n | target p99 |',
    '|---|---:|---:|---:|---|',
    ...results.map(([name, r]) => `| ${name} | ${ms(r.p50)} | ${ms(r.p99)} | ${r.n} | ${r.p99 < 50 ? '< 50 ms: PASS' : '< 50 ms: FAIL'} |`),
    '',
    `Purge of the oldest month (retention ${RETENTION_DAYS} days): ${removed.events.toLocaleString('en')} events, ${removed.deliveries.toLocaleString('en')} deliveries with their attempts, ${removed.emails} e-mails in ${purgeSeconds.toFixed(1)} s.`,
    '',
    '| Mixed API load (8 loops: GET /events, POST /clients) | p50 | p99 | req/s | failed |',
    '|---|---:|---:|---:|---:|',
    `| without the purge (${BASELINE_SECONDS} s) | ${ms(baseline.p50)} | ${ms(baseline.p99)} | ${baseline.rps.toFixed(0)} | ${baseline.failed} |`,
    `| during the purge (${purgeSeconds.toFixed(0)} s) | ${ms(during.p50)} | ${ms(during.p99)} | ${during.rps.toFixed(0)} | ${during.failed} |`,
  ].join('\n');
  process.stdout.write(`${run}\n`);
  await recordRun(EVENTS_SECTION, {
    run,
    loadBefore: machine.loadBefore,
    figures: [
      EVENTS.toLocaleString('en'),
      ms(results[0]![1].p99),
      `${ms(worst[1].p99)} (${worst[0].replace(/^GET \/events/, '')})`,
      `${purgeSeconds.toFixed(0)} s`,
      `${ms(baseline.p99)} / ${ms(during.p99)}`,
    ],
  });
  log(`recorded in ${RESULTS_FILE}`);
}

main()
  .catch((err) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exitCode = 1;
  })
  .finally(() => scope.cleanup());
