/**
 * `npm run bench:effects` (issue 15, "Measure"): how fast and how soon the worker's effects, the
 * invoice e-mails and the webhooks, reach real receivers, next to a floor that sends the same
 * effects to the same receivers with nothing in between.
 *
 * One web process (`node dist/src/server.js`) and one worker process (`node dist/jobs/worker.js`),
 * both the tsc build the Procfile runs, on a fresh database; a real SMTP server (smtp-server) and a
 * real HTTPS receiver (the self-signed certificate of test/helpers/tls, trusted by the processes
 * through NODE_EXTRA_CA_CERTS), both on 127.0.0.1 in this process; the floor is a plain Node
 * process (bench/effects-floor.ts). Scenarios and targets:
 *
 * 1. Burst: N (1,000) drafts of one client sent with POST /invoices/{id}/send, 8 requests in
 *    flight: webhooks/s at the receiver (first to last received) ≥ 500, e-mails/s at the SMTP
 *    server ≥ 150. 1a "live": the worker delivers while the sends go on, so the web's send rate
 *    bounds it; 1b "queued": the worker is paused (SIGSTOP) while the sends commit and resumed
 *    (SIGCONT) after, so the rate is the worker's own. The floor's rates for the same counts.
 * 2. Steady: one POST /invoices with send_immediately every 200 ms for 30 s: event → webhook
 *    received (the event's created_at vs. arrival) p99 ≤ 150 ms; request → e-mail at the SMTP
 *    server p99 ≤ 300 ms.
 * 3. SIGKILL: a burst of N; once a quarter of its effects has arrived the worker is SIGKILLed and
 *    a new one started: from its "invoicing worker ready" line until every owed webhook and e-mail
 *    has arrived ≤ 20 s, and no invoice without its e-mail and webhook.
 * 4. Fairness: right after merchant X's last send of 1a, merchant Y sends one: Y's e-mail and
 *    webhook arrive ≤ 1 s after Y's request.
 *
 * Environment: DATABASE_URL (a local server; a fresh database is created on it and dropped at the
 * end; without it the embedded server of .data/bench), EFFECTS_BURST (default 1000),
 * EFFECTS_QUEUED_ROUNDS (1b's bursts, default 3: its rates are their medians),
 * EFFECTS_STEADY_SECONDS (default 30), EFFECTS_FLOOR_CONCURRENCY (the floor's webhooks in flight,
 * default 48), EFFECTS_WORKER_CPU_PROFILE (a file: the worker's V8 CPU profile over 1b's last
 * burst, through bench/cpu-profile-hook.ts). `--strict` exits 1 when a target is missed. Records
 * the run in bench/RESULTS.md unless given `--no-record`.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { createSql, type Sql } from '../src/db/client.js';
import { SMTP_POOL } from '../src/email/transport.js';
import { jobs } from '../jobs/index.js';
import { cleanupRegistry } from './cleanup.js';
import { openBenchDatabase, seedMerchant, type Seed } from './db.js';
import type { FloorReply, FloorRun } from './effects-floor.js';
import { cpuBetween, cpuSnapshot } from './cpu.js';
import { Latencies } from './load.js';
import { loadAverage, machineInfo, type Machine } from './report.js';
import { recordRun, RESULTS_FILE, type Section } from './results.js';
import { startWebProcess, type WebProcess } from './server.js';
import { apiRequest } from './api-client.js';
import { intEnv } from './settings.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TLS_DIR = path.join(ROOT, 'test/helpers/tls');
const CA_FILE = path.join(TLS_DIR, 'receiver.crt');
// A hard stop well past the run's usual length: whatever happens, processes and database go.
const TIME_BUDGET_MS = 600_000;

const BURST = intEnv('EFFECTS_BURST', 1000, 10, 5000);
const QUEUED_ROUNDS = intEnv('EFFECTS_QUEUED_ROUNDS', 3, 1, 9);
const STEADY_SECONDS = intEnv('EFFECTS_STEADY_SECONDS', 30, 5, 120);
const FLOOR_CONCURRENCY = intEnv('EFFECTS_FLOOR_CONCURRENCY', 48, 1, 512);
const STEADY_INTERVAL_MS = 200;
// Requests of one key in flight at once: below the web process's API_CONCURRENCY_PER_KEY (10).
const CLIENT_CONCURRENCY = 8;
const WEB_POOL = 10;
const WARMUP_INVOICES = 20;
// How long a burst's effects may take to arrive before the run records it as not drained.
const DRAIN_TIMEOUT_MS = 120_000;
const RECOVERY_TIMEOUT_MS = 120_000;
// The worker is killed once this share of the burst's effects (e-mails + webhooks) has arrived.
const KILL_AT_SHARE = 0.25;
const STRICT = process.argv.includes('--strict');
const WORKER_CPU_PROFILE = process.env.EFFECTS_WORKER_CPU_PROFILE;
// A trial run (e.g. a small EFFECTS_BURST) that leaves bench/RESULTS.md alone.
const RECORD = !process.argv.includes('--no-record');

const TARGETS = { webhooksPerSecond: 500, emailsPerSecond: 150, webhookP99Ms: 150, emailP99Ms: 300, recoverySeconds: 20, fairnessMs: 1000 };

const log = (msg: string) => process.stderr.write(`[effects] ${msg}\n`);
const { teardown, cleanup } = cleanupRegistry(log, TIME_BUDGET_MS);
// Whatever goes wrong, the processes and the database are cleaned up before the exit.
for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
  process.on(event, (err: unknown) => {
    log(`${event}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    void cleanup().finally(() => process.exit(1));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Wall-clock milliseconds with sub-millisecond resolution: comparable with the app's timestamps. */
const now = () => performance.timeOrigin + performance.now();

// ---------------------------------------------------------------------------------------------
// Receivers

interface HookArrival {
  path: string;
  eventId: string;
  invoiceId: string | null;
  /** The event's created_at (ms), from the body. */
  createdAt: number;
  at: number;
  signed: boolean;
  bytes: number;
  body: string;
}

interface MailArrival {
  invoiceId: string | null;
  messageId: string;
  floor: boolean;
  at: number;
  bytes: number;
}

function verifySignature(secret: string, header: string, body: string): boolean {
  const parts = new Map<string, string[]>();
  for (const p of header.split(',')) {
    const eq = p.indexOf('=');
    if (eq > 0) parts.set(p.slice(0, eq).trim(), [...(parts.get(p.slice(0, eq).trim()) ?? []), p.slice(eq + 1).trim()]);
  }
  const t = parts.get('t')?.[0];
  if (!t) return false;
  const want = createHmac('sha256', secret).update(`${t}.${body}`, 'utf8').digest();
  return (parts.get('v1') ?? []).some((v) => /^[0-9a-f]{64}$/i.test(v) && timingSafeEqual(Buffer.from(v, 'hex'), want));
}

/** An HTTPS receiver on 127.0.0.1 that answers 200 at once and checks every signature. */
async function startReceiver() {
  const secrets = new Map<string, string>();
  const hooks: HookArrival[] = [];
  const byInvoice = new Map<string, HookArrival[]>();
  const server = https.createServer(
    { key: readFileSync(path.join(TLS_DIR, 'receiver.key')), cert: readFileSync(CA_FILE), keepAliveTimeout: 5_000 },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const at = now();
        const body = Buffer.concat(chunks).toString('utf8');
        const p = req.url ?? '/';
        let createdAt = NaN;
        let invoiceId: string | null = null;
        try {
          const e = JSON.parse(body) as { created_at?: string; data?: { object?: { id?: string } } };
          createdAt = Date.parse(e.created_at ?? '');
          invoiceId = e.data?.object?.id ?? null;
        } catch {
          /* counted as unsigned/unparsed below */
        }
        const secret = secrets.get(p);
        const signed = secret !== undefined && verifySignature(secret, String(req.headers['x-webhook-signature'] ?? ''), body);
        const h: HookArrival = { path: p, eventId: String(req.headers['x-webhook-id'] ?? ''), invoiceId, createdAt, at, signed, bytes: chunks.reduce((n, c) => n + c.length, 0), body };
        hooks.push(h);
        if (invoiceId && p !== '/floor') byInvoice.set(invoiceId, [...(byInvoice.get(invoiceId) ?? []), h]);
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
      });
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  // A name, as merchants register them: the certificate is for localhost (127.0.0.1 in /etc/hosts).
  return { url: (p: string) => `https://localhost:${port}${p}`, secrets, hooks, byInvoice };
}

/**
 * A real SMTP server on 127.0.0.1 that reads only each message's header block (Message-ID,
 * X-Invoice-Id) and times its arrival at the end of DATA, before the 250 reply; parsing every
 * 60 KB message in full would make the bench process the bottleneck. `capture` keeps one raw
 * message (the worker's, for the floor to copy).
 */
async function startSmtp() {
  const mails: MailArrival[] = [];
  const byInvoice = new Map<string, MailArrival[]>();
  const state = { capture: null as ((raw: Buffer) => void) | null };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    maxClients: 1000,
    onData(stream, _session, callback) {
      const keep: Buffer[] | null = state.capture ? [] : null;
      let head = '';
      let headDone = false;
      let bytes = 0;
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        keep?.push(chunk);
        if (headDone) return;
        head += chunk.toString('latin1');
        const end = head.search(/\r?\n\r?\n/);
        if (end >= 0) {
          head = head.slice(0, end);
          headDone = true;
        } else if (head.length > 256 * 1024) headDone = true;
      });
      stream.on('end', () => {
        const at = now();
        const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
        const header = (name: string) => new RegExp(`^${name}:[ \\t]*(.*)$`, 'im').exec(unfolded)?.[1]?.trim() ?? null;
        const m: MailArrival = { invoiceId: header('x-invoice-id'), messageId: header('message-id') ?? '', floor: header('x-bench-floor') !== null, at, bytes };
        mails.push(m);
        if (m.invoiceId && !m.floor) byInvoice.set(m.invoiceId, [...(byInvoice.get(m.invoiceId) ?? []), m]);
        if (keep && state.capture && !m.floor) {
          const capture = state.capture;
          state.capture = null;
          capture(Buffer.concat(keep));
        }
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  // A client that goes away mid-conversation (the SIGKILLed worker) is an 'error' of the server's:
  // counted, not fatal.
  const errors: string[] = [];
  server.on('error', (err: Error) => errors.push(err.message));
  const port = (server.server.address() as AddressInfo).port;
  teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `smtp://127.0.0.1:${port}`, mails, byInvoice, state, errors };
}

// ---------------------------------------------------------------------------------------------
// The worker process

interface WorkerProcess {
  pid: number;
  /** When its "invoicing worker ready" line arrived (wall-clock ms). */
  readyAt: number;
  startedAt: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
  kill(signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after 30 s; the exit code (null: a signal). */
  stop(): Promise<number | null>;
}

const workerLogs: { label: string; output: () => string }[] = [];

/** `node dist/jobs/worker.js` (the Procfile's worker, built by startWebProcess), ready once it says so. */
async function startWorkerProcess(label: string, env: Record<string, string>): Promise<WorkerProcess> {
  const startedAt = now();
  const child: ChildProcess = spawn(process.execPath, [...(WORKER_CPU_PROFILE ? ['--import', './bench/cpu-profile-hook.ts'] : []), 'dist/jobs/worker.js'], {
    cwd: ROOT,
    env: { ...process.env, ...env, ...(WORKER_CPU_PROFILE ? { BENCH_CPU_PROFILE: path.resolve(WORKER_CPU_PROFILE) } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (!child.pid) throw new Error(`could not spawn the ${label}`);
  const pid = child.pid;
  const killOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.on('exit', killOnExit);
  let out = '';
  let readyAt = 0;
  let onReady: (() => void) | null = null;
  const collect = (chunk: Buffer) => {
    out += chunk.toString('utf8');
    if (!readyAt && out.includes('invoicing worker ready')) {
      readyAt = now();
      onReady?.();
    }
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      process.off('exit', killOnExit);
      resolve({ code, signal });
    }),
  );
  workerLogs.push({ label, output: () => out });
  const stop = async (): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    // A worker left paused (SIGSTOP) would not act on SIGTERM.
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const { code } = await exited;
    clearTimeout(timer);
    return code;
  };
  teardown(stop);
  await Promise.race([
    new Promise<void>((resolve) => {
      onReady = resolve;
      if (readyAt) resolve();
    }),
    exited.then(({ code, signal }) => {
      throw new Error(`the ${label} exited (${code ?? signal}) before it was ready:\n${out.slice(-3000)}`);
    }),
    sleep(30_000).then(() => {
      if (!readyAt) throw new Error(`the ${label} was not ready after 30 s:\n${out.slice(-3000)}`);
    }),
  ]);
  return { pid, readyAt, startedAt, exited, output: () => out, kill: (s) => child.kill(s), stop };
}

// ---------------------------------------------------------------------------------------------
// CPU of the processes involved (Linux /proc; zeros elsewhere)

const HZ = 100;
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / HZ;
  } catch {
    return 0;
  }
}

// ---------------------------------------------------------------------------------------------
// The API

interface Answer {
  status: number;
  body: any;
  text: string;
}

function apiClient(baseUrl: string) {
  return async (key: string, method: 'GET' | 'POST', route: string, body?: unknown): Promise<Answer> => {
    const { status, text } = await apiRequest(baseUrl, key, method, route, body);
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON */
    }
    return { status, body: parsed, text };
  };
}

const ITEMS = [
  { description: 'Consultoría noviembre', quantity: 2, unit_price: 5000 },
  { description: 'Soporte mensual', quantity: 1, unit_price: 12000 },
  { description: 'Horas adicionales', quantity: 3, unit_price: 2500 },
];
const CLIENT_X = { name: 'Comercial Andes SpA', email: 'pagos@andes.example' };
const CLIENT_Y = { name: 'Distribuidora Sur Ltda', email: 'pagos@sur.example' };
const invoiceBody = (client: { name: string; email: string }, extra: Record<string, unknown> = {}) => ({ client, due_date: '2099-12-31', items: ITEMS, ...extra });

/** Runs `fn` over `items` with at most `n` at once. */
async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

async function until(pred: () => boolean, timeoutMs: number, stepMs = 10): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) return false;
    await sleep(stepMs);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Figures

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '–');
/** Items per second from the first arrival to the last: (n − 1) intervals over the span. */
function ratePerSecond(times: number[]): number {
  if (times.length < 2) return NaN;
  const span = (Math.max(...times) - Math.min(...times)) / 1000;
  return span > 0 ? (times.length - 1) / span : NaN;
}
function percentiles(values: number[]): { p50: number; p99: number; max: number; n: number } {
  const l = new Latencies();
  for (const v of values) l.add(v);
  const [p50, p99] = l.percentiles(50, 99);
  return { p50: p50!, p99: p99!, max: values.length ? Math.max(...values) : NaN, n: values.length };
}
const firstAt = <T extends { at: number }>(list: T[] | undefined) => (list?.length ? Math.min(...list.map((x) => x.at)) : NaN);

interface Row {
  scenario: string;
  figure: string;
  app: string;
  floor: string;
  target: string;
  pass: boolean | null;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const runStarted = Date.now();
  const db = await openBenchDatabase(log, teardown);
  log(`database ${db.name} (${db.source}), PostgreSQL ${db.serverVersion}`);
  const machine: Machine = machineInfo(db.serverVersion);
  const sql: Sql = createSql(db.url, { max: 4, application: 'invoicing-bench-effects' });
  teardown(() => sql.end({ timeout: 5 }));
  const seedX: Seed = await seedMerchant(sql);
  const seedY: Seed = await seedMerchant(sql);

  const smtp = await startSmtp();
  const receiver = await startReceiver();
  const encryptionKey = randomBytes(32).toString('hex');
  const appEnv = { SMTP_URL: smtp.url, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', NODE_EXTRA_CA_CERTS: CA_FILE, ENCRYPTION_KEY: encryptionKey };
  log('building (npm run build) and starting the web process');
  noteCodeVersion();
  const web: WebProcess = await startWebProcess({ cwd: ROOT, databaseUrl: db.url, poolSize: WEB_POOL, env: appEnv });
  teardown(() => web.stop());
  const workerEnv = { ...appEnv, DATABASE_URL: db.url, NODE_ENV: 'production', LOG_LEVEL: 'info', PUBLIC_BASE_URL: web.baseUrl };
  let worker = await startWorkerProcess('worker', workerEnv);
  log(`web ${web.pid} on ${web.baseUrl}, worker ${worker.pid}; SMTP ${smtp.url}, HTTPS receiver ${receiver.url('/')}`);
  const api = apiClient(web.baseUrl);

  // Each merchant's endpoint, subscribed to invoice.sent only.
  for (const [seed, p] of [[seedX, '/x'], [seedY, '/y']] as const) {
    const r = await api(seed.apiKey, 'POST', '/webhooks/endpoints', { url: receiver.url(p), description: 'bench:effects receiver', events: ['invoice.sent'] });
    if (r.status !== 201 || typeof r.body?.secret !== 'string') throw new Error(`creating the webhook endpoint answered ${r.status}: ${r.text}`);
    receiver.secrets.set(p, r.body.secret as string);
  }
  const floorSecret = `whsec_${randomBytes(24).toString('base64url')}`;
  receiver.secrets.set('/floor', floorSecret);

  /** Drafts by POST /invoices/bulk, 50 a request: set-up, not measured. */
  const drafts = async (seed: Seed, client: { name: string; email: string }, n: number): Promise<string[]> => {
    const chunks = Array.from({ length: Math.ceil(n / 50) }, (_, i) => Math.min(50, n - i * 50));
    const ids: string[] = [];
    await pool(chunks, 4, async (size) => {
      const r = await api(seed.apiKey, 'POST', '/invoices/bulk', { invoices: Array.from({ length: size }, () => invoiceBody(client)) });
      if (r.status !== 200 || r.body?.succeeded !== size) throw new Error(`creating drafts answered ${r.status}: ${r.text.slice(0, 500)}`);
      for (const item of r.body.results as { invoice: { invoice_id: string } }[]) ids.push(item.invoice.invoice_id);
    });
    return ids;
  };
  /** POST /invoices/{id}/send for each, CLIENT_CONCURRENCY in flight; when each was issued. */
  const sendAll = async (seed: Seed, ids: string[]) => {
    const issued = new Map<string, number>();
    const failures: string[] = [];
    const began = now();
    await pool(ids, CLIENT_CONCURRENCY, async (id) => {
      issued.set(id, now());
      const r = await api(seed.apiKey, 'POST', `/invoices/${id}/send`);
      if (r.status !== 200) failures.push(`${r.status} ${r.text.slice(0, 200)}`);
    });
    return { issued, failures, began, ms: now() - began };
  };
  const delivered = (ids: string[]) => ids.every((id) => receiver.byInvoice.has(id) && smtp.byInvoice.has(id));
  const countArrived = (ids: string[], before = Infinity) => ({
    hooks: ids.filter((id) => firstAt(receiver.byInvoice.get(id)) <= before).length,
    mails: ids.filter((id) => firstAt(smtp.byInvoice.get(id)) <= before).length,
  });

  log(`creating ${(2 + QUEUED_ROUNDS) * BURST + 1} drafts`);
  const t0 = Date.now();
  const liveIds = await drafts(seedX, CLIENT_X, BURST);
  const queuedRounds: string[][] = [];
  for (let r = 0; r < QUEUED_ROUNDS; r++) queuedRounds.push(await drafts(seedX, CLIENT_X, BURST));
  const killIds = await drafts(seedX, CLIENT_X, BURST);
  const [fairYId] = await drafts(seedY, CLIENT_Y, 1);
  log(`drafts created in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // Warm-up: the first sends of the run (JIT, pools, the SMTP and TLS connections), and the worker's
  // own message and webhook body, which the floor copies.
  const captured = new Promise<Buffer>((resolve) => (smtp.state.capture = resolve));
  const warm: string[] = [];
  await pool(Array.from({ length: WARMUP_INVOICES }, (_, i) => i), 4, async () => {
    const r = await api(seedX.apiKey, 'POST', '/invoices', invoiceBody(CLIENT_X, { send_immediately: true }));
    if (r.status !== 201) throw new Error(`warm-up send answered ${r.status}: ${r.text}`);
    warm.push(r.body.invoice_id as string);
  });
  if (!(await until(() => delivered(warm), 30_000))) {
    throw new Error(`the warm-up's ${WARMUP_INVOICES} e-mails and webhooks did not all arrive within 30 s (${JSON.stringify(countArrived(warm))}); worker output:\n${worker.output().slice(-3000)}`);
  }
  const raw = await captured;
  const sample = await simpleParser(raw);
  const pdf = sample.attachments.find((a) => a.contentType === 'application/pdf');
  if (!pdf) throw new Error('the worker’s invoice e-mail has no PDF attached');
  const sampleHook = receiver.byInvoice.get(warm[0]!)![0]!;
  const sampleEvent = JSON.parse(sampleHook.body) as { type: string; data: unknown };
  log(`warm-up done: message ${raw.length} bytes (PDF ${pdf.size} bytes), webhook body ${sampleHook.bytes} bytes`);

  const rows: Row[] = [];
  let fairness: Row[] = [];
  const details: string[] = [];
  /** CPU of the whole machine, the worker, the web, the bench database's backends and this process. */
  const cpuOf = () => ({ snap: cpuSnapshot(db.name, worker.pid), web: cpuSeconds(web.pid) });
  const cpuLine = (a: ReturnType<typeof cpuOf>, b: ReturnType<typeof cpuOf>) => {
    const c = cpuBetween(a.snap, b.snap);
    const web = b.web - a.web;
    const others = Math.max(0, c.others - web);
    const cores = (x: number) => (x / c.seconds).toFixed(2);
    return (
      `CPU over ${c.seconds.toFixed(1)} s, in cores: worker ${cores(c.web)}, web ${cores(web)}, PostgreSQL (the bench database's backends) ${cores(c.pg)}, ` +
      `bench process (receivers) ${cores(c.self)}, everything else on the machine ${cores(others)}, of ${machine.nproc}`
    );
  };
  /**
   * The bench database's backends sampled every 100 ms: how many of the worker's connections (its
   * two pools and its LISTEN connection, application_name invoicing-worker…) are busy (active or in a
   * transaction), and which statements the busy backends of any process are running, a sampling
   * profile of where PostgreSQL's time goes.
   */
  const samplePool = () => {
    const busy: number[] = [];
    const statements = new Map<string, number>();
    let busySamples = 0;
    let total = 0;
    let stopped = false;
    const loop = (async () => {
      while (!stopped) {
        const rows = await sql<{ app: string; state: string; query: string }[]>`
          SELECT application_name AS app, state, left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 100) AS query
            FROM pg_stat_activity WHERE datname = ${db.name} AND pid <> pg_backend_pid()`.catch(() => null);
        if (rows) {
          const mine = rows.filter((r) => r.app.startsWith('invoicing-worker'));
          busy.push(mine.filter((r) => r.state !== 'idle').length);
          total = Math.max(total, mine.length);
          for (const r of rows) {
            if (r.state === 'idle' || !r.state) continue;
            busySamples += 1;
            const key = `${r.app}: ${r.state === 'active' ? '' : `(${r.state}) `}${r.query.trim()}`;
            statements.set(key, (statements.get(key) ?? 0) + 1);
          }
        }
        await sleep(100);
      }
    })();
    return async () => {
      stopped = true;
      await loop;
      const mean = busy.reduce((a, b) => a + b, 0) / (busy.length || 1);
      const full = busy.filter((b) => b >= total - 1).length;
      const top = [...statements].sort((x, y) => y[1] - x[1]).slice(0, 4);
      return (
        `the worker's database connections (${total} at most, its LISTEN one included) were busy ${mean.toFixed(1)} on average over ${busy.length} samples (every pooled one busy in ${busy.length ? Math.round((100 * full) / busy.length) : 0} % of them); ` +
        `busy backends, ${(busySamples / (busy.length || 1)).toFixed(1)} a sample on average, most often running: ${top.map(([q, n]) => `\`${q.replace(/`/g, "'")}\` ${Math.round((100 * n) / (busySamples || 1))} %`).join(', ')}`
      );
    };
  };

  /** Rates at the receivers over the burst's invoices, first arrival to last. */
  const burstFigures = (ids: string[]) => {
    const hookTimes = ids.map((id) => firstAt(receiver.byInvoice.get(id))).filter(Number.isFinite);
    const mailTimes = ids.map((id) => firstAt(smtp.byInvoice.get(id))).filter(Number.isFinite);
    const span = (t: number[]) => (t.length ? (Math.max(...t) - Math.min(...t)) / 1000 : NaN);
    return {
      hookRate: ratePerSecond(hookTimes),
      mailRate: ratePerSecond(mailTimes),
      hookSpan: span(hookTimes),
      mailSpan: span(mailTimes),
      hooks: hookTimes.length,
      mails: mailTimes.length,
      first: Math.min(...hookTimes, ...mailTimes),
      last: Math.max(...hookTimes, ...mailTimes),
    };
  };
  const sendLine = (s: Awaited<ReturnType<typeof sendAll>>) =>
    `${fmt(BURST)} POST /invoices/{id}/send (${CLIENT_CONCURRENCY} in flight) took ${(s.ms / 1000).toFixed(2)} s (${fmt(BURST / (s.ms / 1000))} req/s, ${s.failures.length} not 200${s.failures[0] ? `, first: ${s.failures[0]}` : ''})`;

  // ---- 1a. Burst, live, and 4. Fairness ---------------------------------------------------
  // The sends and the deliveries at once; as soon as X's last send is answered, Y sends one.
  log(`1a. burst (live): merchant X sends ${BURST} invoices, then merchant Y one`);
  {
    const cpu0 = cpuOf();
    const pool1a = samplePool();
    const s = await sendAll(seedX, liveIds);
    const yIssued = now();
    const yr = await api(seedY.apiKey, 'POST', `/invoices/${fairYId}/send`);
    const yAnswered = now();
    const backlog = countArrived(liveIds, yIssued);
    const yArrived = await until(() => delivered([fairYId!]), 30_000, 2);
    const yHook = firstAt(receiver.byInvoice.get(fairYId!)) - yIssued;
    const yMail = firstAt(smtp.byInvoice.get(fairYId!)) - yIssued;
    const drained = await until(() => delivered(liveIds), DRAIN_TIMEOUT_MS, 20);
    const cpu1 = cpuOf();
    const poolLine1a = await pool1a();
    const live = burstFigures(liveIds);
    log(`1a. burst (live): webhooks ${fmt(live.hookRate)}/s, e-mails ${fmt(live.mailRate)}/s${drained ? '' : ' (NOT drained)'}`);
    log(`4. fairness: Y's e-mail after ${fmt(yMail)} ms, webhook after ${fmt(yHook)} ms (X still owed then: ${BURST - backlog.mails} e-mails, ${BURST - backlog.hooks} webhooks)`);
    const sc = `1a. Burst, live: ${fmt(BURST)} sends, effects delivered meanwhile`;
    // No target: the effects cannot arrive faster than the web sends the invoices, and here the web
    // shares the machine's cores with the worker and PostgreSQL. The worker's own rate is 1b's.
    const bounded = `– (at most the send rate, ${fmt(s.issued.size / (s.ms / 1000))}/s; see 1b)`;
    rows.push({ scenario: sc, figure: 'webhooks/s at the receiver (first → last received)', app: fmt(live.hookRate), floor: '(1b)', target: bounded, pass: drained ? null : false });
    rows.push({ scenario: sc, figure: 'e-mails/s at the SMTP server (first → last received)', app: fmt(live.mailRate), floor: '(1b)', target: bounded, pass: drained ? null : false });
    const fc = `4. Fairness: Y's 1 right after X's ${fmt(BURST)} (1a)`;
    fairness = [
      { scenario: fc, figure: "Y's send request → Y's e-mail received, ms", app: fmt(yMail, 0), floor: '–', target: `≤ ${TARGETS.fairnessMs}`, pass: yArrived && yMail <= TARGETS.fairnessMs },
      { scenario: fc, figure: "Y's send request → Y's webhook received, ms", app: fmt(yHook, 0), floor: '–', target: `≤ ${TARGETS.fairnessMs}`, pass: yArrived && yHook <= TARGETS.fairnessMs },
    ];
    details.push(
      `1a. Burst, live: ${sendLine(s)}; from the first request to the last effect ${((live.last - s.began) / 1000).toFixed(2)} s; webhooks arrived over ${live.hookSpan.toFixed(2)} s, e-mails over ${live.mailSpan.toFixed(2)} s; ` +
        `${live.hooks} invoices with a webhook, ${live.mails} with an e-mail${drained ? '' : ` — **not drained within ${DRAIN_TIMEOUT_MS / 1000} s**`}. The web's send rate bounds these rates: see 1b for the worker's own. ${cpuLine(cpu0, cpu1)}; ${poolLine1a}.`,
      `4. Fairness: Y's send answered ${yr.status} in ${fmt(yAnswered - yIssued, 1)} ms, ${((yIssued - s.began) / 1000).toFixed(2)} s after X's first send; when Y sent, X still awaited ${BURST - backlog.mails} e-mails and ${BURST - backlog.hooks} webhooks; ` +
        `X's last effect arrived ${((live.last - yIssued) / 1000).toFixed(2)} s after Y's send.`,
    );
  }

  // ---- 1b. Burst, queued -------------------------------------------------------------------
  // The worker paused (SIGSTOP) while the sends commit, then resumed (SIGCONT): the whole burst is
  // waiting in its queues, so the rates are the worker's, not the web's.
  // Measured QUEUED_ROUNDS times: one burst's rates move with whatever else the machine did during
  // its few seconds; the medians of several move much less.
  {
    const rounds: { s: Awaited<ReturnType<typeof sendAll>>; q: ReturnType<typeof burstFigures>; resumed: number; drained: boolean; cpuLine: string; poolLine: string }[] = [];
    for (const [r, ids] of queuedRounds.entries()) {
      log(`1b. burst (queued), round ${r + 1}/${QUEUED_ROUNDS}: ${BURST} sends with the worker paused, then resumed`);
      worker.kill('SIGSTOP');
      let s: Awaited<ReturnType<typeof sendAll>>;
      try {
        s = await sendAll(seedX, ids);
      } finally {
        worker.kill('SIGCONT');
      }
      // The hook's SIGUSR2 starts the profiler, and the next one writes the profile.
      const profiled = WORKER_CPU_PROFILE !== undefined && r === queuedRounds.length - 1;
      if (profiled) worker.kill('SIGUSR2');
      const resumed = now();
      const cpu0 = cpuOf();
      const pool1b = samplePool();
      const drained = await until(() => delivered(ids), DRAIN_TIMEOUT_MS, 20);
      const cpu1 = cpuOf();
      if (profiled) worker.kill('SIGUSR2');
      const q = burstFigures(ids);
      rounds.push({ s, q, resumed, drained, cpuLine: cpuLine(cpu0, cpu1), poolLine: await pool1b() });
      log(`1b. burst (queued), round ${r + 1}/${QUEUED_ROUNDS}: webhooks ${fmt(q.hookRate)}/s, e-mails ${fmt(q.mailRate)}/s${drained ? '' : ' (NOT drained)'}`);
    }
    const middle = <T,>(xs: T[], by: (x: T) => number) => [...xs].sort((a, b) => by(a) - by(b))[xs.length >> 1]!;
    // The round of the median webhook rate is the one described in full.
    const { s, q, resumed, cpuLine: cpuLine1b, poolLine: poolLine1b } = middle(rounds, (r) => r.q.hookRate);
    const hookRate = q.hookRate;
    const mailRate = middle(rounds, (r) => r.q.mailRate).q.mailRate;
    const drained = rounds.every((r) => r.drained);
    const perRound = rounds.map((r) => `${fmt(r.q.hookRate)} / ${fmt(r.q.mailRate)}`).join(', ');
    log(`1b. burst (queued): medians of ${QUEUED_ROUNDS} rounds: webhooks ${fmt(hookRate)}/s, e-mails ${fmt(mailRate)}/s`);

    // The floor: the same counts to the same receivers, nothing else running.
    log('1. floor');
    const floorRun: FloorRun = {
      type: 'run',
      webhooks: { url: receiver.url('/floor'), secret: floorSecret, count: BURST, concurrency: FLOOR_CONCURRENCY, data: sampleEvent.data, eventType: sampleEvent.type },
      emails: {
        smtpUrl: smtp.url,
        count: BURST,
        from: sample.from?.text ?? 'Facturas <facturas@localhost>',
        to: CLIENT_X.email,
        subject: sample.subject ?? '',
        text: sample.text ?? '',
        html: typeof sample.html === 'string' ? sample.html : '',
        pdfBase64: pdf.content.toString('base64'),
        filename: pdf.filename ?? 'invoice.pdf',
      },
    };
    const hooksBefore = receiver.hooks.length;
    const mailsBefore = smtp.mails.length;
    const floor = await runFloor(floorRun);
    const floorHooks = receiver.hooks.slice(hooksBefore).filter((h) => h.path === '/floor');
    const floorMails = smtp.mails.slice(mailsBefore).filter((m) => m.floor);
    const floorHookRate = ratePerSecond(floorHooks.map((h) => h.at));
    const floorMailRate = ratePerSecond(floorMails.map((m) => m.at));
    log(`1. floor: webhooks ${fmt(floorHookRate)}/s, e-mails ${fmt(floorMailRate)}/s`);

    const sc = `1b. Burst, queued: ${fmt(BURST)} sends waiting, worker resumed`;
    rows.push({ scenario: sc, figure: `webhooks/s at the receiver (first → last received), median of ${QUEUED_ROUNDS} bursts`, app: fmt(hookRate), floor: fmt(floorHookRate), target: `≥ ${TARGETS.webhooksPerSecond}`, pass: drained && hookRate >= TARGETS.webhooksPerSecond });
    rows.push({ scenario: sc, figure: `e-mails/s at the SMTP server (first → last received), median of ${QUEUED_ROUNDS} bursts`, app: fmt(mailRate), floor: fmt(floorMailRate), target: `≥ ${TARGETS.emailsPerSecond}`, pass: drained && mailRate >= TARGETS.emailsPerSecond });
    details.push(
      `1b. Burst, queued, ${QUEUED_ROUNDS} bursts one after the other (webhooks / e-mails per second: ${perRound}); the burst of the median webhook rate: ${sendLine(s)} with the worker stopped (SIGSTOP); resumed (SIGCONT), it delivered the first effect ${((q.first - resumed) / 1000).toFixed(2)} s later and the last ${((q.last - resumed) / 1000).toFixed(2)} s later; ` +
        `webhooks arrived over ${q.hookSpan.toFixed(2)} s, e-mails over ${q.mailSpan.toFixed(2)} s; ${q.hooks} invoices with a webhook, ${q.mails} with an e-mail${drained ? '' : ` — **not drained within ${DRAIN_TIMEOUT_MS / 1000} s**`}. ${cpuLine1b}; ${poolLine1b}.`,
      `1. Floor (bench/effects-floor.ts, one plain Node process, alone, webhooks and e-mails at once as in a burst): ${floorHooks.length} webhooks (${FLOOR_CONCURRENCY} in flight over a keep-alive https.Agent, HMAC-SHA256 signed, ${fmt(floorHooks[0]?.bytes ?? 0)}-byte bodies of the worker's event) and ${floorMails.length} e-mails (pooled nodemailer, ${SMTP_POOL.maxConnections} connections as the app's SMTP_POOL, the worker's subject, text, HTML and ${fmt(pdf.size)}-byte PDF: ${fmt(floorMails[0]?.bytes ?? 0)} bytes a message) ` +
        `as the sender saw them: webhooks ${(floor.webhooks.ms / 1000).toFixed(2)} s (${floor.webhooks.failed} failed), e-mails ${(floor.emails.ms / 1000).toFixed(2)} s (${floor.emails.failed} failed)${floor.webhooks.firstError ?? floor.emails.firstError ? `; first error: ${floor.webhooks.firstError ?? floor.emails.firstError}` : ''}; ` +
        `${floorHooks.filter((h) => !h.signed).length} floor webhooks with a bad signature.`,
    );
  }

  // ---- 2. Steady ---------------------------------------------------------------------------
  const steadyCount = Math.round((STEADY_SECONDS * 1000) / STEADY_INTERVAL_MS);
  log(`2. steady: ${steadyCount} invoices, one every ${STEADY_INTERVAL_MS} ms`);
  {
    const sent: { id: string | null; issued: number; status: number }[] = [];
    const calls: Promise<void>[] = [];
    const start = now();
    for (let i = 0; i < steadyCount; i++) {
      const wait = start + i * STEADY_INTERVAL_MS - now();
      if (wait > 0) await sleep(wait);
      calls.push(
        (async () => {
          const issued = now();
          const r = await api(seedX.apiKey, 'POST', '/invoices', invoiceBody(CLIENT_X, { send_immediately: true }));
          sent.push({ id: r.status === 201 ? (r.body.invoice_id as string) : null, issued, status: r.status });
        })(),
      );
    }
    await Promise.all(calls);
    const ids = sent.flatMap((s) => (s.id ? [s.id] : []));
    const drained = await until(() => delivered(ids), 30_000, 20);
    const hookLat: number[] = [];
    const reqHookLat: number[] = [];
    const mailLat: number[] = [];
    for (const s of sent) {
      if (!s.id) continue;
      const h = receiver.byInvoice.get(s.id)?.reduce((a, b) => (b.at < a.at ? b : a));
      const m = firstAt(smtp.byInvoice.get(s.id));
      if (h) {
        hookLat.push(h.at - h.createdAt);
        reqHookLat.push(h.at - s.issued);
      }
      if (Number.isFinite(m)) mailLat.push(m - s.issued);
    }
    const hp = percentiles(hookLat);
    const rhp = percentiles(reqHookLat);
    const mp = percentiles(mailLat);
    const sc = `2. Steady, 1 every ${STEADY_INTERVAL_MS} ms for ${STEADY_SECONDS} s`;
    rows.push({ scenario: sc, figure: 'event created → webhook received, p50 / p99 ms', app: `${fmt(hp.p50, 1)} / ${fmt(hp.p99, 1)}`, floor: '–', target: `p99 ≤ ${TARGETS.webhookP99Ms}`, pass: drained && hp.p99 <= TARGETS.webhookP99Ms });
    rows.push({ scenario: sc, figure: 'send request issued → e-mail received, p50 / p99 ms', app: `${fmt(mp.p50, 1)} / ${fmt(mp.p99, 1)}`, floor: '–', target: `p99 ≤ ${TARGETS.emailP99Ms}`, pass: drained && mp.p99 <= TARGETS.emailP99Ms });
    details.push(
      `2. Steady: ${steadyCount} POST /invoices with send_immediately (${sent.filter((s) => s.status !== 201).length} not 201); webhook latency over ${hp.n} (max ${fmt(hp.max, 1)} ms), request → webhook p50 ${fmt(rhp.p50, 1)} / p99 ${fmt(rhp.p99, 1)} ms (max ${fmt(rhp.max, 1)}); ` +
        `e-mail latency over ${mp.n} (max ${fmt(mp.max, 1)} ms)${drained ? '' : ' — **not every effect arrived within 30 s**'}.`,
    );
    log(`2. steady: webhook p50 ${fmt(hp.p50, 1)} p99 ${fmt(hp.p99, 1)} ms; e-mail p50 ${fmt(mp.p50, 1)} p99 ${fmt(mp.p99, 1)} ms`);
  }

  // ---- 3. SIGKILL --------------------------------------------------------------------------
  log(`3. SIGKILL: sending ${BURST} invoices, killing the worker at ${KILL_AT_SHARE * 100} % of their effects`);
  {
    const sending = sendAll(seedX, killIds);
    const goal = Math.ceil(KILL_AT_SHARE * 2 * BURST);
    const reached = await until(() => {
      const c = countArrived(killIds);
      return c.hooks + c.mails >= goal;
    }, 60_000, 5);
    const old = worker;
    old.kill('SIGKILL');
    const oldExit = await old.exited;
    const killedAt = now();
    const before = countArrived(killIds, killedAt);
    log(`3. worker ${old.pid} killed (${oldExit.signal ?? oldExit.code}) with ${before.hooks} webhooks and ${before.mails} e-mails of ${BURST} arrived${reached ? '' : ' (kill point not reached within 60 s)'}`);
    worker = await startWorkerProcess('replacement worker', workerEnv);
    log(`3. new worker ${worker.pid} ready ${((worker.readyAt - killedAt) / 1000).toFixed(2)} s after the kill`);
    const s = await sending;
    const drained = await until(() => delivered(killIds), RECOVERY_TIMEOUT_MS, 20);
    const owedHookTimes = killIds.map((id) => firstAt(receiver.byInvoice.get(id))).filter((t) => Number.isFinite(t) && t > killedAt);
    const owedMailTimes = killIds.map((id) => firstAt(smtp.byInvoice.get(id))).filter((t) => Number.isFinite(t) && t > killedAt);
    const lastOwed = Math.max(...owedHookTimes, ...owedMailTimes);
    const recovery = (lastOwed - worker.readyAt) / 1000;
    const after = countArrived(killIds);
    const lostHooks = BURST - after.hooks;
    const lostMails = BURST - after.mails;
    const dupHooks = killIds.reduce((n, id) => n + Math.max(0, (receiver.byInvoice.get(id)?.length ?? 0) - 1), 0);
    const dupMails = killIds.reduce((n, id) => n + Math.max(0, (smtp.byInvoice.get(id)?.length ?? 0) - 1), 0);
    // A duplicate is an effect that reached its receiver while the old worker's record of it had
    // not committed: how long before the kill its first copy arrived tells which.
    const dupLead = killIds.flatMap((id) => {
      const hooks = receiver.byInvoice.get(id) ?? [];
      const mails = smtp.byInvoice.get(id) ?? [];
      return [hooks, mails].filter((l) => l.length > 1).map((l) => killedAt - Math.min(...l.map((x) => x.at)));
    });
    const sc = '3. SIGKILL mid-burst';
    rows.push({ scenario: sc, figure: 'new worker ready → every owed webhook and e-mail received, s', app: drained ? fmt(recovery, 2) : `> ${fmt((now() - worker.readyAt) / 1000, 0)} (not drained)`, floor: '–', target: `≤ ${TARGETS.recoverySeconds}`, pass: drained && recovery <= TARGETS.recoverySeconds });
    rows.push({ scenario: sc, figure: 'invoices without their webhook / e-mail (lost)', app: `${lostHooks} / ${lostMails}`, floor: '–', target: '0 / 0', pass: lostHooks === 0 && lostMails === 0 });
    details.push(
      `3. SIGKILL: ${fmt(BURST)} sends (${s.failures.length} not 200) took ${(s.ms / 1000).toFixed(2)} s; the worker was SIGKILLed ${((killedAt - s.began) / 1000).toFixed(2)} s after the first send, with ${before.hooks} webhooks and ${before.mails} e-mails arrived (owed: ${BURST - before.hooks} webhooks, ${BURST - before.mails} e-mails); ` +
        `the new worker said ready ${((worker.readyAt - worker.startedAt) / 1000).toFixed(2)} s after its spawn; the owed webhooks arrived by ${owedHookTimes.length ? `+${((Math.max(...owedHookTimes) - worker.readyAt) / 1000).toFixed(2)} s` : '–'} and the owed e-mails by ${owedMailTimes.length ? `+${((Math.max(...owedMailTimes) - worker.readyAt) / 1000).toFixed(2)} s` : '–'} after ready ` +
        `(the first owed webhook at +${owedHookTimes.length ? ((Math.min(...owedHookTimes) - worker.readyAt) / 1000).toFixed(2) : '–'} s, the first owed e-mail at +${owedMailTimes.length ? ((Math.min(...owedMailTimes) - worker.readyAt) / 1000).toFixed(2) : '–'} s); duplicates (delivered more than once): ${dupHooks} webhooks, ${dupMails} e-mails${dupLead.length ? ` (their first copies arrived ${fmt(Math.min(...dupLead), 0)} to ${fmt(Math.max(...dupLead), 0)} ms before the kill)` : ''}.`,
    );
    log(`3. recovery ${fmt(recovery, 2)} s; lost ${lostHooks} webhooks, ${lostMails} e-mails; duplicates ${dupHooks} / ${dupMails}`);
  }

  rows.push(...fairness);

  // ---- The books -------------------------------------------------------------------------
  const emailStates = await sql<{ status: string; n: number }[]>`SELECT status, count(*)::int AS n FROM emails GROUP BY status ORDER BY status`;
  const deliveryStates = await sql<{ status: string; n: number }[]>`SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status ORDER BY status`;
  const jobsLeft = await sql<{ name: string; state: string; n: number }[]>`
    SELECT name, state, count(*)::int AS n FROM pgboss.job
     WHERE state IN ('active', 'retry', 'failed') OR (state = 'created' AND start_after <= now())
     GROUP BY name, state ORDER BY name, state`;
  const failedJobs = await sql<{ name: string; output: unknown }[]>`SELECT name, output FROM pgboss.job WHERE state = 'failed' OR (state = 'retry') LIMIT 3`;
  const badSignatures = receiver.hooks.filter((h) => !h.signed).length;
  details.push(
    `Database after the run: e-mails ${emailStates.map((r) => `${r.n} ${r.status}`).join(', ')}; webhook deliveries ${deliveryStates.map((r) => `${r.n} ${r.status}`).join(', ')}; ` +
      `jobs left (active, retry, failed, due): ${jobsLeft.length ? jobsLeft.map((j) => `${j.name} ${j.state} ${j.n}`).join(', ') : 'none'}${failedJobs.length ? `; e.g. ${JSON.stringify(failedJobs).slice(0, 400)}` : ''}; ` +
      `${badSignatures} of ${receiver.hooks.length} webhooks received with a signature that did not verify; ` +
      `${smtp.errors.length} SMTP connection error(s) at the server${smtp.errors.length ? ` (${[...new Set(smtp.errors)].slice(0, 3).join('; ')})` : ''}.`,
  );

  const workerExit = await worker.stop();
  const webTail = web.output();
  await web.stop();
  machine.loadAfter = loadAverage();
  const logNotes = workerLogs.flatMap(({ label, output }) => {
    const lines = output()
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.includes('"level":30,'));
    if (!lines.length) return [];
    const distinct = [...new Map(lines.map((l) => [l.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').slice(0, 200), l])).values()];
    return [`The ${label} logged ${lines.length} warning or error line(s); distinct, first 5: ${distinct.slice(0, 5).map((l) => `\`${l.slice(0, 300).replace(/`/g, "'")}\``).join('; ')}`];
  });
  if (workerExit !== 0) logNotes.push(`The worker exited with ${workerExit ?? 'a signal'} on SIGTERM at the end.`);
  const webErrors = webTail.split('\n').filter((l) => /"level":(50|60)|error/i.test(l));
  if (webErrors.length) logNotes.push(`The web process logged errors; last: \`${webErrors.at(-1)!.slice(0, 300).replace(/`/g, "'")}\``);

  const pass = rows.every((r) => r.pass !== false);
  const report = renderRun({ machine, db: db.source, rows, details, logNotes, pass, seconds: (Date.now() - runStarted) / 1000, pdfBytes: pdf.size, messageBytes: raw.length, hookBytes: sampleHook.bytes });
  process.stdout.write(`\n${report}\n`);
  if (RECORD) {
    const app = (scenario: string, figure: string) => rows.find((r) => r.scenario.startsWith(scenario) && r.figure.startsWith(figure))?.app ?? '–';
    await recordRun(EFFECTS_SECTION, {
      run: report,
      loadBefore: machine.loadBefore,
      figures: [
        app('1b', 'webhooks/s'),
        app('1b', 'e-mails/s'),
        app('2.', 'event created').split(' / ')[1] ?? '–',
        app('2.', 'send request').split(' / ')[1] ?? '–',
        app('3.', 'new worker ready'),
        pass ? 'PASS' : '**FAIL**',
      ],
    });
    log(`wrote ${path.relative(ROOT, RESULTS_FILE)}; total ${((Date.now() - runStarted) / 1000).toFixed(1)} s`);
  } else log(`--no-record: ${path.relative(ROOT, RESULTS_FILE)} left as it was; total ${((Date.now() - runStarted) / 1000).toFixed(1)} s`);
  return STRICT && !pass ? 1 : 0;
}

async function runFloor(run: FloorRun): Promise<Extract<FloorReply, { type: 'done' }>> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/effects-floor.ts'], {
    cwd: ROOT,
    env: { ...process.env, NODE_EXTRA_CA_CERTS: CA_FILE },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);
  try {
    const reply = new Promise<FloorReply>((resolve, reject) => {
      child.once('message', (m: FloorReply) => resolve(m));
      child.once('exit', (code, signal) => reject(new Error(`the floor exited (${code ?? signal}) without an answer:\n${out.slice(-3000)}`)));
    });
    child.send(run);
    const r = await Promise.race([reply, sleep(120_000).then(() => ({ type: 'failed' as const, error: 'no answer within 120 s' }))]);
    if (r.type !== 'done') throw new Error(`the floor failed: ${r.error}\n${out.slice(-3000)}`);
    return r;
  } finally {
    process.off('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

// ---------------------------------------------------------------------------------------------
// bench/RESULTS.md

const INTRO = `## Effects: webhooks and e-mails (npm run bench:effects)

Produced by \`npm run bench:effects\` (bench/effects.ts, issue 15). Each run starts one web process
(\`node dist/src/server.js\`) and one worker process (\`node dist/jobs/worker.js\`), the tsc build
the Procfile runs, on a fresh database, with a real SMTP server (smtp-server) and a real HTTPS
receiver (the self-signed certificate of test/helpers/tls, trusted through NODE_EXTRA_CA_CERTS;
WEBHOOK_ALLOW_PRIVATE_TARGETS=true), both on 127.0.0.1 in the bench process. The SMTP server reads
each message's header block and times it at the end of DATA; the receiver answers 200 at once and
verifies every HMAC-SHA256 signature. Each merchant has one endpoint, subscribed to
\`invoice.sent\`; every invoice goes to one client with an e-mail, so each send owes one e-mail
(with its PDF) and one webhook.

The **floor** is a plain Node process (bench/effects-floor.ts) that sends the same effects to the
same receivers as fast as it can, with no database, queue or bookkeeping: signed bodies of the
worker's event over a keep-alive https.Agent, and the worker's message (text, HTML, PDF) through
pooled nodemailer with the app's pool settings. It runs alone, after the app's burst.

1. **Burst**: 1,000 drafts (made beforehand with POST /invoices/bulk) sent with
   POST /invoices/{id}/send, 8 requests in flight (the web allows 10 of a key at once). Rate =
   (n − 1) ÷ (last − first arrival) at the receivers. Targets: webhooks ≥ 500/s, e-mails ≥ 150/s.
   **1a, live**: the worker delivers while the sends go on, so the web's send rate bounds what the
   receivers see; its rates are shown without a target (runs before 2026-11-25T05:10Z held them to
   1b's targets, which no send rate below them can meet). **1b, queued**: the worker is paused (SIGSTOP) while the 1,000 sends commit and
   resumed (SIGCONT) after, so the whole burst waits in its queues and the rate is the worker's
   own. Since 2026-11-25T05:00Z 1b is three such bursts one after the other, and its rates are
   their medians (one burst's rates moved by ±15 % from run to run). The floor runs alone after
   1b.
2. **Steady**: one POST /invoices with \`send_immediately\` every 200 ms for 30 s. Event → webhook
   is the event's \`created_at\` (in the body) to its arrival; request → e-mail is the moment the
   request was issued to the message's arrival. Targets: p99 ≤ 150 ms and ≤ 300 ms.
3. **SIGKILL**: a burst of 1,000; once a quarter of its 2,000 effects has arrived the worker is
   SIGKILLed and a new one started. Recovery = from the new worker's "invoicing worker ready" line
   to the arrival of the last effect still owed at the kill. Target ≤ 20 s, and no invoice without
   its e-mail and webhook (duplicates are reported, not failed).
4. **Fairness**: as soon as merchant X's last send of 1a is answered, merchant Y (its own key,
   endpoint and client) sends one. Target: Y's e-mail and webhook each arrive ≤ 1 s after Y's
   request.

The machine is shared with other work: each run notes its load average.
`;

const EFFECTS_SECTION: Section = {
  id: 'effects',
  intro: INTRO,
  history: ['webhooks/s (1b)', 'e-mails/s (1b)', 'webhook p99 ms', 'e-mail p99 ms', 'SIGKILL recovery s', 'result'],
};

function renderRun(r: {
  machine: Machine;
  db: string;
  rows: Row[];
  details: string[];
  logNotes: string[];
  pass: boolean;
  seconds: number;
  pdfBytes: number;
  messageBytes: number;
  hookBytes: number;
}): string {
  const m = r.machine;
  const effects = Object.fromEntries(jobs.flatMap((j) => (j.runner === 'scheduled' ? [] : [[j.queue.name, j.concurrency]])));
  const cmd = [
    process.env.DATABASE_URL ? `DATABASE_URL=${redact(process.env.DATABASE_URL)}` : null,
    ...['EFFECTS_BURST', 'EFFECTS_STEADY_SECONDS', 'EFFECTS_FLOOR_CONCURRENCY'].map((k) => (process.env[k] ? `${k}=${process.env[k]}` : null)),
    process.env.npm_lifecycle_event === 'bench:effects' ? 'npm run bench:effects' : 'tsx bench/effects.ts',
    ...process.argv.slice(2),
  ]
    .filter(Boolean)
    .join(' ');
  return [
    `### Effects run of ${new Date().toISOString()}`,
    '',
    `- Command: \`${cmd}\`, database: ${r.db}; ${r.seconds.toFixed(0)} s in all`,
    `- Code: ${codeVersion()}`,
    `- Machine: ${m.nproc} CPU(s) (${m.cpu}), ${m.memory} RAM, Node ${m.node}, PostgreSQL ${m.postgres}`,
    `- Load average (1/5/15 min) before: ${m.loadBefore}; after: ${m.loadAfter ?? '–'}`,
    `- Settings: burst ${fmt(BURST)}, steady ${STEADY_SECONDS} s at one per ${STEADY_INTERVAL_MS} ms, client ${CLIENT_CONCURRENCY} requests in flight; web DATABASE_POOL_SIZE=${WEB_POOL}, worker the default pools (10 for its own work, 10 for pg-boss's job states); both NODE_ENV=production, the web at LOG_LEVEL=warn and the worker at info (its only info line is the ready line); ` +
      `worker concurrency per queue \`${JSON.stringify(effects)}\`, SMTP pool \`${JSON.stringify(SMTP_POOL)}\`; floor ${FLOOR_CONCURRENCY} webhooks in flight; ` +
      `invoice message ${fmt(r.messageBytes)} bytes with a ${fmt(r.pdfBytes)}-byte PDF, webhook body ${fmt(r.hookBytes)} bytes`,
    `- Result: **${r.pass ? 'PASS' : 'FAIL'}**`,
    '',
    '| Scenario | Figure | App | Floor | Target | Result |',
    '|---|---|---:|---:|---|---|',
    ...r.rows.map((x) => `| ${x.scenario} | ${x.figure} | ${x.app} | ${x.floor} | ${x.target} | ${x.pass === null ? '–' : x.pass ? 'PASS' : 'FAIL'} |`),
    '',
    ...r.details.map((d) => `- ${d}`),
    ...r.logNotes.map((d) => `- ${d}`),
    '',
  ].join('\n');
}

/** The commit the processes were built from, and whether src/ or jobs/ differed from it then. */
let builtFrom: string | null = null;
function codeVersion(): string {
  return builtFrom ?? 'unknown';
}
function noteCodeVersion(): void {
  try {
    const git = (...args: string[]) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const commit = git('log', '-1', '--format=%h %cI');
    const dirty = git('status', '--porcelain', '--', 'src', 'jobs');
    builtFrom = `commit ${commit}${dirty ? `, with uncommitted changes in ${dirty.split('\n').length} file(s) of src/ and jobs/` : ''} (at the build)`;
  } catch {
    builtFrom = 'unknown (git not available)';
  }
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(unparsable)';
  }
}

main().then(
  async (code) => {
    await cleanup();
    process.exit(code);
  },
  async (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    const outputs = workerLogs.map(({ label, output }) => `--- ${label} output (last 2000 characters):\n${output().slice(-2000)}`).join('\n');
    if (outputs) log(outputs);
    await cleanup();
    process.exit(1);
  },
);
