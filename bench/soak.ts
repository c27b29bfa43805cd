/**
 * `npm run bench:soak` (issue 6 item 6): 10 minutes of mixed load (creates, reads, lists, sends,
 * payments, the webhooks and e-mails they cause, and a known share of requests that must fail) on
 * one web and one worker process, as the Procfile runs them, against a fresh database. Passes when
 * the RSS of both processes grows < 10 % between minute 2 and minute 10 (20 % and 100 % of other
 * lengths), every response is the one its request asked for, and after the drain every e-mail and
 * webhook arrived exactly once with no job left. Records the run in its section of bench/RESULTS.md.
 *
 * Environment: DATABASE_URL (local server; without it the embedded server of .data/bench),
 * SOAK_SECONDS (default 600), SOAK_LOOPS (concurrent request loops, default 8), SOAK_ITERATION_MS
 * (each loop starts an iteration at most this often, default 500).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSql } from '../src/db/client.js';
import { openBenchDatabase, seedMerchant } from './db.js';
import { loadAverage, machineInfo } from './report.js';
import { recordRun, RESULTS_FILE, type Section } from './results.js';
import { rssAt, rssGrowth, runSoak, type Growth, type SoakResult } from './soak-load.js';
import { cleanupRegistry } from './cleanup.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TARGET_PCT = 10;
// Minute 2 of 10: the growth before it is warm-up (JIT, pools, heap sizing), not a leak.
const FROM_FRACTION = 0.2;

function setting(name: string, fallback: number, min: number, max: number): number {
  const n = Number(process.env[name] || fallback);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be a whole number from ${min} to ${max}`);
  return n;
}
const SECONDS = setting('SOAK_SECONDS', 600, 30, 7_200);
const LOOPS = setting('SOAK_LOOPS', 8, 1, 64);
const ITERATION_MS = setting('SOAK_ITERATION_MS', 500, 0, 10_000);

const log = (msg: string) => process.stderr.write(`[soak] ${msg}\n`);

const scope = cleanupRegistry(log);
const { cleanup } = scope;

const mib = (kb: number) => `${(kb / 1024).toFixed(0)} MiB`;
const at = (s: number) => (s % 60 === 0 ? `minute ${s / 60}` : `${s} s`);

function rssTable(r: SoakResult, g: { web: Growth; worker: Growth; window: number; from: number }): string[] {
  const row = (name: string, x: Growth) =>
    `| ${name} | ${mib(x.fromKb)} | ${mib(x.toKb)} | ${x.pct >= 0 ? '+' : ''}${x.pct.toFixed(1)} % | < ${TARGET_PCT} % | ${x.pct < TARGET_PCT ? 'PASS' : 'FAIL'} |`;
  const marks = Array.from({ length: 10 }, (_, i) => Math.round((r.seconds * (i + 1)) / 10));
  const peak = (which: 'webKb' | 'workerKb') => mib(Math.max(...r.samples.map((s) => s[which])));
  return [
    `| Process | RSS at ${at(g.from)} | RSS at ${at(r.seconds)} | growth | target | result |`,
    '|---|---:|---:|---:|---|---|',
    row('web (src/server.ts)', g.web),
    row('worker (jobs/worker.ts)', g.worker),
    '',
    `RSS at a mark is the lowest 1-second VmRSS sample in the ${g.window} s ending there: what a collection leaves, which a leak raises and a crest of the heap does not. Over the run (median and lowest sample of each window):`,
    '',
    `| | ${marks.map(at).join(' | ')} | peak |`,
    `|---|${marks.map(() => '---:').join('|')}|---:|`,
    ...(['webKb', 'workerKb'] as const).flatMap((which) => {
      const name = which === 'webKb' ? 'web' : 'worker';
      return [
        `| ${name}, median | ${marks.map((m) => mib(rssAt(r.samples, m, g.window, which))).join(' | ')} | ${peak(which)} |`,
        `| ${name}, lowest | ${marks.map((m) => mib(rssAt(r.samples, m, g.window, which, true))).join(' | ')} | |`,
      ];
    }),
    '',
    `The last ${Math.min(60, r.samples.length)} samples, web / worker MiB: ${r.samples
      .slice(-60)
      .map((s) => `${Math.round(s.webKb / 1024)}/${Math.round(s.workerKb / 1024)}`)
      .join(' ')}`,
  ];
}

function requestTable(r: SoakResult): string[] {
  return [
    '| Request | expected | answered | p50 ms | p99 ms | result |',
    '|---|---:|---|---:|---:|---|',
    ...r.requests.map((k) => {
      const answered = Object.entries(k.byStatus).map(([status, n]) => `${n} × ${status === '0' ? 'no answer' : status}`).join(', ') || '–';
      const ok = Object.keys(k.byStatus).every((s) => Number(s) === k.expected);
      return `| ${k.kind} | ${k.expected} | ${answered} | ${k.p50.toFixed(1)} | ${k.p99.toFixed(1)} | ${ok ? 'PASS' : 'FAIL'} |`;
    }),
  ];
}

async function main(): Promise<number> {
  const db = await openBenchDatabase(log, scope.teardown);
  log(`database ${db.name} (${db.source}), PostgreSQL ${db.serverVersion}`);
  const machine = machineInfo(db.serverVersion);
  const sql = createSql(db.url, { max: 4, application: 'invoicing-bench-soak' });
  scope.teardown(() => sql.end({ timeout: 5 }));
  const seed = await seedMerchant(sql);
  log(`${SECONDS} s of load, ${LOOPS} loops, an iteration every ${ITERATION_MS} ms each`);

  const r = await runSoak(scope, {
    cwd: ROOT,
    databaseUrl: db.url,
    sql,
    apiKey: seed.apiKey,
    seconds: SECONDS,
    loops: LOOPS,
    iterationMs: ITERATION_MS,
    drainTimeoutMs: 300_000,
    log,
  });
  machine.loadAfter = loadAverage();

  const g = rssGrowth(r, FROM_FRACTION);
  const rssPass = g.web.pct < TARGET_PCT && g.worker.pct < TARGET_PCT;
  const pass = rssPass && r.problems.length === 0;
  const e = r.emails;
  const w = r.webhooks;
  const settings = [
    `${LOOPS} loops, each starting an iteration at most every ${ITERATION_MS} ms: create (Idempotency-Key) and read;`,
    'in every 10 iterations one idempotent replay and one send, in 20 one mark-paid (half of the sent), one invalid create',
    '(422) and one read of an unknown id (404), in 25 one mark-paid of a draft (409), in 4 one list;',
    'a webhook endpoint subscribed to every event; web DATABASE_POOL_SIZE=10; both processes NODE_ENV=production, `node --import tsx src/server.ts` and `node --import tsx jobs/worker.ts`',
  ].join(' ');
  const section = [
    `### Soak run of ${new Date().toISOString()}`,
    '',
    `- Command: \`${process.env.SOAK_SECONDS ? `SOAK_SECONDS=${SECONDS} ` : ''}npm run bench:soak\`, database: ${db.source}`,
    `- Machine: ${machine.nproc} CPU(s) (${machine.cpu}), ${machine.memory} RAM, Node ${machine.node}, PostgreSQL ${machine.postgres}`,
    `- Load average (1/5/15 min) before: ${machine.loadBefore}; after: ${machine.loadAfter} (other engineers' tests share the machine)`,
    `- Settings: ${settings}`,
    `- Result: **${pass ? 'PASS' : 'FAIL'}**`,
    '',
    ...rssTable(r, g),
    '',
    `${r.totalRequests} requests in ${SECONDS} s (${(r.totalRequests / SECONDS).toFixed(1)} req/s); ${r.unexpectedCount} answered other than asked:`,
    '',
    ...requestTable(r),
    '',
    ...r.unexpected.map((u) => `- Unexpected: \`${u.replace(/`/g, "'")}\``),
    `- Invoices: ${r.invoicesCreated} created, ${r.invoicesSent} sent, ${r.invoicesPaid} paid`,
    `- Queue: ${r.backlogAtEnd} job(s) pending when the load stopped; drained in ${r.drainSeconds.toFixed(1)} s; jobs left after: ${r.stuckJobs.length === 0 ? 'none' : JSON.stringify(r.stuckJobs)}`,
    `- E-mails: ${e.recorded} recorded (${e.invoiceEmails} invoice, ${e.receiptEmails} receipt), ${e.sentByWorker} marked sent, ${e.received} received by the SMTP sink (${e.distinctReceived} distinct), ${e.missing} missing`,
    `- Webhooks: ${w.events} events, ${w.received} deliveries received over HTTPS (${w.distinctReceived} distinct X-Webhook-Id), ${w.missing} missing, ${w.deliveriesNotSuccess} deliveries not successful`,
    `- Exit codes on SIGTERM after the run: web ${r.exitCodes.web ?? 'signal'}, worker ${r.exitCodes.worker ?? 'signal'}`,
    ...r.problems.map((p) => `- **Problem**: ${p}`),
  ].join('\n');

  process.stdout.write(`\n${section}\n`);
  const pct = (v: number) => `${v >= 0 ? '+' : ''}${v.toFixed(1)} %`;
  await recordRun(SOAK_SECTION, {
    run: section,
    loadBefore: machine.loadBefore,
    figures: [String(SECONDS), pct(g.web.pct), pct(g.worker.pct), String(r.unexpectedCount), `${e.missing} / ${w.missing}`, pass ? 'PASS' : '**FAIL**'],
  });
  log(`wrote ${path.relative(ROOT, RESULTS_FILE)}: ${pass ? 'PASS' : 'FAIL'}`);
  return pass ? 0 : 1;
}

const SOAK_SECTION: Section = {
  id: 'soak',
  history: ['seconds', 'web RSS', 'worker RSS', 'answered other than asked', 'e-mails / webhooks missing', 'result'],
  intro: `## Soak (npm run bench:soak)

Produced by \`npm run bench:soak\` (bench/soak.ts; the load itself is bench/soak-load.ts, which
test/soak.test.ts also runs for 75 s in CI). Each run starts one web and one
worker process from their real entry points on a fresh database, with a real SMTP sink and a real
HTTPS webhook receiver, and drives a fixed, moderate mixed load for 10 minutes. Targets: web and
worker RSS grow < 10 % between minute 2 and minute 10 (the lowest sample of the 30 s before each:
runs up to 11:48Z compared medians); every response is the status its kind of
request asked for (the deliberate 404/409/422 ones included); after the queues drain, every
recorded e-mail reached the SMTP sink once, every event reached the receiver once, and no pg-boss
job is left in created, active, retry or failed. The machine is shared, so note the load average.
`,
};

let exitCode = 1;
try {
  exitCode = await main();
} catch (err) {
  log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
} finally {
  await cleanup();
}
process.exit(exitCode);
