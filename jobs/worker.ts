import { fileURLToPath } from 'node:url';
import type PgBoss from 'pg-boss';
import { loadConfig, type Config } from '../src/config.js';
import { openDatabase } from '../src/db/open.js';
import { isDatabaseUnavailable, type Sql } from '../src/db/client.js';
import { createBoss, queues } from '../src/jobs/boss.js';
import { createMailer, type Mailer } from '../src/email/transport.js';
import { onShutdown, SHUTDOWN_GRACE_MS } from '../src/server.js';
import { deliverEmail } from './email-send.js';
import { sweepOverdue } from './overdue-sweep.js';
import { scheduleReminders } from './reminders-schedule.js';
import { purgeExpired } from './idempotency-purge.js';
import { expireCheckouts } from './checkout-expire.js';
import { fanOut } from './webhook-fanout.js';
import { deliverWebhook } from './webhook-deliver.js';
import { loadSecretBox, type SecretBox } from '../src/webhooks/secrets.js';

export interface WorkerDeps {
  config: Config;
  sql: Sql;
  boss: PgBoss;
  mailer: Mailer;
  secrets: SecretBox;
}

export interface Worker {
  deps: WorkerDeps;
  stop(): Promise<void>;
}

// pg-boss 10 waits a polling interval after every fetch, found or not: throughput is pollers ×
// batch size per interval. E-mails go one per poller (each is an SMTP conversation of its own);
// fan-out is quick row writing; webhook attempts mostly wait on receivers (up to 15 s).
const EMAIL = { pollers: 4, batchSize: 1 };
const FANOUT = { pollers: 1, batchSize: 25 };
const WEBHOOK = { pollers: 4, batchSize: 8 };
// Jobs become visible within this long of being committed.
const POLL_SECONDS = 0.5;

function isFinalAttempt(job: PgBoss.JobWithMetadata): boolean {
  return job.retryCount >= job.retryLimit;
}

/**
 * Runs each job of a fetched batch at once and fails only the ones that threw: pg-boss then
 * completes the rest (it completes only jobs still active), so one bad job never retries its
 * neighbours.
 */
async function workEach<T extends object>(
  boss: PgBoss,
  queue: string,
  shape: { pollers: number; batchSize: number },
  run: (job: PgBoss.JobWithMetadata<T>) => Promise<unknown>,
): Promise<void> {
  const options = { batchSize: shape.batchSize, includeMetadata: true as const, pollingIntervalSeconds: POLL_SECONDS };
  for (let i = 0; i < shape.pollers; i++) {
    await boss.work<T>(queue, options, async (jobs) => {
      const results = await Promise.allSettled(jobs.map((job) => run(job)));
      await Promise.all(
        results.map((r, n) => (r.status === 'rejected' ? boss.fail(queue, jobs[n]!.id, { message: String(r.reason instanceof Error ? r.reason.message : r.reason) }) : null)),
      );
    });
  }
}

let toleratingLostWrites = false;

/**
 * pg-boss 10 completes or fails a job without awaiting the write (manager.js, `onFetch`): while
 * the database is away, that promise rejects with nobody to handle it, and Node ends the process.
 * Losing such a write is safe: the job's lease runs out, it runs again, and every handler is
 * idempotent (decisions §5). So only "database unavailable" passes; anything else still ends it.
 */
function tolerateLostJobWrites(log: (msg: string) => void): void {
  if (toleratingLostWrites) return;
  toleratingLostWrites = true;
  process.on('unhandledRejection', (reason) => {
    if (!isDatabaseUnavailable(reason)) throw reason;
    log(`database unavailable, a job's state was not recorded (its lease brings it back): ${reason instanceof Error ? reason.message : String(reason)}`);
  });
}

/** Registers every queue and schedule on pg-boss; the same code in `worker` and `npm start`. */
export async function startWorker(config: Config, sql: Sql, opts: { log?: (msg: string) => void } = {}): Promise<Worker> {
  const log = opts.log ?? ((msg: string) => process.stderr.write(`${msg}\n`));
  tolerateLostJobWrites(log);
  const secrets = loadSecretBox(config);
  const boss = createBoss(sql, { worker: true });
  boss.on('error', (err) => log(`pg-boss: ${String(err)}`));
  await boss.start();
  const deps: WorkerDeps = { config, sql, boss, mailer: createMailer(config), secrets };
  const fetch = { batchSize: 1, includeMetadata: true as const, pollingIntervalSeconds: POLL_SECONDS };

  await workEach(boss, queues.emailSend.name, EMAIL, (job) => deliverEmail(deps, job.data, isFinalAttempt(job)));
  await workEach(boss, queues.webhookFanout.name, FANOUT, (job) => fanOut(deps, job.data));
  await workEach(boss, queues.webhookDeliver.name, WEBHOOK, (job) => deliverWebhook(deps, job.data));
  await boss.work(queues.overdueSweep.name, fetch, async () => {
    await sweepOverdue(deps);
  });
  await boss.work(queues.remindersSchedule.name, fetch, async () => {
    await scheduleReminders(deps);
  });
  await boss.work(queues.idempotencyPurge.name, fetch, async () => {
    await purgeExpired(deps);
  });
  await boss.work(queues.checkoutExpire.name, fetch, async ([job]) => {
    if (job) await expireCheckouts(deps, job.data);
  });

  // Decisions §4: the overdue sweep every 10 minutes; reminders at 09:00 merchant time, so the
  // planner runs often enough to catch 09:00 in every time zone; purges hourly.
  await boss.schedule(queues.overdueSweep.name, '*/10 * * * *');
  await boss.schedule(queues.remindersSchedule.name, '*/10 * * * *');
  await boss.schedule(queues.idempotencyPurge.name, '17 * * * *');
  // Each checkout has its own job at expires_at; this sweep only catches ones that were missed.
  await boss.schedule(queues.checkoutExpire.name, '*/10 * * * *');

  return {
    deps,
    async stop() {
      // Running jobs finish within the grace period; any still running after it go back to the queue.
      await boss.stop({ graceful: true, wait: true, close: false, timeout: SHUTDOWN_GRACE_MS - 5_000 });
      deps.mailer.close();
    },
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const db = await openDatabase(config, 'invoicing-worker');
  const worker = await startWorker(config, db.sql);
  process.stderr.write('invoicing worker ready\n');
  onShutdown(async () => {
    await worker.stop();
    await db.close();
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
