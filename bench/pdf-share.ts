/**
 * `npm run bench:pdf`: rendering is shared by every merchant (docs/limits.md, "One tenant cannot
 * hurt the others"). Through the real web process (the Procfile's `web`, built), it measures
 *
 * - the largest invoice the API takes (200 items of 1,000 characters in 11 lines of unbreakable
 *   wide words, the slowest to lay out) rendered as a draft, alone;
 * - another merchant's one-item draft PDF, alone, and then while the first merchant asks for four
 *   such largest drafts at once, round after round.
 *
 * Every draft is new, so every GET renders (an unchanged draft is served from memory). Records
 * the run in its section of bench/RESULTS.md. Environment: DATABASE_URL (a local server; without
 * it the embedded server of .data/bench), PDF_BENCH_SAMPLES (the other merchant's GETs in each
 * phase, default 40).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSql } from '../src/db/client.js';
import { apiRequest } from './api-client.js';
import { cleanupRegistry } from './cleanup.js';
import { openBenchDatabase, seedMerchant, type Seed } from './db.js';
import { loadAverage, machineInfo } from './report.js';
import { recordRun, RESULTS_FILE, type Section } from './results.js';
import { startWebProcess, type WebProcess } from './server.js';
import { intEnv } from './settings.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SAMPLES = intEnv('PDF_BENCH_SAMPLES', 40, 5, 1000);
const log = (msg: string) => process.stderr.write(`[pdf] ${msg}\n`);
const scope = cleanupRegistry(log, 20 * 60_000);

const client = { name: 'Comercial Andes SpA', email: 'pagos@andes.example', rut: '77.123.456-9' };

function largestDraft(n: number) {
  return {
    client,
    due_date: '2099-12-31',
    items: Array.from({ length: 200 }, (_, i) => ({
      description: [`Item ${n}-${i} `.padEnd(12, 'W') + 'W'.repeat(78), ...Array.from({ length: 10 }, () => 'W'.repeat(89))].join('\n').slice(0, 1000),
      quantity: 999999.9999,
      unit_price: 999999999.9999,
    })),
  };
}

const smallDraft = (n: number) => ({ client, due_date: '2099-12-31', items: [{ description: `Consultoría ${n}`, quantity: 1, unit_price: 10000 }] });

async function createDraft(web: WebProcess, seed: Seed, body: unknown): Promise<string> {
  const res = await apiRequest(web.baseUrl, seed.apiKey, 'POST', '/invoices', body);
  if (res.status !== 201) throw new Error(`POST /invoices answered ${res.status}: ${res.text.slice(0, 300)}`);
  return (JSON.parse(res.text) as { invoice_id: string }).invoice_id;
}

/** Milliseconds for GET /invoices/{id}/pdf, and the document's size. */
async function timedPdf(web: WebProcess, seed: Seed, id: string): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const res = await fetch(`${web.baseUrl}/api/v1/external/invoices/${id}/pdf`, { headers: { 'x-api-key': seed.apiKey }, signal: AbortSignal.timeout(60_000) });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) throw new Error(`GET pdf answered ${res.status}: ${body.toString().slice(0, 300)}`);
  return { ms: performance.now() - started, bytes: body.length };
}

function summary(ms: number[]) {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return { p50: at(0.5), p95: at(0.95), max: sorted.at(-1)! };
}
const fmt = (n: number) => `${n.toFixed(0)} ms`;

export const PDF_SECTION: Section = {
  id: 'pdf',
  intro: `## Shared PDF rendering (npm run bench:pdf)

Produced by \`npm run bench:pdf\` (bench/pdf-share.ts) through the real web process. "Largest" is
the largest invoice the API takes (200 items of 1,000 characters in 11 lines of unbreakable wide
words) rendered as a new draft; "other merchant" is another merchant's new one-item draft, alone
and while the first merchant asks for four new largest drafts at once, round after round. The
target (docs/limits.md): the largest prints in well under a second, and the other merchant's
PDF waits behind one of those renders at most, never seconds.`,
  history: ['Largest', 'Other alone p50 / p95', 'Other during 4× largest p50 / p95 / max'],
};

async function main() {
  const db = await openBenchDatabase(log, scope.teardown);
  const machine = machineInfo(db.serverVersion);
  const sql = createSql(db.url, { max: 2, application: 'invoicing-bench-pdf' });
  scope.teardown(() => sql.end({ timeout: 5 }));
  const heavy = await seedMerchant(sql);
  const other = await seedMerchant(sql);
  const web = await startWebProcess({ cwd: ROOT, databaseUrl: db.url, poolSize: 10 });
  scope.teardown(() => web.stop());

  log('warming up');
  await timedPdf(web, other, await createDraft(web, other, smallDraft(0)));
  await timedPdf(web, heavy, await createDraft(web, heavy, largestDraft(0)));

  const largestAlone: number[] = [];
  let largestBytes = 0;
  for (let i = 1; i <= 5; i++) {
    const r = await timedPdf(web, heavy, await createDraft(web, heavy, largestDraft(i)));
    largestAlone.push(r.ms);
    largestBytes = r.bytes;
  }
  log(`largest alone: ${largestAlone.map(fmt).join(', ')}`);

  const smallIds = async () => Promise.all(Array.from({ length: SAMPLES }, (_, i) => createDraft(web, other, smallDraft(i + 1))));
  const alone: number[] = [];
  for (const id of await smallIds()) alone.push((await timedPdf(web, other, id)).ms);
  log(`other merchant alone: p50 ${fmt(summary(alone).p50)}`);

  const during: number[] = [];
  const bursts: number[] = [];
  let stop = false;
  let round = 100;
  const heavyLoop = (async () => {
    while (!stop) {
      const ids = await Promise.all([0, 1, 2, 3].map(() => createDraft(web, heavy, largestDraft(round++))));
      const started = performance.now();
      await Promise.all(ids.map((id) => timedPdf(web, heavy, id)));
      bursts.push(performance.now() - started);
    }
  })();
  const ids = await smallIds();
  // Let the first burst begin before sampling.
  await new Promise((r) => setTimeout(r, 500));
  for (const id of ids) {
    during.push((await timedPdf(web, other, id)).ms);
    await new Promise((r) => setTimeout(r, 50));
  }
  stop = true;
  await heavyLoop;

  const largest = summary(largestAlone);
  const a = summary(alone);
  const d = summary(during);
  const burst = summary(bursts);
  const machineLine = `${machine.nproc} CPUs (${machine.cpu}), ${machine.memory}, Node ${machine.node}, PostgreSQL ${machine.postgres}; load before ${machine.loadBefore}, after ${loadAverage()}`;
  const run = [
    `### Latest run: ${new Date().toISOString()}`,
    '',
    `Machine: ${machineLine}. Command: \`npm run bench:pdf\` (PDF_BENCH_SAMPLES=${SAMPLES}).`,
    '',
    '| Measured | p50 | p95 | max | n |',
    '|---|---:|---:|---:|---:|',
    `| largest invoice, alone (${(largestBytes / 1024).toFixed(0)} KiB) | ${fmt(largest.p50)} | ${fmt(largest.p95)} | ${fmt(largest.max)} | ${largestAlone.length} |`,
    `| other merchant's one-item draft, alone | ${fmt(a.p50)} | ${fmt(a.p95)} | ${fmt(a.max)} | ${alone.length} |`,
    `| other merchant's one-item draft, during 4× largest at once | ${fmt(d.p50)} | ${fmt(d.p95)} | ${fmt(d.max)} | ${during.length} |`,
    `| the first merchant's 4 largest at once, until the last answers | ${fmt(burst.p50)} | ${fmt(burst.p95)} | ${fmt(burst.max)} | ${bursts.length} |`,
  ].join('\n');
  process.stdout.write(`${run}\n`);
  await recordRun(PDF_SECTION, {
    run,
    loadBefore: machine.loadBefore,
    figures: [fmt(largest.p50), `${fmt(a.p50)} / ${fmt(a.p95)}`, `${fmt(d.p50)} / ${fmt(d.p95)} / ${fmt(d.max)}`],
  });
  log(`recorded in ${RESULTS_FILE}`);
}

main()
  .catch((err) => {
    log(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exitCode = 1;
  })
  .finally(() => scope.cleanup());
