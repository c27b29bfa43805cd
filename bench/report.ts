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

/** One round of a scenario: the three sides measured back to back, so that they share the machine's state. */
export interface Round {
  api: Measurement;
  ceiling: Measurement;
  floor: Measurement;
}

export interface Ratio {
  name: string;
  /** req/s of each side over all rounds. */
  api: number;
  ceiling: number;
  floor: number;
  /** API ÷ ceiling: the median of the rounds' ratios. */
  ratio: number;
  /** HTTP floor ÷ ceiling, median of the rounds. */
  floorRatio: number;
  /** API ÷ HTTP floor, median of the rounds. */
  ofFloor: number;
  /** The target of API ÷ floor (issue 18: GET 0.85, POST 0.5). */
  floorTarget: number;
  rounds: { ratio: number; ofFloor: number }[];
  pass: boolean;
  floorPass: boolean;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

const over = (a: Measurement, b: Measurement) => (b.rps > 0 ? a.rps / b.rps : 0);

/**
 * The rounds' measurements of one side as one: req/s and counts over all rounds, latencies the
 * median of the rounds' (percentiles of separate windows do not add up).
 */
export function combined(ms: Measurement[]): Measurement {
  const sum = (f: (m: Measurement) => number) => ms.reduce((t, m) => t + f(m), 0);
  const seconds = sum((m) => m.seconds);
  const statusCodes: Record<string, number> = {};
  for (const m of ms) for (const [code, n] of Object.entries(m.statusCodes)) statusCodes[code] = (statusCodes[code] ?? 0) + n;
  return {
    rps: seconds > 0 ? sum((m) => m.rps * m.seconds) / seconds : 0,
    p50: median(ms.map((m) => m.p50)),
    p99: median(ms.map((m) => m.p99)),
    ok: sum((m) => m.ok),
    failed: sum((m) => m.failed),
    errors: sum((m) => m.errors),
    seconds,
    statusCodes,
    firstError: ms.find((m) => m.firstError)?.firstError,
  };
}

/**
 * The ratios of a scenario from its rounds: each the median of the rounds' own ratios, so that a
 * round the machine spent on other work moves the figure less than it would move one long window.
 */
export function ratioOf(name: string, rounds: Round[], floorTarget: number): Ratio {
  const api = combined(rounds.map((r) => r.api));
  const perRound = rounds.map((r) => ({ ratio: over(r.api, r.ceiling), ofFloor: over(r.api, r.floor), floorRatio: over(r.floor, r.ceiling) }));
  const ratio = median(perRound.map((r) => r.ratio));
  const ofFloor = median(perRound.map((r) => r.ofFloor));
  // A run with failed requests does not count as a pass, whatever its speed.
  const clean = api.failed + api.errors === 0;
  return {
    name,
    api: api.rps,
    ceiling: combined(rounds.map((r) => r.ceiling)).rps,
    floor: combined(rounds.map((r) => r.floor)).rps,
    ratio,
    floorRatio: median(perRound.map((r) => r.floorRatio)),
    ofFloor,
    floorTarget,
    rounds: perRound.map(({ ratio, ofFloor }) => ({ ratio, ofFloor })),
    pass: clean && ratio >= TARGET_RATIO,
    floorPass: clean && ofFloor >= floorTarget,
  };
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
  const list = (xs: number[]) => xs.map((x) => x.toFixed(3)).join(', ');
  return ratios
    .map(
      (r) =>
        `- **${r.name}**: API ÷ HTTP floor **${r.ofFloor.toFixed(3)}** → ${r.floorPass ? 'PASS' : 'FAIL'} (target ≥ ${r.floorTarget}; rounds ${list(r.rounds.map((x) => x.ofFloor))}); ` +
        `API ÷ ceiling **${r.ratio.toFixed(3)}** → ${r.pass ? 'PASS' : 'FAIL'} (target ≥ ${TARGET_RATIO}; rounds ${list(r.rounds.map((x) => x.ratio))}); ` +
        `HTTP floor ÷ ceiling ${r.floorRatio.toFixed(3)}`,
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

Since 2026-11-25T12:00Z each scenario is measured in **rounds** (BENCH_ROUNDS, 3 by default): every
side is warmed up once, then each round measures the three sides back to back, in an order that
turns by one each round, and every ratio is the median of the rounds' own ratios. req/s and
counts in the table are over all rounds, latencies the median of the rounds'. Earlier runs
measured each side once, for 10 s, in the order API, ceiling, floor: what the machine did during
one window moved their ratios by up to ±0.3. Issue 18's targets are of API ÷ floor: GET ≥ 0.85,
POST ≥ 0.5.

Latencies are per request in milliseconds, measured by the client (autocannon's response
events / the loop's own clock). "Other work" is the CPU that processes outside the run (not the
bench process, the web process or the bench database's backends) used while a line was
measured, from /proc: figures from a machine that is busy with other work are noisy; compare
ratios from the same run rather than absolute numbers across runs.
`,
};

