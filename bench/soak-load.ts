/**
 * The soak of issue 6 item 6, shared by `npm run bench:soak` (bench/soak.ts, 10 minutes) and
 * test/soak.test.ts (about a minute in CI): one web and one worker process from their real entry
 * points, a real SMTP sink and a real HTTPS webhook receiver, a fixed number of loops of mixed
 * requests, VmRSS of both processes every second, then a drain and a reconciliation by query.
 * It reports; the callers decide what fails.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Sql } from '../src/db/client.js';
import { freePort } from '../src/db/embedded.js';
import { API_PREFIX } from '../src/http/urls.js';
import { TEST_ENV } from '../test/helpers/app.js';
import { startHttpsReceiver } from '../test/helpers/https-receiver.js';
import { spawnApp, startWorkerProcess, whenReady } from '../test/helpers/processes.js';
import { startSmtpSink } from '../test/helpers/smtp.js';
import { Latencies } from './load.js';
import { apiRequest } from './api-client.js';

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface SoakOptions {
  /** Repository root: the processes run from here. */
  cwd: string;
  databaseUrl: string;
  /** A connection of the caller's to the same database, for the reconciliation queries. */
  sql: Sql;
  /** A '*' key whose rate limit the run cannot reach. */
  apiKey: string;
  seconds: number;
  loops: number;
  /** Each loop starts an iteration at most this often: the offered load is fixed, not "as fast as possible". */
  iterationMs: number;
  /** How long the queues may take to empty after the load before the run counts as failed. */
  drainTimeoutMs: number;
  log(msg: string): void;
}

/** What each kind of request must answer; anything else is an unexpected status. */
export const EXPECTED = {
  create: 201,
  'create (idempotent replay)': 201,
  read: 200,
  list: 200,
  send: 200,
  'mark-paid': 200,
  'create, invalid body': 422,
  'read, unknown id': 404,
  'mark-paid, draft': 409,
} as const;
export type Kind = keyof typeof EXPECTED;

export interface RssSample {
  /** Seconds since the load began. */
  t: number;
  webKb: number;
  workerKb: number;
}

export interface Growth {
  fromKb: number;
  toKb: number;
  pct: number;
}

export interface KindCount {
  kind: Kind;
  expected: number;
  byStatus: Record<string, number>;
  p50: number;
  p99: number;
}

export interface SoakResult {
  seconds: number;
  loops: number;
  iterationMs: number;
  samples: RssSample[];
  requests: KindCount[];
  totalRequests: number;
  /** The first few requests that answered something their kind did not ask for, with their bodies. */
  unexpected: string[];
  unexpectedCount: number;
  invoicesCreated: number;
  invoicesSent: number;
  invoicesPaid: number;
  /** Jobs waiting or running (pgboss.job created/active/retry) when the load stopped. */
  backlogAtEnd: number;
  drainSeconds: number;
  emails: { recorded: number; sentByWorker: number; received: number; distinctReceived: number; missing: number; invoiceEmails: number; receiptEmails: number };
  webhooks: { events: number; received: number; distinctReceived: number; missing: number; deliveriesNotSuccess: number };
  stuckJobs: { name: string; state: string; n: number }[];
  /** How each process exited on SIGTERM after the run (null: by a signal). */
  exitCodes: { web: number | null; worker: number | null };
  /** Every failed reconciliation (RSS limits are the caller's). */
  problems: string[];
}

function vmRssKb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

/**
 * RSS "at" an instant of the run: the median of the samples in the window that ends there. One
 * 1-second sample lands anywhere in a garbage-collection cycle; the median measures the level.
 * `floor` gives the window's lowest sample instead: what is left after a collection, which a
 * crest of the heap does not move and a leak does.
 */
export function rssAt(samples: RssSample[], atSecond: number, windowSeconds: number, which: 'webKb' | 'workerKb', floor = false): number {
  const inWindow = samples
    .filter((s) => s.t > atSecond - windowSeconds && s.t <= atSecond)
    .map((s) => s[which])
    .sort((a, b) => a - b);
  return inWindow[floor ? 0 : Math.floor(inWindow.length / 2)] ?? 0;
}

/**
 * Growth of both processes' RSS from `fromFraction` of the run to its end, each the lowest sample
 * of `window` seconds: what a collection leaves, which a leak raises and a crest of the heap
 * between collections does not.
 */
export function rssGrowth(
  r: SoakResult,
  fromFraction: number,
  window = Math.max(5, Math.round(r.seconds * 0.05)),
): { web: Growth; worker: Growth; window: number; from: number } {
  const from = Math.round(r.seconds * fromFraction);
  const growth = (which: 'webKb' | 'workerKb'): Growth => {
    const fromKb = rssAt(r.samples, from, window, which, true);
    const toKb = rssAt(r.samples, r.seconds, window, which, true);
    return { fromKb, toKb, pct: fromKb > 0 ? ((toKb - fromKb) / fromKb) * 100 : NaN };
  };
  return { web: growth('webKb'), worker: growth('workerKb'), window, from };
}

// A fixed set of clients: after the first round every create reuses one (spec: same e-mail, same
// client), as a merchant's traffic does, instead of growing the client table without end.
const CLIENTS = 40;

function invoiceBody(n: number): Record<string, unknown> {
  const c = n % CLIENTS;
  return {
    client: { name: `Cliente Soak ${c}`, email: `cliente${c}@soak.example` },
    due_date: '2099-12-31',
    items: [
      { description: 'Consultoría', quantity: 2, unit_price: 5000 },
      { description: 'Soporte mensual', quantity: 1, unit_price: 12000 + (n % 7) * 100 },
    ],
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function count(sql: Sql, query: string): Promise<number> {
  const [row] = await sql.unsafe<{ n: number }[]>(query);
  return row!.n;
}

// Jobs not finished: a cron job created for the coming minute is not a backlog.
const PENDING_JOBS = `SELECT count(*)::int AS n FROM pgboss.job WHERE state IN ('active', 'retry') OR (state = 'created' AND start_after <= now())`;

export async function runSoak(t: Teardown, o: SoakOptions): Promise<SoakResult> {
  const smtp = await startSmtpSink(t);
  const receiver = await startHttpsReceiver(t);
  // Web and worker share the key that seals webhook secrets, as the deployment's processes do.
  const env = {
    DATABASE_URL: o.databaseUrl,
    SMTP_URL: smtp.url,
    ENCRYPTION_KEY: TEST_ENV.ENCRYPTION_KEY,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    NODE_EXTRA_CA_CERTS: path.join(o.cwd, 'test/helpers/tls/receiver.crt'),
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
  };
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const shared = { ...env, PUBLIC_BASE_URL: baseUrl };
  const web = spawnApp(t, 'src/server.ts', { ...shared, PORT: String(port), HOST: '127.0.0.1', DATABASE_POOL_SIZE: '10' });
  await whenReady(web, 'the web process', () => fetch(`${baseUrl}/readyz`).then((r) => r.ok, () => false));
  const worker = await startWorkerProcess(t, shared);
  o.log(`web ${web.process.pid} on ${baseUrl}, worker ${worker.process.pid}`);

  const stats = new Map<Kind, { byStatus: Record<string, number>; latencies: Latencies }>(
    (Object.keys(EXPECTED) as Kind[]).map((k) => [k, { byStatus: {}, latencies: new Latencies() }]),
  );
  const unexpected: string[] = [];
  let unexpectedCount = 0;
  const call = async (kind: Kind, method: 'GET' | 'POST', route: string, body?: unknown, headers: Record<string, string> = {}) => {
    const started = performance.now();
    const { status, text } = await apiRequest(baseUrl, o.apiKey, method, route, body, headers);
    const s = stats.get(kind)!;
    s.latencies.add(performance.now() - started);
    s.byStatus[status] = (s.byStatus[status] ?? 0) + 1;
    if (status !== EXPECTED[kind]) {
      unexpectedCount += 1;
      if (unexpected.length < 10) unexpected.push(`${kind} ${method} ${route} → ${status} ${text.slice(0, 300)}`);
      return null;
    }
    return text ? (JSON.parse(text) as Record<string, any>) : {};
  };

  const endpoint = await fetch(`${baseUrl}${API_PREFIX}/webhooks/endpoints`, {
    method: 'POST',
    headers: { 'x-api-key': o.apiKey, 'content-type': 'application/json' },
    // No `events`: every event type, so every event the load causes must reach the receiver.
    body: JSON.stringify({ url: receiver.url('/soak'), description: 'soak receiver' }),
  });
  if (endpoint.status !== 201) throw new Error(`registering the webhook endpoint answered ${endpoint.status}: ${await endpoint.text()}`);
  // Events from before the endpoint existed (the caller's set-up) were never meant for it.
  const earlier = new Set((await o.sql<{ id: string }[]>`SELECT id FROM events`).map((r) => r.id));

  const samples: RssSample[] = [];
  const loadStart = Date.now();
  const sampler = setInterval(() => {
    try {
      samples.push({ t: (Date.now() - loadStart) / 1000, webKb: vmRssKb(web.process.pid!), workerKb: vmRssKb(worker.process.pid!) });
    } catch {
      // A process that is gone has no /proc entry; its exit is reported by the checks below.
    }
  }, 1000);
  const progress = setInterval(() => {
    const last = samples.at(-1);
    if (last) o.log(`${Math.round(last.t)} s: web ${Math.round(last.webKb / 1024)} MiB, worker ${Math.round(last.workerKb / 1024)} MiB, ${unexpectedCount} unexpected`);
  }, 60_000);

  let created = 0;
  let sent = 0;
  let paid = 0;
  let seq = 0;
  const deadline = loadStart + o.seconds * 1000;
  // One iteration: create, read, and in known shares replay, list, send, pay and three requests
  // that must fail. Sends are one in ten so the worker's e-mails (a PDF each) keep pace.
  const loop = async () => {
    while (Date.now() < deadline) {
      const began = Date.now();
      const n = ++seq;
      const body = invoiceBody(n);
      const key = `soak-${randomUUID()}`;
      const inv = await call('create', 'POST', '/invoices', body, { 'idempotency-key': key });
      if (inv) {
        created += 1;
        const id = inv.invoice_id as string;
        if (n % 10 === 5) {
          const again = await call('create (idempotent replay)', 'POST', '/invoices', body, { 'idempotency-key': key });
          if (again && again.invoice_id !== id) {
            unexpectedCount += 1;
            unexpected.push(`idempotent replay gave invoice ${String(again.invoice_id)}, first call ${id}`);
          }
        }
        await call('read', 'GET', `/invoices/${id}`);
        if (n % 25 === 12) await call('mark-paid, draft', 'POST', `/invoices/${id}/mark-paid`, {});
        if (n % 10 === 0 && (await call('send', 'POST', `/invoices/${id}/send`))) {
          sent += 1;
          if (n % 20 === 0) {
            const body = { payment_method: 'transfer', payment_amount: Number(inv.total) };
            if (await call('mark-paid', 'POST', `/invoices/${id}/mark-paid`, body, { 'idempotency-key': `pay-${id}` })) paid += 1;
          }
        }
      }
      if (n % 4 === 0) await call('list', 'GET', `/invoices?limit=20&offset=${n % 3 === 0 ? 20 : 0}`);
      if (n % 20 === 7) await call('create, invalid body', 'POST', '/invoices', { ...body, items: [] });
      if (n % 20 === 13) await call('read, unknown id', 'GET', `/invoices/${randomUUID()}`);
      await sleep(Math.max(0, o.iterationMs - (Date.now() - began)));
    }
  };
  await Promise.all(Array.from({ length: o.loops }, () => loop()));
  const backlogAtEnd = await count(o.sql, PENDING_JOBS);
  o.log(`load done: ${created} created, ${sent} sent, ${paid} paid; ${backlogAtEnd} job(s) pending`);

  // The drain: every e-mail row sent, every event delivered, no job waiting. Sampling goes on so
  // the processes stay watched, but the figures compared are those of the load.
  const drainStart = Date.now();
  const problems: string[] = [];
  const events = async () => (await count(o.sql, `SELECT count(*)::int AS n FROM events`)) - earlier.size;
  const drained = async () =>
    (await count(o.sql, `SELECT count(*)::int AS n FROM emails WHERE status <> 'sent'`)) === 0 &&
    (await count(o.sql, `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'success'`)) === (await events()) &&
    (await count(o.sql, PENDING_JOBS)) === 0;
  while (!(await drained())) {
    if (Date.now() - drainStart > o.drainTimeoutMs) {
      problems.push(`the queues did not drain within ${o.drainTimeoutMs / 1000} s`);
      break;
    }
    await sleep(250);
  }
  const drainSeconds = (Date.now() - drainStart) / 1000;
  clearInterval(progress);
  // Mail is sent before its row is marked sent, and a webhook answered before it is recorded:
  // what the query saw has arrived, so no further wait is needed at the receivers.
  const rows = await o.sql<{ id: string; kind: string; status: string }[]>`SELECT id, kind, status FROM emails`;
  const receivedIds = smtp.messages.map((m) => m.messageId);
  const receivedSet = new Set(receivedIds);
  const emails = {
    recorded: rows.length,
    sentByWorker: rows.filter((r) => r.status === 'sent').length,
    received: receivedIds.length,
    distinctReceived: receivedSet.size,
    missing: rows.filter((r) => !receivedSet.has(`<${r.id}@invoicing>`)).length,
    invoiceEmails: rows.filter((r) => r.kind === 'invoice').length,
    receiptEmails: rows.filter((r) => r.kind === 'receipt').length,
  };
  if (emails.invoiceEmails !== sent) problems.push(`${sent} invoices sent but ${emails.invoiceEmails} invoice e-mail(s) recorded`);
  if (emails.receiptEmails !== paid) problems.push(`${paid} invoices paid but ${emails.receiptEmails} receipt e-mail(s) recorded`);
  if (emails.missing > 0) problems.push(`${emails.missing} recorded e-mail(s) never reached the SMTP sink`);
  if (emails.distinctReceived !== emails.received) problems.push(`${emails.received - emails.distinctReceived} e-mail(s) arrived twice`);
  if (emails.received !== emails.recorded) problems.push(`${emails.received} e-mails at the sink for ${emails.recorded} recorded`);

  const eventIds = (await o.sql<{ id: string }[]>`SELECT id FROM events`).map((r) => r.id).filter((id) => !earlier.has(id));
  const hookIds = receiver.received.map((r) => String(r.headers['x-webhook-id']));
  const hookSet = new Set(hookIds);
  const webhooks = {
    events: eventIds.length,
    received: hookIds.length,
    distinctReceived: hookSet.size,
    missing: eventIds.filter((id) => !hookSet.has(id)).length,
    deliveriesNotSuccess: await count(o.sql, `SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'success'`),
  };
  if (webhooks.missing > 0) problems.push(`${webhooks.missing} of ${webhooks.events} event(s) never reached the receiver`);
  if (webhooks.received !== webhooks.distinctReceived) problems.push(`${webhooks.received - webhooks.distinctReceived} webhook(s) delivered more than once`);
  if (webhooks.distinctReceived !== webhooks.events) problems.push(`${webhooks.distinctReceived} distinct webhooks received for ${webhooks.events} events`);
  if (webhooks.deliveriesNotSuccess > 0) problems.push(`${webhooks.deliveriesNotSuccess} webhook deliveries not successful`);

  const stuckJobs = await o.sql<{ name: string; state: string; n: number }[]>`
    SELECT name, state, count(*)::int AS n FROM pgboss.job
     WHERE state IN ('active', 'retry', 'failed') OR (state = 'created' AND start_after <= now())
     GROUP BY name, state ORDER BY name, state`;
  if (stuckJobs.length > 0) problems.push(`jobs left: ${JSON.stringify(stuckJobs)}`);
  if (unexpectedCount > 0) problems.push(`${unexpectedCount} response(s) other than the load asked for`);

  clearInterval(sampler);
  const [webExit, workerExit] = await Promise.all(
    [web, worker].map((c) => {
      c.process.kill('SIGTERM');
      return c.exited;
    }),
  );
  for (const [name, exit, c] of [['web', webExit!, web], ['worker', workerExit!, worker]] as const) {
    if (exit.code !== 0) problems.push(`the ${name} process exited with ${exit.code ?? exit.signal} on SIGTERM: ${c.output().slice(-2000)}`);
  }

  const requests = [...stats].map(([kind, s]) => {
    const [p50, p99] = s.latencies.percentiles(50, 99);
    return { kind, expected: EXPECTED[kind], byStatus: s.byStatus, p50: p50!, p99: p99! };
  });
  return {
    seconds: o.seconds,
    loops: o.loops,
    iterationMs: o.iterationMs,
    samples: samples.filter((s) => s.t <= o.seconds),
    requests,
    totalRequests: requests.reduce((sum, r) => sum + Object.values(r.byStatus).reduce((a, b) => a + b, 0), 0),
    unexpected,
    unexpectedCount,
    invoicesCreated: created,
    invoicesSent: sent,
    invoicesPaid: paid,
    backlogAtEnd,
    drainSeconds,
    emails,
    webhooks,
    stuckJobs,
    exitCodes: { web: webExit!.code, worker: workerExit!.code },
    problems,
  };
}
