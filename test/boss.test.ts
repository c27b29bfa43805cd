// pg-boss runs on postgres.js through src/queue/boss.ts's executor: the paths it takes beyond a
// single send — the batch insert that cron schedules use, and maintenance's BEGIN … COMMIT
// scripts — must work on the pool, or schedules never fire and dead workers' jobs never return.
import t from 'tap';
import { testApp } from './helpers/app.js';
import { executor, queues } from '../src/queue/boss.js';

t.test('a batch insert (what a cron schedule does when due) creates its jobs', async (t) => {
  const h = await testApp(t);
  await h.ctx.boss.insert(queues.overdueSweep.name, [{ data: { from: 'cron' } }]);
  await h.ctx.boss.insert(queues.idempotencyPurge.name, [{}]);
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
    [queues.checkoutExpire.name, queues.dteSweep.name, queues.eventPurge.name, queues.idempotencyPurge.name, queues.overdueSweep.name, queues.remindersSchedule.name].sort(),
  );
});

t.test("maintenance's BEGIN … COMMIT scripts run on the pool: an expired lease is handed back", async (t) => {
  const h = await testApp(t);
  const id = await h.ctx.boss.send(queues.overdueSweep.name, {}, { expireInSeconds: 1 });
  // A worker that died holding the job: active, its lease long over.
  await h.sql`UPDATE pgboss.job SET state = 'active', started_on = now() - interval '1 hour' WHERE id = ${id!}`;
  await h.ctx.boss.supervise(queues.overdueSweep.name);
  const [row] = await h.sql<{ state: string }[]>`SELECT state FROM pgboss.job WHERE id = ${id!}`;
  t.equal(row?.state, 'retry', 'the job is back for another worker');
});

t.test('a BEGIN … COMMIT script is one transaction on the pool: all of it or none of it', async (t) => {
  const h = await testApp(t);
  const run = (text: string) => executor(h.sql).executeSql(text, []);
  await h.sql`CREATE TABLE boss_script_probe (n int PRIMARY KEY)`;
  t.teardown(() => h.sql`DROP TABLE IF EXISTS boss_script_probe`);
  // The shape pg-boss's locked() gives every maintenance and queue script.
  await run(`
    BEGIN;
    SET LOCAL lock_timeout = '30s';
    INSERT INTO boss_script_probe VALUES (1);
    INSERT INTO boss_script_probe VALUES (2);
    COMMIT;
  `);
  const failed = await run(`
    BEGIN;
    INSERT INTO boss_script_probe VALUES (3);
    INSERT INTO boss_script_probe VALUES (1);
    COMMIT;
  `).then(
    () => 'committed',
    (e: { code?: string }) => e.code,
  );
  t.equal(failed, '23505', 'the script that breaks a key fails');
  // Run as one string on a connection of its own, the failed script left that connection inside
  // an aborted transaction, and the pool handed it to the next query: 25P02 from then on.
  const rows = await h.sql<{ n: number }[]>`SELECT n FROM boss_script_probe ORDER BY n`;
  t.same(rows.map((r) => r.n), [1, 2], 'the first script committed whole, the failed one left nothing');
  const [setting] = await h.sql<{ lock_timeout: string }[]>`SHOW lock_timeout`;
  t.not(setting?.lock_timeout, '30s', 'SET LOCAL ended with its transaction');
});
