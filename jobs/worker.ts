import { fileURLToPath } from 'node:url';
import type { PgBoss } from 'pg-boss';
import { loadConfig, type Config } from '../src/config.js';
import { openDatabase, openQueuePool } from '../src/db/open.js';
import type { Sql } from '../src/db/client.js';
import { createBoss } from '../src/queue/boss.js';
import { work } from '../src/queue/runners.js';
import { createMailer, type Mailer } from '../src/email/transport.js';
import { onShutdown, SHUTDOWN_GRACE_MS } from '../src/shutdown.js';
import { loadSecretBox, type SecretBox } from '../src/secret-box.js';
import { configureGateways } from '../src/checkout/providers/registry.js';
import { createLogger, type Log } from '../src/logger.js';
import { assertPatched, PG_BOSS } from '../src/db/driver-check.js';
import { readEnvFile } from '../src/env-file.js';
import { jobs } from './index.js';

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

// NOTIFY wakes a worker the moment a job commits; polling stays as the backstop for a missed
// notification and for jobs that come due later (retries, checkout expiry).
const POLLING_SECONDS = 1;

export interface WorkerOptions {
  /** The caller's logger (the worker's entry point logs its ready line on it); otherwise one made from config. */
  logger?: Log;
  /** The effect queues' polling backstop behind NOTIFY (tests lengthen it to prove the wake-up). */
  pollingSeconds?: number;
  /** The pool pg-boss keeps job states on (openQueuePool); otherwise `sql`. */
  queueSql?: Sql;
}

/** Registers every job of jobs/index.ts and its schedule on pg-boss; the same code in `worker` and `npm start`. */
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

  for (const job of jobs) await work({ boss, log, pollingSeconds: polling }, deps, job);
  for (const job of jobs) if (job.schedule) await boss.schedule(job.queue.name, job.schedule);

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
