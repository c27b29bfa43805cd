// What grows with every event is kept for the retention, then removed a batch at a time without
// waiting on anyone (docs/decisions.md §18): events, webhook deliveries with their attempt logs, e-mail
// records. Tax documents and the invoices they belong to stay.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { purgeExpiredEvents } from '../src/retention/purge.js';
import { testApp, type TestApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';

const DAY = 24 * 60 * 60 * 1000;
const daysAgo = (n: number) => new Date(Date.now() - n * DAY);

interface Seeded {
  events: string[];
  deliveries: string[];
  emails: string[];
}

/** An event with one delivery to the endpoint, two attempt logs and an e-mail record, all made `age` days ago. */
async function seed(h: TestApp, merchantId: string, endpointId: string, age: number, count: number, opts: { leasedUntil?: Date } = {}): Promise<Seeded> {
  const out: Seeded = { events: [], deliveries: [], emails: [] };
  for (let i = 0; i < count; i++) {
    const at = daysAgo(age);
    const event = randomUUID();
    const delivery = randomUUID();
    const email = randomUUID();
    const payload = JSON.stringify({ id: event, type: 'client.created', created_at: at.toISOString(), data: {} });
    await h.sql`INSERT INTO events (id, merchant_id, type, payload, created_at) VALUES (${event}, ${merchantId}, 'client.created', ${payload}::json, ${at})`;
    await h.sql`
      INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, event_type, payload, status, attempts, max_attempts, leased_until, created_at, updated_at)
      VALUES (${delivery}, ${merchantId}, ${endpointId}, ${event}, 'client.created', ${payload}, 'failed', 2, 8, ${opts.leasedUntil ?? null}, ${at}, ${at})`;
    for (const n of [1, 2]) {
      await h.sql`
        INSERT INTO webhook_attempts (id, delivery_id, attempt_number, started_at, duration_ms, request_url, request_headers, response_status)
        VALUES (${randomUUID()}, ${delivery}, ${n}, ${at}, 12, 'https://erp.example/hook', '{}'::jsonb, 500)`;
    }
    await h.sql`
      INSERT INTO emails (id, merchant_id, kind, dedupe_key, to_address, locale, status, created_at)
      VALUES (${email}, ${merchantId}, 'reminder', ${`test:${email}`}, 'pagos@andes.cl', 'es', 'sent', ${at})`;
    out.events.push(event);
    out.deliveries.push(delivery);
    out.emails.push(email);
  }
  return out;
}

async function remaining(h: TestApp, s: Seeded) {
  const [row] = await h.sql<{ events: number; deliveries: number; attempts: number; emails: number }[]>`
    SELECT (SELECT count(*)::int FROM events WHERE id = ANY(${s.events}::uuid[])) AS events,
           (SELECT count(*)::int FROM webhook_deliveries WHERE id = ANY(${s.deliveries}::uuid[])) AS deliveries,
           (SELECT count(*)::int FROM webhook_attempts WHERE delivery_id = ANY(${s.deliveries}::uuid[])) AS attempts,
           (SELECT count(*)::int FROM emails WHERE id = ANY(${s.emails}::uuid[])) AS emails`;
  return row!;
}

t.test('retention', async (t) => {
  const h = await testApp(t);
  const { key, merchantId } = await h.key();
  const ep = await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://localhost/hook' } });
  t.equal(ep.status, 201);
  const endpointId = (ep.body as { id: string }).id;

  t.test('what is older than the retention goes, in batches; what is younger stays, and so do invoices', async (t) => {
    const invoice = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: false }) });
    t.equal(invoice.status, 201);
    await h.sql`UPDATE invoices SET created_at = ${daysAgo(90)} WHERE id = ${(invoice.body as { invoice_id: string }).invoice_id}`;
    const old = await seed(h, merchantId, endpointId, 31, 7);
    const young = await seed(h, merchantId, endpointId, 29, 3);
    const result = await purgeExpiredEvents(h.sql, 30, { batch: 3, pauseMs: 0 });
    t.same(await remaining(h, old), { events: 0, deliveries: 0, attempts: 0, emails: 0 }, 'the old rows are gone, attempt logs with their deliveries');
    t.same(await remaining(h, young), { events: 3, deliveries: 3, attempts: 6, emails: 3 }, 'the young ones stay');
    t.match(result, { deliveries: 7, events: 7, emails: 7 }, 'seven of each in batches of three');
    const [kept] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM invoices WHERE merchant_id = ${merchantId}`;
    t.equal(kept?.n, 1, 'the 90-day-old invoice is kept');
  });

  t.test('a row someone holds is skipped, not waited for, and goes on the next run', async (t) => {
    const old = await seed(h, merchantId, endpointId, 40, 3);
    const held = old.deliveries[0]!;
    const conn = await h.sql.reserve();
    t.teardown(() => conn.release());
    await conn`BEGIN`;
    await conn`SELECT id FROM webhook_deliveries WHERE id = ${held} FOR UPDATE`;
    const started = Date.now();
    const result = await Promise.race([
      purgeExpiredEvents(h.sql, 30, { pauseMs: 0 }),
      new Promise<'waited'>((r) => setTimeout(r, 5000, 'waited').unref()),
    ]);
    t.not(result, 'waited', `the purge ended while the row was held (${Date.now() - started} ms)`);
    const [still] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE id = ANY(${old.deliveries}::uuid[])`;
    t.equal(still?.n, 1, 'only the held delivery is left');
    await conn`COMMIT`;
    await purgeExpiredEvents(h.sql, 30, { pauseMs: 0 });
    t.same(await remaining(h, old), { events: 0, deliveries: 0, attempts: 0, emails: 0 }, 'and the next run removes it');
  });

  t.test('a delivery whose attempt is on the wire is kept until its lease runs out', async (t) => {
    const leased = await seed(h, merchantId, endpointId, 45, 1, { leasedUntil: new Date(Date.now() + 60_000) });
    await purgeExpiredEvents(h.sql, 30, { pauseMs: 0 });
    t.match(await remaining(h, leased), { deliveries: 1, attempts: 2 }, 'kept while leased');
    await h.sql`UPDATE webhook_deliveries SET leased_until = ${daysAgo(1)} WHERE id = ${leased.deliveries[0]!}`;
    await purgeExpiredEvents(h.sql, 30, { pauseMs: 0 });
    t.match(await remaining(h, leased), { deliveries: 0, attempts: 0 }, 'removed once the lease ran out');
  });

  t.test('the worker runs the purge once a day', async (t) => {
    await h.startWorker();
    const rows = await h.sql<{ cron: string }[]>`SELECT cron FROM pgboss.schedule WHERE name = 'event-purge'`;
    t.same(rows.map((r) => r.cron), ['23 7 * * *']);
  });
});
