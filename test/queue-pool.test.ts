// The worker keeps pg-boss's job states on a pool of its own whose commits do not wait for the WAL
// flush (src/db/open.ts openQueuePool). What a database crash can take from it is job states, and
// the worker must survive getting them back as they were: a job that had run and completed is
// handed out again, and it sends nothing twice because the rows its run wrote, durably on the main
// pool, say its work is done.
import t from 'tap';
import { openQueuePool } from '../src/db/open.js';
import { testApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { startWorkerProcess } from './helpers/processes.js';
import { startSmtpSink } from './helpers/smtp.js';
import { until } from './helpers/until.js';

const EFFECT_QUEUES = ['email-send', 'webhook-fanout', 'webhook-deliver'];

t.test("the queue pool's commits do not wait for the WAL flush; the main pool's do", async (t) => {
  const h = await testApp(t);
  const queueSql = openQueuePool({ url: h.dbUrl }, h.ctx.config, 'invoicing-test-queue');
  t.teardown(() => queueSql.end());
  const [queue] = await queueSql<{ synchronous_commit: string }[]>`SHOW synchronous_commit`;
  const [main] = await h.sql<{ synchronous_commit: string }[]>`SHOW synchronous_commit`;
  t.equal(queue?.synchronous_commit, 'off', 'job states: asynchronous commit');
  t.equal(main?.synchronous_commit, 'on', 'data and effects: durable commit');
});

t.test('job states lost in a database crash: every effect job handed out again, nothing is sent twice', async (t) => {
  const smtp = await startSmtpSink(t);
  const receiver = await startHttpsReceiver(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const { key } = await h.key(['*']);
  const endpoint = await h.api('POST', '/webhooks/endpoints', { key, body: { url: receiver.url(), events: ['invoice.sent'] } });
  t.equal(endpoint.status, 201);
  await startWorkerProcess(t, { DATABASE_URL: h.dbUrl, SMTP_URL: smtp.url });

  const res = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) });
  t.equal(res.status, 201);
  await receiver.waitFor(1, 30_000);
  await until('the e-mail', () => smtp.messages.length >= 1, 30_000);
  const done = () => h.sql<{ name: string; n: number }[]>`
    SELECT name, count(*)::int AS n FROM pgboss.job WHERE name = ANY(${EFFECT_QUEUES}) AND state = 'completed' GROUP BY name ORDER BY name`;
  await until('the three effect jobs to complete', async () => (await done()).length === 3, 30_000);

  const [pool] = await h.sql<{ n: number; listening: number }[]>`
    SELECT count(*)::int AS n, count(*) FILTER (WHERE query ILIKE 'LISTEN%')::int AS listening
      FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'invoicing-worker-queue'`;
  t.ok(pool!.n >= 1 && pool!.listening === 1, `pg-boss works through the worker's queue pool, which LISTENs (${pool!.n} connections)`);

  // As if the crash took their completions and fetches: each job is waiting again, as created.
  const reset = await h.sql`
    UPDATE pgboss.job SET state = 'created', started_on = NULL, completed_on = NULL, heartbeat_on = NULL, output = NULL, start_after = now()
     WHERE name = ANY(${EFFECT_QUEUES}) AND state = 'completed'`;
  t.equal(reset.count, 3, 'the e-mail, fan-out and delivery jobs are waiting again');
  await until('the jobs to run and complete again', async () => (await done()).reduce((n, r) => n + r.n, 0) === 3, 30_000);
  // Past the polling backstop: anything a second run sent would have arrived.
  await new Promise((r) => setTimeout(r, 2_000));

  t.equal(smtp.messages.length, 1, 'one e-mail');
  t.equal(receiver.received.length, 1, 'one webhook');
  const [delivery] = await h.sql<{ status: string; attempts: number; kept: number }[]>`
    SELECT d.status, d.attempts, (SELECT count(*)::int FROM webhook_attempts a WHERE a.delivery_id = d.id) AS kept
      FROM webhook_deliveries d`;
  t.match(delivery, { status: 'success', attempts: 1, kept: 1 }, 'one delivery with one attempt');
  const [deliveries] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_deliveries`;
  t.equal(deliveries!.n, 1, 'the fan-out made no second delivery');
});
