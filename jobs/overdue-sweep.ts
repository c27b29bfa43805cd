import { clock } from '../src/clock.js';
import { markOverdue } from '../src/invoices/transitions.js';
import { invoiceUrls } from '../src/http/urls.js';
import { queues } from '../src/queue/boss.js';
import { defineJob } from '../src/queue/runners.js';
import type { WorkerDeps } from './worker.js';

/** sent, viewed → overdue for every invoice past its due date; returns how many moved. */
export async function sweepOverdue(deps: WorkerDeps): Promise<number> {
  return markOverdue(deps.sql, clock.now(), { urls: invoiceUrls(deps.config), boss: deps.boss });
}

export const job = defineJob({
  queue: { name: queues.overdueSweep.name, expireInSeconds: 120, retryLimit: 2, retryDelay: 30 },
  runner: 'scheduled',
  run: (deps: WorkerDeps) => sweepOverdue(deps),
  // docs/decisions.md §4: every 10 minutes.
  schedule: '*/10 * * * *',
});
