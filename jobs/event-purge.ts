import { purgeExpiredEvents } from '../src/retention/purge.js';
import { HEARTBEAT_SECONDS, queues } from '../src/queue/boss.js';
import { defineJob } from '../src/queue/runners.js';
import type { WorkerDeps } from './worker.js';

export const job = defineJob({
  // docs/decisions.md §18: the daily purge of what is older than the retention, in short batches; a run
  // that removes a month at once takes minutes, and its heartbeat keeps it its own meanwhile.
  queue: { name: queues.eventPurge.name, expireInSeconds: 3600, heartbeatSeconds: HEARTBEAT_SECONDS, retryLimit: 2, retryDelay: 300 },
  runner: 'scheduled',
  run: (deps: WorkerDeps) => purgeExpiredEvents(deps.sql, deps.config.EVENT_RETENTION_DAYS),
  // Once a day, at an hour of little traffic in Chile.
  schedule: '23 7 * * *',
});
