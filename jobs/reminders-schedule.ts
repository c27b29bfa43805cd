import { clock } from '../src/clock.js';
import { sendDueReminders } from '../src/invoices/transitions.js';
import { invoiceUrls } from '../src/http/urls.js';
import { queues } from '../src/queue/boss.js';
import { defineJob } from '../src/queue/runners.js';
import type { WorkerDeps } from './worker.js';

/** Sends every automated reminder whose day and hour have come; returns how many were sent. */
export async function scheduleReminders(deps: WorkerDeps): Promise<number> {
  return sendDueReminders(deps.sql, clock.now(), { urls: invoiceUrls(deps.config), boss: deps.boss });
}

export const job = defineJob({
  queue: { name: queues.remindersSchedule.name, expireInSeconds: 120, retryLimit: 2, retryDelay: 30 },
  runner: 'scheduled',
  run: (deps: WorkerDeps) => scheduleReminders(deps),
  // docs/decisions.md §4: reminders go at 09:00 merchant time, so the planner runs often enough to
  // catch 09:00 in every time zone.
  schedule: '*/10 * * * *',
});
