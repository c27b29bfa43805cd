import { fileURLToPath } from 'node:url';
import type { PgBoss, JobWithMetadata } from 'pg-boss';
import { loadConfig, type Config } from '../src/config.js';
import { openDatabase, openQueuePool } from '../src/db/open.js';
import type { Sql } from '../src/db/client.js';
import { createBoss, HEARTBEAT_REFRESH_SECONDS, queues, wakeIdleLoop } from '../src/queue/boss.js';
import { createMailer, type Mailer } from '../src/email/transport.js';
import { onShutdown, SHUTDOWN_GRACE_MS } from '../src/shutdown.js';
import { deliverEmail } from './email-send.js';
import { sweepOverdue } from './overdue-sweep.js';
import { scheduleReminders } from './reminders-schedule.js';
import { purgeExpired } from './idempotency-purge.js';
import { purgeExpiredEvents } from '../src/retention/purge.js';
import { expireCheckouts } from './checkout-expire.js';
import { pollDteStatus, submitDtes, sweepDtes } from './dte-submit.js';
import { fanOut } from './webhook-fanout.js';
import { deliverWebhooks } from './webhook-deliver.js';
import { DELIVERIES_PER_ENDPOINT } from '../src/webhooks/delivery.js';
import { loadSecretBox, type SecretBox } from '../src/webhooks/secrets.js';
import { configureGateways } from '../src/checkout/providers/registry.js';
import { createLogger, redactedMessage, type Log } from '../src/logger.js';
import { assertPatched, PG_BOSS } from '../src/db/driver-check.js';
import { readEnvFile } from '../src/env-file.js';

export interface WorkerDeps {
  config: Config;
  sql: Sql;
  boss: PgBoss;
  mailer: Mailer;
  secrets: SecretBox;
  /** Where e-mail and webhook failures are logged; tests that run a job by hand may leave it out. */
  log?: Log;
}

export interface Worker {
  deps: WorkerDeps;
  stop(): Promise<void>;
}

// How many jobs of a queue one worker runs at once (pg-boss's localConcurrency), and how many of
// one group of them (localGroupConcurrency; jobs are grouped by merchant, webhook attempts by
// endpoint). A group's cap below the worker's total is what keeps one merchant's burst from
// starving another's, and one slow or hanging receiver (15 s timeouts) from occupying every
// webhook slot. The cap is kept in the worker's memory, exactly: pg-boss's database-wide
// groupConcurrency lets concurrent fetches overshoot it (each counts the group's active jobs as its
// own snapshot sees them), and with 48 fetch loops one endpoint held twice its share.
export const EFFECTS = {
  email: { localConcurrency: 16, perGroup: 8, batchSize: 1 },
  // A fan-out batch is one transaction. pg-boss counts a group's cap in jobs and keeps it within
  // localConcurrency: a merchant's burst fills up to 4 loops' batches at once, and the other 28
  // loops serve the rest. With a cap of one batch, one merchant's events fanned out one batch after
  // another, and that bounded the webhooks of a burst (bench:effects 1b: 303 → 369 webhooks/s).
  fanout: { localConcurrency: 32, perGroup: 32, batchSize: 8 },
  // Attempts are fetched 8 at a time, claimed in one statement and their jobs completed together:
  // a third of the statements per webhook they took one by one. A batch that waits on a hanging
  // receiver holds that endpoint's slots and its own loop, and its other endpoints' slots for at
  // most SLOT_GRACE_MS: a hanging endpoint holds at most 16 attempts, so at most 16 of 48 loops.
  webhook: { localConcurrency: 48, perGroup: DELIVERIES_PER_ENDPOINT, batchSize: 8 },
  // One submission of a merchant at a time per worker: its documents go up together.
  dte: { localConcurrency: 4, perGroup: 1, batchSize: 1 },
} as const;
// NOTIFY wakes a worker the moment a job commits; polling stays as the backstop for a missed
// notification and for jobs that come due later (retries, checkout expiry).
const POLLING_SECONDS = 1;

function isFinalAttempt(job: JobWithMetadata): boolean {
  return job.retryCount >= job.retryLimit;
}

/**
 * A job whose handler threw. pg-boss retries it (the same job id, retryCount one higher) until
 * retryLimit, so a warning while retries are left, an error when the job stays failed.
 */
function logJobFailure(log: Log, queue: string, job: JobWithMetadata, err: unknown): void {
  const final = isFinalAttempt(job);
  log[final ? 'error' : 'warn'](
    { queue, job_id: job.id, retry_count: job.retryCount, retry_limit: job.retryLimit, error: redactedMessage(err) },
    final ? 'job failed, no retries left' : 'job failed, to be retried',
  );
}

/**
 * A worker that just finished a job fetches again at once instead of waiting for its next poll,
 * for as long as fetches find work: pg-boss only bursts on full batches, and a batch cut short by
 * a group's cap would otherwise send the worker to sleep with work still waiting.
 */
function keepFetching(boss: PgBoss, queue: string): void {
  for (const w of boss.getWipData()) if (w.name === queue && w.count > 0) boss.notifyWorker(w.id);
}

type Shape = { localConcurrency: number; perGroup: number; batchSize: number };

// How long a batch's ended job keeps its group slot while the rest of the batch still runs.
// Far longer than a batch of quick jobs takes, far shorter than a hanging receiver's 15 s.
const SLOT_GRACE_MS = 500;

/**
 * A fetched job as patches/pg-boss+12.38.0.patch hands it over (assertPatched checks at start-up):
 * a job of a group has `releaseGroupSlot`, which gives the group's local slot back, once, so a
 * batch's fast jobs free their groups as they end instead of when the batch's slowest job does.
 */
type SlottedJob<T extends object> = JobWithMetadata<T> & { releaseGroupSlot?: () => void };

/** Called as each job of a batch ends, to give its group slot back (see workJobs). */
type Release<T extends object> = (job: SlottedJob<T>) => void;

/**
 * Runs a queue's jobs with pg-boss's concurrency; `settle` runs a fetched batch and says how each
 * job of it went, and each job is settled on its own (perJobResults): one job that throws is
 * retried without its batch neighbours. pg-boss completes the batch's jobs in one statement once
 * the last of them ends.
 */
async function workJobs<T extends object>(
  boss: PgBoss,
  log: Log,
  queue: string,
  shape: Shape,
  pollingSeconds: number,
  settle: (jobs: SlottedJob<T>[], release: Release<T>) => Promise<PromiseSettledResult<unknown>[]>,
): Promise<void> {
  const options = {
    localConcurrency: shape.localConcurrency,
    localGroupConcurrency: shape.perGroup,
    batchSize: shape.batchSize,
    pollingIntervalSeconds: pollingSeconds,
    notifyPollingIntervalSeconds: pollingSeconds,
    includeMetadata: true as const,
    perJobResults: true as const,
    burstWhenBatchFull: shape.batchSize > 1,
    heartbeatRefreshSeconds: HEARTBEAT_REFRESH_SECONDS,
  };
  // Jobs running per group, as pg-boss's local cap counts them.
  const running = new Map<string, number>();
  const groupsOf = (jobs: JobWithMetadata<T>[]) => jobs.flatMap((job) => job.groupId ?? []);
  await boss.work<T, unknown, typeof options>(queue, options, async (jobs: SlottedJob<T>[]) => {
    const groups = groupsOf(jobs);
    for (const g of groups) running.set(g, (running.get(g) ?? 0) + 1);
    const holding = new Set(jobs.filter((job) => job.groupId));
    const release: Release<T> = (job) => {
      if (!holding.delete(job)) return;
      job.releaseGroupSlot?.();
      const n = running.get(job.groupId!)! - 1;
      if (n > 0) running.set(job.groupId!, n);
      else running.delete(job.groupId!);
      // Fetches passed the group's waiting jobs by while it was at its cap; once a batch of them
      // fits again, an idle loop takes it (fewer would be fetched whole and the rest put back).
      if (n === shape.perGroup - Math.min(shape.batchSize, shape.perGroup)) wakeIdleLoop(boss, queue);
    };
    // A batch's jobs give their slots back together when it ends, and its loop fetches the next
    // batch: freeing each slot as its job ended sent other loops after a slot or two at a time, each
    // fetching a whole batch and putting most of it back. A job that ends while its neighbours still
    // run keeps its slot for at most SLOT_GRACE_MS: a batch still running by then waits on something
    // slow, and its ended jobs give their slots back, each later one as it ends.
    const ended: SlottedJob<T>[] = [];
    let lingering = false;
    let grace: NodeJS.Timeout | undefined;
    const jobEnded: Release<T> = (job) => {
      if (lingering) return release(job);
      ended.push(job);
      if (ended.length < jobs.length) {
        grace ??= setTimeout(() => {
          lingering = true;
          for (const j of ended) release(j);
        }, SLOT_GRACE_MS);
      }
    };
    // Work found: more of it may be waiting, for the next idle loop to take. Not when every job
    // found belongs to a group now at its cap: the next loop could take only other groups' jobs,
    // and those woke a loop of their own when they were queued.
    if (jobs.length > groups.length || groups.some((g) => running.get(g)! < shape.perGroup)) wakeIdleLoop(boss, queue);
    let settled: PromiseSettledResult<unknown>[];
    try {
      settled = await settle(jobs, jobEnded);
    } finally {
      clearTimeout(grace);
      for (const job of jobs) release(job);
    }
    keepFetching(boss, queue);
    return settled.map((r, n) => {
      const job = jobs[n]!;
      if (r.status === 'fulfilled') return { id: job.id, status: 'completed' as const };
      logJobFailure(log, queue, job, r.reason);
      return { id: job.id, status: 'failed' as const, output: { message: r.reason instanceof Error ? r.reason.message : String(r.reason) } };
    });
  });
}

/**
 * The jobs of a batch, each run on its own, concurrently: `start` begins them all and gives one
 * promise per job, in order. A slow job holds its own group's slot, and its neighbours' for at
 * most SLOT_GRACE_MS.
 */
function workEachOf<T extends object>(
  boss: PgBoss,
  log: Log,
  queue: string,
  shape: Shape,
  pollingSeconds: number,
  start: (jobs: JobWithMetadata<T>[]) => Promise<unknown>[],
) {
  return workJobs<T>(boss, log, queue, shape, pollingSeconds, (jobs, jobEnded) =>
    Promise.allSettled(start(jobs).map((outcome, n) => outcome.finally(() => jobEnded(jobs[n]!)))),
  );
}

/** workEachOf with each job begun by `run`. */
function workEach<T extends object>(boss: PgBoss, log: Log, queue: string, shape: Shape, pollingSeconds: number, run: (job: JobWithMetadata<T>) => Promise<unknown>) {
  return workEachOf<T>(boss, log, queue, shape, pollingSeconds, (jobs) => jobs.map((job) => run(job)));
}

/**
 * A batch run as one unit (one transaction for all its jobs). When it fails, each job is run
 * alone, so a job that cannot succeed fails by itself and its neighbours go through.
 */
function workBatches<T extends object>(boss: PgBoss, log: Log, queue: string, shape: Shape, pollingSeconds: number, run: (data: T[]) => Promise<unknown>) {
  return workJobs<T>(boss, log, queue, shape, pollingSeconds, async (jobs) => {
    try {
      const value = await run(jobs.map((job) => job.data));
      return jobs.map(() => ({ status: 'fulfilled' as const, value }));
    } catch {
      return Promise.allSettled(jobs.map((job) => run([job.data])));
    }
  });
}

const SCHEDULED_FETCH = { batchSize: 1, includeMetadata: true as const, pollingIntervalSeconds: 2 };

/** A scheduled queue's jobs, one at a time; one that throws is logged and pg-boss retries it. */
async function workScheduled<T extends object>(boss: PgBoss, log: Log, queue: string, run: (job: JobWithMetadata<T>) => Promise<unknown>): Promise<void> {
  await boss.work<T, unknown, typeof SCHEDULED_FETCH>(queue, SCHEDULED_FETCH, async ([job]) => {
    if (!job) return;
    try {
      await run(job);
    } catch (err) {
      logJobFailure(log, queue, job, err);
      throw err;
    }
  });
}

export interface WorkerOptions {
  /** The caller's logger (the worker's entry point logs its ready line on it); otherwise one made from config. */
  logger?: Log;
  /** The effect queues' polling backstop behind NOTIFY (tests lengthen it to prove the wake-up). */
  pollingSeconds?: number;
  /** The pool pg-boss keeps job states on (openQueuePool); otherwise `sql`. */
  queueSql?: Sql;
}

/** Registers every queue and schedule on pg-boss; the same code in `worker` and `npm start`. */
export async function startWorker(config: Config, sql: Sql, opts: WorkerOptions = {}): Promise<Worker> {
  // Batched effect queues count on each job giving its group slot back as it ends.
  assertPatched(PG_BOSS);
  const log = opts.logger ?? createLogger(config);
  const polling = opts.pollingSeconds ?? POLLING_SECONDS;
  const secrets = loadSecretBox(config);
  // The expiry asks gateways how a session's payment stands, at the addresses configured.
  configureGateways(config);
  const boss = createBoss(opts.queueSql ?? sql, { worker: true });
  boss.on('error', (err) => log.error({ err }, 'pg-boss error'));
  await boss.start();
  const deps: WorkerDeps = { config, sql, boss, mailer: createMailer(config), secrets, log };

  await workEach(boss, log, queues.emailSend.name, EFFECTS.email, polling, (job) => deliverEmail(deps, job.data, isFinalAttempt(job)));
  await workBatches(boss, log, queues.webhookFanout.name, EFFECTS.fanout, polling, (data) => fanOut(deps, data));
  await workEachOf(boss, log, queues.webhookDeliver.name, EFFECTS.webhook, polling, (jobs) => deliverWebhooks(deps, jobs.map((job) => job.data)));
  await workScheduled(boss, log, queues.overdueSweep.name, () => sweepOverdue(deps));
  await workScheduled(boss, log, queues.remindersSchedule.name, () => scheduleReminders(deps));
  await workScheduled(boss, log, queues.idempotencyPurge.name, () => purgeExpired(deps));
  await workScheduled(boss, log, queues.checkoutExpire.name, (job) => expireCheckouts(deps, job.data));
  await workEach(boss, log, queues.dteSubmit.name, EFFECTS.dte, polling, (job) => submitDtes(deps, job.data));
  await workEach(boss, log, queues.dteStatus.name, EFFECTS.dte, polling, (job) => pollDteStatus(deps, job.data));
  await workScheduled(boss, log, queues.dteSweep.name, () => sweepDtes(deps));
  await workScheduled(boss, log, queues.eventPurge.name, () => purgeExpiredEvents(deps.sql, config.EVENT_RETENTION_DAYS));

  // docs/decisions.md §4: the overdue sweep every 10 minutes; reminders at 09:00 merchant time, so the
  // planner runs often enough to catch 09:00 in every time zone; purges hourly.
  await boss.schedule(queues.overdueSweep.name, '*/10 * * * *');
  await boss.schedule(queues.remindersSchedule.name, '*/10 * * * *');
  await boss.schedule(queues.idempotencyPurge.name, '17 * * * *');
  // Each checkout has its own job at expires_at; this sweep only catches ones that were missed.
  await boss.schedule(queues.checkoutExpire.name, '*/10 * * * *');
  // Submission and polls are jobs of their own; this only catches what they gave up on.
  await boss.schedule(queues.dteSweep.name, '*/15 * * * *');
  // Once a day, at an hour of little traffic in Chile.
  await boss.schedule(queues.eventPurge.name, '23 7 * * *');

  return {
    deps,
    async stop() {
      // Running jobs finish within the grace period; any still running after it go back to the queue.
      await boss.stop({ graceful: true, close: false, timeout: SHUTDOWN_GRACE_MS - 5_000 });
      deps.mailer.close();
    },
  };
}

async function main(): Promise<void> {
  readEnvFile();
  const config = loadConfig();
  const log = createLogger(config);
  const db = await openDatabase(config, 'invoicing-worker');
  const queueSql = openQueuePool(db, config, 'invoicing-worker-queue');
  const worker = await startWorker(config, db.sql, { logger: log, queueSql });
  log.info('invoicing worker ready');
  onShutdown(async () => {
    await worker.stop();
    await queueSql.end({ timeout: 5 });
    await db.close();
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
