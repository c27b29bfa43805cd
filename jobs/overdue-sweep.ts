import { clock } from '../src/clock.js';
import { markOverdue } from '../src/invoices/transitions.js';
import { invoiceUrls } from '../src/http/urls.js';
import type { WorkerDeps } from './worker.js';

/** sent, viewed → overdue for every invoice past its due date; returns how many moved. */
export async function sweepOverdue(deps: WorkerDeps): Promise<number> {
  return markOverdue(deps.sql, clock.now(), { urls: invoiceUrls(deps.config), boss: deps.boss });
}
