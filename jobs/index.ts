// Every job the worker runs, in the order it registers them. A new job is a new file in jobs/
// (its queue's name in src/queue/boss.ts's `queues`) and one line here; test/worker-imports.test.ts
// fails on a job file this list leaves out.
import type { JobDefinition } from '../src/queue/runners.js';
import type { WorkerDeps } from './worker.js';
import { job as emailSend } from './email-send.js';
import { job as webhookFanout } from './webhook-fanout.js';
import { job as webhookDeliver } from './webhook-deliver.js';
import { job as overdueSweep } from './overdue-sweep.js';
import { job as remindersSchedule } from './reminders-schedule.js';
import { job as idempotencyPurge } from './idempotency-purge.js';
import { job as checkoutExpire } from './checkout-expire.js';
import { job as dteSubmit } from './dte-submit.js';
import { job as dteStatus } from './dte-status.js';
import { job as dteSweep } from './dte-sweep.js';
import { job as eventPurge } from './event-purge.js';

export const jobs: readonly JobDefinition<WorkerDeps>[] = [
  emailSend,
  webhookFanout,
  webhookDeliver,
  overdueSweep,
  remindersSchedule,
  idempotencyPurge,
  checkoutExpire,
  dteSubmit,
  dteStatus,
  dteSweep,
  eventPurge,
];

/** Every queue with its options, for the release step's migrate (src/migrate.ts). */
export const jobQueues = jobs.map((job) => job.queue);
