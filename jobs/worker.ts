import { fileURLToPath } from 'node:url';
import type PgBoss from 'pg-boss';
import { loadConfig, type Config } from '../src/config.js';
import { openDatabase } from '../src/db/open.js';
import type { Sql } from '../src/db/client.js';
import { createBoss, queues } from '../src/jobs/boss.js';
import { createMailer, type Mailer } from '../src/email/transport.js';
import { onShutdown, SHUTDOWN_GRACE_MS } from '../src/server.js';
import { deliverEmail } from './email-send.js';
import { sweepOverdue } from './overdue-sweep.js';
import { scheduleReminders } from './reminders-schedule.js';
import { purgeExpired } from './idempotency-purge.js';

export interface WorkerDeps {
  config: Config;
  sql: Sql;
  boss: PgBoss;
  mailer: Mailer;
}

export interface Worker {
  deps: WorkerDeps;
  stop(): Promise<void>;
}

// How many jobs of a queue one worker process runs at once (pg-boss 10: one poller each).
const EMAIL_CONCURRENCY = 4;
// Jobs become visible within this long of being committed.
const POLL_SECONDS = 0.5;

function isFinalAttempt(job: PgBoss.JobWithMetadata): boolean {
  return job.retryCount >= job.retryLimit;
}

/** Registers every queue and schedule on pg-boss; the same code in `worker` and `npm start`. */
export async function startWorker(config: Config, sql: Sql, opts: { log?: (msg: string) => void } = {}): Promise<Worker> {
  const log = opts.log ?? ((msg: string) => process.stderr.write(`${msg}\n`));
  const boss = createBoss(sql, { worker: true });
  boss.on('error', (err) => log(`pg-boss: ${String(err)}`));
  await boss.start();
  const deps: WorkerDeps = { config, sql, boss, mailer: createMailer(config) };
  const fetch = { batchSize: 1, includeMetadata: true as const, pollingIntervalSeconds: POLL_SECONDS };

  for (let i = 0; i < EMAIL_CONCURRENCY; i++) {
    await boss.work<{ email_id: string }>(queues.emailSend.name, fetch, async ([job]) => {
      if (job) await deliverEmail(deps, job.data, isFinalAttempt(job));
    });
  }
  await boss.work(queues.overdueSweep.name, fetch, async () => {
    await sweepOverdue(deps);
  });
  await boss.work(queues.remindersSchedule.name, fetch, async () => {
    await scheduleReminders(deps);
  });
  await boss.work(queues.idempotencyPurge.name, fetch, async () => {
    await purgeExpired(deps);
  });

  // Decisions §4: the overdue sweep every 10 minutes; reminders at 09:00 merchant time, so the
  // planner runs often enough to catch 09:00 in every time zone; purges hourly.
  await boss.schedule(queues.overdueSweep.name, '*/10 * * * *');
  await boss.schedule(queues.remindersSchedule.name, '*/10 * * * *');
  await boss.schedule(queues.idempotencyPurge.name, '17 * * * *');

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
