// pg-boss runs on postgres.js through src/jobs/boss.ts's executor: the paths it takes beyond a
// single send — the batch insert that cron schedules use, and maintenance's BEGIN … COMMIT
// scripts — must work on the pool, or schedules never fire and dead workers' jobs never return.
import t from 'tap';
import { testApp } from './helpers/app.js';
import { queues } from '../src/jobs/boss.js';

t.test('a batch insert (what a cron schedule does when due) creates its jobs', async (t) => {
  const h = await testApp(t);
  await h.ctx.boss.insert([
    { name: queues.overdueSweep.name, data: { from: 'cron' } },
    { name: queues.idempotencyPurge.name },
  ]);
  const rows = await h.sql<{ name: string; data: unknown }[]>`
    SELECT name, data FROM pgboss.job WHERE name IN (${queues.overdueSweep.name}, ${queues.idempotencyPurge.name}) ORDER BY name`;
  t.same(
    rows.map((r) => r.name),
    [queues.idempotencyPurge.name, queues.overdueSweep.name],
  );
  t.same(rows.find((r) => r.name === queues.overdueSweep.name)?.data, { from: 'cron' });
});

t.test('every schedule the worker registers is due to create its job', async (t) => {
  const h = await testApp(t);
  const worker = await h.startWorker();
  const schedules = await worker.deps.boss.getSchedules();
  t.same(
    schedules.map((s) => s.name).sort(),
    [queues.checkoutExpire.name, queues.idempotencyPurge.name, queues.overdueSweep.name, queues.remindersSchedule.name].sort(),
  );
});

t.test("maintenance's BEGIN … COMMIT scripts run on the pool: an expired lease is handed back", async (t) => {
  const h = await testApp(t);
  const id = await h.ctx.boss.send(queues.overdueSweep.name, {}, { expireInSeconds: 1 });
  // A worker that died holding the job: active, its lease long over.
  await h.sql`UPDATE pgboss.job SET state = 'active', started_on = now() - interval '1 hour' WHERE id = ${id!}`;
  await h.ctx.boss.maintain();
  const [row] = await h.sql<{ state: string }[]>`SELECT state FROM pgboss.job WHERE id = ${id!}`;
  t.equal(row?.state, 'retry', 'the job is back for another worker');
});
