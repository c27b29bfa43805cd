// The upgrade from pg-boss 10 to 12 on a database as the release before this one left it: our
// tables made by our SQL migrations, pg-boss 10's schema (version 24) made by pg-boss 10 itself,
// the queues that release created, and work still owed in them. The release step (`migrate`)
// must set that schema aside, let pg-boss 12 create its own, and move every owed job across,
// and the worker of this release must then do that work: the queued e-mail reaches its client.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import postgres from 'postgres';
import PgBossV10 from 'pg-boss-v10';
import { PgBoss } from 'pg-boss';
import type { PgBoss as PgBossType } from 'pg-boss';
import { createSql, type Sql } from '../src/db/client.js';
import { migrate, migrationFiles } from '../src/migrate.js';
import { projectRoot, sqlDir } from '../src/paths.js';
import { executor } from '../src/queue/boss.js';
import { loadConfig } from '../src/config.js';
import * as merchants from '../src/merchants/service.js';
import { createInvoice } from '../src/invoices/create.js';
import { createInvoiceBody } from '../src/invoices/schemas.js';
import type { MerchantSettings } from '../src/http/auth.js';
import { startWorker, type Worker } from '../jobs/worker.js';
import { jobQueues } from '../jobs/index.js';
import { job as emailSend } from '../jobs/email-send.js';
import { serverUrl } from './helpers/db.js';
import { TEST_ENV } from './helpers/app.js';
import { startSmtpSink } from './helpers/smtp.js';
import { until } from './helpers/until.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

// The queues as the release before this one (pg-boss 10.4.2) created them.
const V10_QUEUES = [
  { name: 'email-send', expireInSeconds: 60, retryLimit: 11, retryDelay: 5, retryBackoff: true },
  { name: 'overdue-sweep', expireInSeconds: 120, retryLimit: 2, retryDelay: 30 },
  { name: 'reminders-schedule', expireInSeconds: 120, retryLimit: 2, retryDelay: 30 },
  { name: 'idempotency-purge', expireInSeconds: 120, retryLimit: 2, retryDelay: 60 },
  { name: 'webhook-fanout', expireInSeconds: 60, retryLimit: 10, retryDelay: 5, retryBackoff: true },
  { name: 'webhook-deliver', expireInSeconds: 30, retryLimit: 20, retryDelay: 5, retryBackoff: true },
  { name: 'checkout-expire', expireInSeconds: 60, retryLimit: 10, retryDelay: 5, retryBackoff: true },
];

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * An empty database of this test's own with our SQL migrations applied the way `migrate` applies
 * them (schema_migrations and each file), and nothing of pg-boss 12's: `migrate` itself would
 * also run migrateQueues, which is what this test is about.
 */
async function releasedDatabase(t: Teardown): Promise<{ url: string; sql: Sql }> {
  const base = serverUrl();
  const admin = postgres(base, { max: 1, onnotice: () => {} });
  const name = `invoicing_upgrade_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`CREATE DATABASE "${name}"`);
  const url = withDatabase(base, name);
  const sql = createSql(url, { max: 4, application: 'invoicing-test' });
  t.teardown(async () => {
    await sql.end({ timeout: 5 });
    await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  });
  await sql.begin(async (tx) => {
    await tx`CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`;
    for (const file of await migrationFiles()) {
      await tx.unsafe(await readFile(path.join(sqlDir, file), 'utf8'));
      await tx`INSERT INTO schema_migrations (name) VALUES (${file})`;
    }
  });
  return { url, sql };
}

/** pg-boss 10 on the database, as the release before ran it: its schema and its queues. */
async function startV10(url: string): Promise<PgBossV10> {
  const boss = new PgBossV10({ connectionString: url, max: 2, supervise: false, schedule: false });
  boss.on('error', () => {});
  await boss.start();
  for (const q of V10_QUEUES) await boss.createQueue(q.name, q);
  // The old worker's cron schedules (rows of pg-boss 10's schedule table).
  await boss.schedule('overdue-sweep', '*/10 * * * *');
  return boss;
}

const invoiceInput = (client: { name: string; email: string }) =>
  createInvoiceBody.parse({
    client,
    due_date: '2099-12-31',
    items: [{ description: 'Asesoría', quantity: 2, unit_price: 50000 }],
    send_immediately: true,
  });

/**
 * A merchant, a client and an invoice sent through the app's own code, in one transaction as a
 * request makes them: the invoice e-mail row and its `email-send` job, enqueued (by the same
 * `enqueue` the old release used) on pg-boss 10. Returns the e-mail row's id and its job's id.
 */
async function sentInvoice(sql: Sql, boss: PgBossV10, merchantId: string, client: { name: string; email: string }) {
  const [merchant] = await sql<MerchantSettings[]>`
    SELECT id, name, email, base_currency, default_tax_rate, default_locale, timezone, invoice_prefix FROM merchants WHERE id = ${merchantId}`;
  const deps = { urls: { apiBase: 'http://invoicing.test/api/v1', publicBase: 'http://invoicing.test' }, boss: boss as unknown as PgBossType };
  const invoice = await sql.begin((tx) => createInvoice(tx, merchant!, invoiceInput(client), deps));
  const [email] = await sql<{ id: string }[]>`SELECT id FROM emails WHERE invoice_id = ${invoice.id} AND kind = 'invoice'`;
  const [job] = await sql<{ id: string }[]>`SELECT id FROM pgboss.job WHERE name = 'email-send' AND data->>'email_id' = ${email!.id}`;
  return { invoiceId: invoice.id, emailId: email!.id, jobId: job!.id };
}

interface JobRow {
  id: string;
  name: string;
  state: string;
  data: unknown;
  priority: number;
  retry_limit: number;
  retry_count: number;
  start_after: Date;
  singleton_key: string | null;
}

async function jobsIn(sql: Sql, schema: 'pgboss' | 'pgboss_v10'): Promise<Map<string, JobRow>> {
  const rows = await sql.unsafe<JobRow[]>(
    `SELECT id, name, state::text AS state, data, priority, retry_limit, retry_count, start_after, singleton_key FROM ${schema}.job`,
  );
  return new Map(rows.map((r) => [r.id, r]));
}

const schemaExists = async (sql: Sql, name: string) =>
  (await sql`SELECT 1 FROM pg_namespace WHERE nspname = ${name}`).length > 0;

const bossVersion = async (sql: Sql) => (await sql<{ version: number }[]>`SELECT version::int AS version FROM pgboss.version`)[0]?.version;

async function pgBoss12SchemaVersion(): Promise<number> {
  const pkg = JSON.parse(await readFile(path.join(projectRoot, 'node_modules/pg-boss/package.json'), 'utf8'));
  return pkg.pgboss.schema as number;
}

t.test("a database today's release left is upgraded by migrate, and its owed e-mail is delivered", async (t) => {
  const { url, sql } = await releasedDatabase(t);
  const v10 = await startV10(url);
  let v10Stopped = false;
  t.teardown(() => (v10Stopped ? undefined : v10.stop({ graceful: false })));
  t.equal(await bossVersion(sql), 24, 'pg-boss 10 made its schema (version 24)');

  const merchant = await sql.begin((tx) => merchants.createMerchant(tx, { name: 'Comercial Antigua SpA', email: 'facturacion@antigua.cl', base_currency: 'CLP' }));
  // An invoice whose e-mail a worker of the old release took and was holding when it stopped.
  const held = await sentInvoice(sql, v10, merchant.id, { name: 'Ana Activa', email: 'ana@example.cl' });
  const [fetched] = (await v10.fetch('email-send')) ?? [];
  t.equal(fetched?.id, held.jobId, 'the old worker holds the first e-mail');
  // An invoice whose e-mail is still waiting in the queue.
  const queued = await sentInvoice(sql, v10, merchant.id, { name: 'Carla Creada', email: 'carla@example.cl' });

  // A webhook attempt that failed three times and waits for its next retry (no delay, so that the
  // old worker could take it again at once).
  const retried = (await v10.send('webhook-deliver', { delivery_id: '00000000-0000-4000-8000-000000000002', attempt: 1 }, { retryDelay: 0, retryBackoff: false }))!;
  for (let n = 0; n < 3; n++) {
    const [job] = (await v10.fetch('webhook-deliver')) ?? [];
    t.equal(job?.id, retried, `the old worker took the webhook attempt (run ${n + 1})`);
    await v10.fail('webhook-deliver', retried, { message: 'receiver down' });
  }
  // One waiting, with a priority of its own.
  const waiting = (await v10.send('webhook-deliver', { delivery_id: '00000000-0000-4000-8000-000000000001', attempt: 1 }, { priority: 3 }))!;
  // One due in an hour.
  const future = (await v10.send('webhook-fanout', { event_id: '00000000-0000-4000-8000-000000000003' }, { startAfter: 3600 }))!;
  // One the old worker finished: nothing is owed for it.
  const done = (await v10.send('webhook-fanout', { event_id: '00000000-0000-4000-8000-000000000004' }))!;
  const [doneJob] = (await v10.fetch('webhook-fanout')) ?? [];
  t.equal(doneJob?.id, done, 'the old worker took the fan-out job');
  await v10.complete('webhook-fanout', done);
  await v10.stop({ graceful: false });
  v10Stopped = true;

  const before = await jobsIn(sql, 'pgboss');
  t.same(
    [held.jobId, queued.jobId, waiting, retried, future, done].map((id) => before.get(id)?.state),
    ['active', 'created', 'created', 'retry', 'created', 'completed'],
    'the old schema holds the jobs in the states this test is about',
  );
  t.ok(before.get(retried)!.retry_count > 0, 'the retried job has used retries');
  t.ok(before.get(future)!.start_after.getTime() > Date.now() + 3_500_000, 'the future job is due in an hour');
  const releaseStarted = (await sql<{ now: Date }[]>`SELECT now()`)[0]!.now;
  t.ok(before.get(held.jobId)!.start_after < releaseStarted, 'the held job was due before the release');

  // The release step.
  t.same(await migrate(sql, jobQueues), [], 'no SQL migration was pending');

  t.equal(await bossVersion(sql), await pgBoss12SchemaVersion(), "pgboss is pg-boss 12's schema");
  t.ok((await bossVersion(sql))! >= 25, 'a version pg-boss 12 can migrate from');
  t.notOk(await schemaExists(sql, 'pgboss_v10'), 'the old schema is gone');
  const queueNames = (await sql<{ name: string }[]>`SELECT name FROM pgboss.queue ORDER BY name`).map((q) => q.name);
  t.same(queueNames, jobQueues.map((q) => q.name).sort(), "the new schema has this release's queues");

  const after = await jobsIn(sql, 'pgboss');
  for (const [label, id] of Object.entries({ held: held.jobId, queued: queued.jobId, waiting, retried, future })) {
    const moved = after.get(id);
    t.ok(moved, `the ${label} job was moved with its id`);
    t.equal(moved?.name, before.get(id)!.name, `the ${label} job is in its queue`);
    t.same(moved?.data, before.get(id)!.data, `the ${label} job keeps its data`);
    t.equal(moved?.state, 'created', `the ${label} job waits to run`);
  }
  t.notOk(after.has(done), 'the completed job was not moved');
  t.equal(after.size, 5, 'nothing else was moved');
  t.equal(after.get(queued.jobId)?.singleton_key, queued.emailId, 'the e-mail job keeps its singleton key');
  t.equal(after.get(queued.jobId)?.retry_limit, emailSend.queue.retryLimit, 'an e-mail never tried keeps all its retries');
  const [grouped] = await sql<{ group_id: string | null }[]>`SELECT group_id FROM pgboss.job WHERE id = ${queued.jobId}`;
  t.equal(grouped?.group_id, merchant.id, "the e-mail job joins its merchant's group, as this release's e-mails do");
  t.equal(after.get(waiting)?.priority, 3, 'the priority is kept');
  t.equal(after.get(future)?.start_after.getTime(), before.get(future)!.start_after.getTime(), 'the future job keeps its due time');
  t.equal(
    after.get(retried)?.retry_limit,
    // In state retry, a pg-boss 10 job has used retry_count runs and is owed one more of them
    // already; pg-boss 12 gives a job its retry limit plus the first run.
    before.get(retried)!.retry_limit - before.get(retried)!.retry_count - 1,
    'the retried job keeps only the runs it had left',
  );
  t.ok(after.get(held.jobId)!.start_after >= releaseStarted, 'the job the old worker held is due now, not at its old due time');
  t.ok(after.get(held.jobId)!.start_after.getTime() <= Date.now() + 1000, 'and not later');

  // A second run of the release step changes nothing.
  const snapshot = async () => ({
    version: await bossVersion(sql),
    // The same schema, not one made anew.
    schema: (await sql`SELECT oid::int FROM pg_namespace WHERE nspname = 'pgboss'`)[0],
    queues: await sql`SELECT name, policy, retry_limit, retry_delay, retry_backoff, expire_seconds, heartbeat_seconds FROM pgboss.queue ORDER BY name`,
    jobs: await sql`SELECT id, name, state::text, data, priority, retry_limit, retry_count, start_after, created_on, singleton_key FROM pgboss.job ORDER BY id`,
  });
  const first = await snapshot();
  t.same(await migrate(sql, jobQueues), [], 'the second run applies nothing');
  t.same(await snapshot(), first, 'the second run changes nothing');
  t.notOk(await schemaExists(sql, 'pgboss_v10'), 'and sets nothing aside');

  // This release's worker does the work owed: both e-mails reach their clients.
  const smtp = await startSmtpSink(t);
  const config = loadConfig({ ...TEST_ENV, DATABASE_URL: url, SMTP_URL: smtp.url });
  let worker: Worker | null = await startWorker(config, sql);
  t.teardown(async () => {
    await worker?.stop();
  });
  const mails = await smtp.waitFor(2, 30_000);
  t.same(mails.map((m) => m.to).sort(), ['ana@example.cl', 'carla@example.cl'], 'each owed e-mail went to its client');
  for (const m of mails) {
    t.equal(m.headers.get('x-email-kind'), 'invoice', `the message to ${m.to} is the invoice e-mail`);
    t.equal(m.attachments.length, 1, `the message to ${m.to} carries the invoice PDF`);
  }
  t.same(
    mails.map((m) => m.messageId).sort(),
    [`<${held.emailId}@invoicing>`, `<${queued.emailId}@invoicing>`].sort(),
    'the messages are the recorded e-mail rows',
  );
  const rows = await until('both e-mails recorded as sent', async () => {
    const r = await sql<{ id: string; status: string }[]>`SELECT id, status FROM emails WHERE id IN (${held.emailId}, ${queued.emailId}) AND status = 'sent'`;
    return r.length === 2 ? r : null;
  });
  t.equal(rows.length, 2, 'both e-mail rows are sent');
  await until('both e-mail jobs completed', async () => {
    const r = await sql`SELECT 1 FROM pgboss.job WHERE id IN (${held.jobId}, ${queued.jobId}) AND state = 'completed'`;
    return r.length === 2;
  });
  await worker.stop();
  worker = null;
  t.equal(smtp.messages.length, 2, 'each e-mail went out once');
});

t.test('a database whose pg-boss 10 schema an earlier release set aside is finished by the next migrate', async (t) => {
  /** The old release's database with one queued invoice e-mail and one waiting fan-out job. */
  async function withOwedWork(t: Teardown) {
    const { url, sql } = await releasedDatabase(t);
    const v10 = await startV10(url);
    try {
      const merchant = await sql.begin((tx) => merchants.createMerchant(tx, { name: 'Comercial Pausada SpA', email: 'pagos@pausada.cl', base_currency: 'CLP' }));
      const mail = await sentInvoice(sql, v10, merchant.id, { name: 'Pedro Pendiente', email: 'pedro@example.cl' });
      const fanout = (await v10.send('webhook-fanout', { event_id: '00000000-0000-4000-8000-000000000005' }))!;
      return { url, sql, mail, fanout };
    } finally {
      await v10.stop({ graceful: false });
    }
  }

  async function finished(t: Test, sql: Sql, owed: { mail: { jobId: string; emailId: string }; fanout: string }) {
    t.ok(await schemaExists(sql, 'pgboss_v10'), 'the old schema waits, set aside');
    const before = await jobsIn(sql, 'pgboss_v10');
    t.same(await migrate(sql, jobQueues), [], 'no SQL migration was pending');
    t.equal(await bossVersion(sql), await pgBoss12SchemaVersion(), "pgboss is pg-boss 12's schema");
    t.notOk(await schemaExists(sql, 'pgboss_v10'), 'the old schema is gone');
    const after = await jobsIn(sql, 'pgboss');
    t.same(after.get(owed.mail.jobId)?.data, { email_id: owed.mail.emailId }, 'the e-mail job was moved with its id and data');
    t.equal(after.get(owed.mail.jobId)?.name, 'email-send');
    t.same(after.get(owed.fanout)?.data, before.get(owed.fanout)!.data, 'the fan-out job was moved with its id and data');
    t.equal(after.size, 2, 'nothing else is in the new schema');
  }

  t.test('it died right after the rename', async (t) => {
    const owed = await withOwedWork(t);
    await owed.sql`ALTER SCHEMA pgboss RENAME TO pgboss_v10`;
    await finished(t, owed.sql, owed);
  });

  t.test('it died after pg-boss 12 had made its schema and queues, before the jobs were moved', async (t) => {
    const owed = await withOwedWork(t);
    await owed.sql`ALTER SCHEMA pgboss RENAME TO pgboss_v10`;
    const conn = await owed.sql.reserve();
    const boss12 = new PgBoss({ db: executor(conn as unknown as Sql), migrate: true, supervise: false, schedule: false });
    boss12.on('error', () => {});
    try {
      await boss12.start();
      for (const q of jobQueues) await boss12.createQueue(q.name, q);
    } finally {
      await boss12.stop({ graceful: false, close: false });
      conn.release();
    }
    t.equal(await bossVersion(owed.sql), await pgBoss12SchemaVersion(), 'pg-boss 12 made its schema already');
    await finished(t, owed.sql, owed);
  });
});


t.test('a request of the old release in flight during the release keeps its e-mail job', async (t) => {
  const { url, sql } = await releasedDatabase(t);
  const v10 = await startV10(url);
  t.teardown(() => v10.stop({ graceful: false }));
  const merchant = await sql.begin((tx) => merchants.createMerchant(tx, { name: 'Comercial En Vuelo SpA', email: 'pagos@vuelo.cl', base_currency: 'CLP' }));
  const [settings] = await sql<MerchantSettings[]>`
    SELECT id, name, email, base_currency, default_tax_rate, default_locale, timezone, invoice_prefix FROM merchants WHERE id = ${merchant.id}`;
  // A web process of the old release sends an invoice: its transaction has enqueued the e-mail
  // on pg-boss 10 and commits only once the release step has begun.
  let commit!: () => void;
  const committing = new Promise<void>((r) => (commit = r));
  let inflight: { emailId: string; jobId: string } | null = null;
  const request = sql.begin(async (tx) => {
    const deps = { urls: { apiBase: 'http://invoicing.test/api/v1', publicBase: 'http://invoicing.test' }, boss: v10 as unknown as PgBossType };
    const invoice = await createInvoice(tx, settings!, invoiceInput({ name: 'Vera Vuelo', email: 'vera@example.cl' }), deps);
    const [email] = await tx<{ id: string }[]>`SELECT id FROM emails WHERE invoice_id = ${invoice.id}`;
    const [job] = await tx<{ id: string }[]>`SELECT id FROM pgboss.job WHERE data->>'email_id' = ${email!.id}`;
    inflight = { emailId: email!.id, jobId: job!.id };
    await committing;
  });
  const enqueued = await until('the request has enqueued its e-mail', () => inflight);
  const release = migrate(sql, jobQueues);
  await until('the release step waits for the request', async () => {
    const waiting = await sql`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
    return waiting.length > 0;
  });
  commit();
  await request;
  await release;
  t.notOk(await schemaExists(sql, 'pgboss_v10'), 'the old schema is gone');
  const [job] = await sql<{ data: unknown }[]>`SELECT data FROM pgboss.job WHERE id = ${enqueued.jobId}`;
  t.same(job?.data, { email_id: enqueued.emailId }, 'the e-mail job the request committed was moved, not dropped with the old schema');
});


t.test('the release step upgrades a pg-boss 10 database on a pool of one connection', async (t) => {
  const { url, sql } = await releasedDatabase(t);
  const v10 = await startV10(url);
  const merchant = await sql.begin((tx) => merchants.createMerchant(tx, { name: 'Comercial Única SpA', email: 'pagos@unica.cl', base_currency: 'CLP' }));
  const owed = await sentInvoice(sql, v10, merchant.id, { name: 'Olga Once', email: 'olga@example.cl' });
  await v10.stop({ graceful: false });
  // DATABASE_POOL_SIZE=1 is a valid setting for the release step.
  const one = createSql(url, { max: 1, application: 'invoicing-test' });
  t.teardown(() => one.end({ timeout: 1 }).catch(() => {}));
  const outcome = await Promise.race([
    migrate(one, jobQueues).then(
      () => 'done',
      (err: unknown) => `failed: ${String(err)}`,
    ),
    new Promise<string>((r) => setTimeout(() => r('still waiting after 15 s'), 15_000)),
  ]);
  t.equal(outcome, 'done', 'migrate finishes');
  await one.end({ timeout: 1 }).catch(() => {});
  const [job] = await sql`SELECT 1 FROM pgboss.job WHERE id = ${owed.jobId}`.catch(() => []);
  t.ok(job, 'the owed e-mail job was moved');
});
