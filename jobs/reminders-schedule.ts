import { clock } from '../src/clock.js';
import { sendDueReminders } from '../src/invoices/transitions.js';
import { invoiceUrls } from '../src/http/urls.js';
import type { WorkerDeps } from './worker.js';

/** Sends every automated reminder whose day and hour have come; returns how many were sent. */
export async function scheduleReminders(deps: WorkerDeps): Promise<number> {
  return sendDueReminders(deps.sql, clock.now(), { urls: invoiceUrls(deps.config), boss: deps.boss });
}
