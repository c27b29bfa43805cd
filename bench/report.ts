import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { Measurement } from './load.js';
import type { Section } from './results.js';

export const TARGET_RATIO = 0.5;

export interface Machine {
  nproc: number;
  cpu: string;
  memory: string;
  node: string;
  postgres: string;
  loadBefore: string;
  loadAfter?: string;
}

export function machineInfo(postgresVersion: string): Machine {
  let cpu = 'unknown';
  try {
    cpu = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? cpu;
  } catch {
    /* not Linux */
  }
  return {
    nproc: os.availableParallelism(),
    cpu,
    memory: `${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    node: process.version,
    postgres: postgresVersion,
    loadBefore: loadAverage(),
  };
}

export function loadAverage(): string {
  return os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(' / ');
}

export interface Row {
  scenario: string;
  side: 'API' | 'ceiling' | 'HTTP floor';
  m: Measurement;
  rssKb?: number;
  /** CPU used by everything but this run while it was measured, in CPUs (1 = one core kept busy). */
  otherCpus?: number;
}

export interface Ratio {
  name: string;
  api: number;
  ceiling: number;
  ratio: number;
  /** The HTTP floor's req/s: the same database work behind a bare Fastify route. */
  floor: number;
  floorRatio: number;
  pass: boolean;
}

export function ratioOf(name: string, m: { api: Measurement; ceiling: Measurement; floor: Measurement }): Ratio {
  const ofCeiling = (x: Measurement) => (m.ceiling.rps > 0 ? x.rps / m.ceiling.rps : 0);
  const ratio = ofCeiling(m.api);
  // A run with failed requests does not count as a pass, whatever its speed.
  const pass = ratio >= TARGET_RATIO && m.api.failed + m.api.errors === 0;
  return { name, api: m.api.rps, ceiling: m.ceiling.rps, ratio, floor: m.floor.rps, floorRatio: ofCeiling(m.floor), pass };
}

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '–');
const mib = (kb?: number) => (kb ? `${(kb / 1024).toFixed(0)} MiB` : '–');

export function table(rows: Row[]): string {
  const lines = [
    '| Scenario | Side | req/s | p50 ms | p99 ms | ok | failed / errors | web peak RSS | other work, CPUs |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.scenario} | ${r.side} | ${fmt(r.m.rps, 0)} | ${fmt(r.m.p50, 2)} | ${fmt(r.m.p99, 2)} | ${r.m.ok} | ${r.m.failed} / ${r.m.errors} | ${mib(r.rssKb)} | ${r.otherCpus === undefined ? '–' : fmt(r.otherCpus, 2)} |`,
    );
  }
  return lines.join('\n');
}

export function ratioLines(ratios: Ratio[]): string {
  return ratios
    .map(
      (r) =>
        `- **${r.name}**: ${fmt(r.api, 0)} / ${fmt(r.ceiling, 0)} = **${r.ratio.toFixed(3)}** → ${r.pass ? 'PASS' : 'FAIL'} (target ≥ ${TARGET_RATIO}); ` +
        `HTTP floor ${fmt(r.floor, 0)} / ${fmt(r.ceiling, 0)} = ${r.floorRatio.toFixed(3)}, API / floor = ${(r.floor > 0 ? r.api / r.floor : 0).toFixed(3)}`,
    )
    .join('\n');
}

export interface RunReport {
  date: Date;
  command: string;
  machine: Machine;
  settings: string;
  rows: Row[];
  ratios: Ratio[];
  hwmKb: number;
  notes: string[];
}

export function renderRun(r: RunReport): string {
  const m = r.machine;
  return [
    `### Run of ${r.date.toISOString()}`,
    '',
    `- Command: \`${r.command}\``,
    `- Machine: ${m.nproc} CPU(s) (${m.cpu}), ${m.memory} RAM, Node ${m.node}, PostgreSQL ${m.postgres}`,
    `- Load average (1/5/15 min) before: ${m.loadBefore}; after: ${m.loadAfter ?? '–'}`,
    `- Settings: ${r.settings}`,
    '',
    table(r.rows),
    '',
    ratioLines(r.ratios),
    `- Web process VmHWM (peak RSS over its whole life): ${mib(r.hwmKb)}`,
    ...r.notes.map((n) => `- ${n}`),
    '',
  ].join('\n');
}

/** The ratio bench's section of RESULTS.md. */
export const RATIO_SECTION: Section = {
  id: 'ratio',
  history: ['GET API ÷ floor', 'POST API ÷ floor', 'GET API ÷ ceiling', 'POST API ÷ ceiling'],
  intro: `## API vs. database ceiling (npm run bench)

Produced by \`npm run bench\` (bench/run.ts). Each run measures, at the
same concurrency on the same machine, the external API through the real web process
(\`node dist/src/server.js\`, the tsc build the Procfile runs; up to 2026-11-23T10:52Z
\`node --import tsx src/server.ts\`; driven by autocannon) against a ceiling: the same database
work issued straight through postgres.js with no HTTP, auth, rate limit or idempotency.
ratio = API req/s ÷ ceiling req/s; the target is ≥ ${TARGET_RATIO}.

- **GET**: \`GET /api/v1/external/invoices/{id}\` (3 items) vs. the single statement that reads the
  invoice row plus the json_agg of its items (\`getInvoice\` in src/invoices/queries.ts).
- **POST**: \`POST /api/v1/external/invoices\` (3 items, a unique Idempotency-Key per request) vs.
  one transaction running \`insertInvoice\`: the invoice row and its 3 items in one statement, as
  the API inserts them (BEGIN, that statement, COMMIT). Runs up to 2026-11-23T05:25Z inserted the
  items with a second statement, so their POST ceiling had one round trip more.

Since 2026-11-24T02:50Z each scenario also measures an **HTTP floor**: a bare Fastify process
(bench/floor-server.ts, \`node --import tsx\`) whose route runs only the ceiling's database work
(bench/ceiling.ts) and answers with it, with no key, rate limit, validation, idempotency, event
or resource shaping. floor ÷ ceiling is the most any API on Fastify and postgres.js reaches on
the machine; API ÷ floor is what the API's own work costs.

Latencies are per request in milliseconds, measured by the client (autocannon's response
events / the loop's own clock). "Other work" is the CPU that processes outside the run (not the
bench process, the web process or the bench database's backends) used while a line was
measured, from /proc: figures from a machine that is busy with other work are noisy; compare
ratios from the same run rather than absolute numbers across runs.
`,
};

