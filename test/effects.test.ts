// The effect queues under pg-boss 12 (jobs/, src/queue/runners.ts, src/queue/boss.ts): a committed job wakes the
// worker through LISTEN/NOTIFY rather than its next poll; one hanging webhook receiver holds at most
// its endpoint's share of the worker (the per-group cap), and neither it nor one merchant's burst
// keeps another merchant's e-mail or webhook waiting behind it; a worker killed mid-send loses its
// job only until its heartbeat goes quiet, and the e-mail still arrives exactly once.
// Every claim is an order or a count, never a duration: waits are generous backstops only.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { testApp, type TestApp } from './helpers/app.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { startWorkerProcess } from './helpers/processes.js';
import { startSmtpSink, type ReceivedMail } from './helpers/smtp.js';
import { until } from './helpers/until.js';
import { startWorker, type WorkerDeps } from '../jobs/worker.js';
import { fanOut } from '../jobs/webhook-fanout.js';
import { job as emailSend } from '../jobs/email-send.js';
import { job as webhookDeliver } from '../jobs/webhook-deliver.js';

const tlsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'helpers', 'tls');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function createEndpoint(h: TestApp, key: string, body: Record<string, unknown>): Promise<{ id: string }> {
  const res = await h.api('POST', '/webhooks/endpoints', { key, body });
  if (res.status !== 201) throw new Error(`endpoint create: ${res.status} ${res.raw}`);
  return res.body as { id: string };
}

function invoice(email: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    client: { name: `Cliente ${email}`, email },
    due_date: '2099-12-31',
    items: [{ description: 'Consultoría', quantity: 1, unit_price: 10000 }],
    send_immediately: true,
    ...extra,
  };
}

async function sendInvoice(h: TestApp, key: string, email: string): Promise<string> {
  const res = await h.api('POST', '/invoices', { key, body: invoice(email) });
  if (res.status !== 201) throw new Error(`invoice create: ${res.status} ${res.raw}`);
  return res.body.invoice_id as string;
}

/**
 * An HTTPS receiver that answers nothing for `holdMs` (past the 15 s delivery timeout) and counts
 * the requests whose connection is still open: received and neither answered nor abandoned.
 */
async function startHangingReceiver(t: { teardown(fn: () => unknown): void }, holdMs: number) {
  const state = { received: 0, open: 0, maxOpen: 0, closed: 0 };
  const server = https.createServer(
    { key: readFileSync(path.join(tlsDir, 'receiver.key')), cert: readFileSync(path.join(tlsDir, 'receiver.crt')) },
    (req, res) => {
      state.received += 1;
      state.open += 1;
      state.maxOpen = Math.max(state.maxOpen, state.open);
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        state.open -= 1;
        state.closed += 1;
      };
      res.on('close', finish);
      req.resume();
      setTimeout(() => {
        if (!res.destroyed) res.end('late');
      }, holdMs).unref();
    },
  );
  await new Promise<void>((resolve) => server.listen(0, resolve));
  const port = (server.address() as AddressInfo).port;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  t.teardown(close);
  return { state, url: `https://localhost:${port}/hook`, dropAll: () => server.closeAllConnections() };
}

/** Merchant A's endpoint hangs (20 s, past the 15 s timeout); merchant B's answers at once. */
async function hangingAndFastMerchants(t: Test) {
  const hanging = await startHangingReceiver(t, 20_000);
  const fast = await startHttpsReceiver(t);
  const h = await testApp(t);
  const a = await h.key(['*']);
  const b = await h.key(['*']);
  await createEndpoint(h, a.key, { url: hanging.url, events: ['client.created'] });
  await createEndpoint(h, b.key, { url: fast.url(), events: ['client.created'] });
  return { hanging, fast, h, a, b };
}

t.test('NOTIFY wakes the worker: with a 60 s polling backstop, an invoice e-mail and its webhook arrive at once', async (t) => {
  const smtp = await startSmtpSink(t);
  const receiver = await startHttpsReceiver(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const { key } = await h.key(['*']);
  await createEndpoint(h, key, { url: receiver.url(), events: ['invoice.sent'] });

  // The channel pg-boss 12 notifies on for the schema `pgboss` (plans.notifyChannelSql).
  const [named] = await h.sql<{ channel: string }[]>`
    SELECT 'pgboss_' || left(encode(sha224('pgboss'::bytea), 'hex'), 24) AS channel`;
  const channel = named!.channel;
  const [notifying] = await h.sql<{ names: string[] }[]>`
    SELECT array_agg(name ORDER BY name) AS names FROM pgboss.queue WHERE notify`;
  t.same(notifying!.names, ['dte-submit', 'email-send', 'webhook-deliver', 'webhook-fanout'], 'the effect queues notify on insert');

  const worker = await startWorker(h.ctx.config, h.sql, { pollingSeconds: 60 });
  t.teardown(() => worker.stop());
  // The worker listens on a connection of its own: the listener postgres.js keeps beside the pool.
  const listening = await until('the worker to LISTEN', async () => {
    const rows = await h.sql<{ query: string }[]>`
      SELECT query FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'listen %'`;
    return rows.length > 0 && rows;
  });
  t.same(
    listening.map((r) => r.query),
    [`listen "${channel}"`],
    'one connection listens on the channel pg-boss notifies',
  );
  // Past the start-up fetches: from here the next poll is a minute away.
  await sleep(2_000);

  const invoiceId = await sendInvoice(h, key, 'ana@example.cl');
  const mails = await smtp.waitFor(1, 20_000);
  t.equal(mails[0]!.headers.get('x-invoice-id'), invoiceId, 'the invoice e-mail arrived long before the next poll');
  const [hook] = await receiver.waitFor(1, 20_000);
  t.equal(hook!.headers['x-webhook-event'], 'invoice.sent', 'its webhook arrived too: fan-out and delivery were both woken');
  // The job is settled just after the message is handed over.
  const job = await until('the e-mail job to be settled', async () => {
    const [row] = await h.sql<{ state: string }[]>`SELECT state FROM pgboss.job WHERE name = 'email-send'`;
    return row && row.state !== 'active' ? row : null;
  }, 20_000);
  t.equal(job.state, 'completed', 'the e-mail job is completed');
});

t.test('one notification for a batch of jobs: a loop that finds work wakes the next, so the batch runs at once, not at the next poll', async (t) => {
  const cap = webhookDeliver.concurrency.perGroup;
  const hanging = await startHangingReceiver(t, 20_000);
  const h = await testApp(t);
  const { key } = await h.key(['*']);
  await createEndpoint(h, key, { url: hanging.url, events: ['client.created'] });
  for (let i = 0; i < cap; i++) {
    const res = await h.api('POST', '/clients', { key, body: { name: `C ${i}`, email: `c${i}@c.example.cl` } });
    t.equal(res.status, 201);
  }
  // The fan-out jobs are taken out of the queue: their events fan out below, in one transaction
  // whose commit sends the delivery queue one notification for all its jobs.
  const fanouts = await h.sql<{ data: { event_id: string } }[]>`DELETE FROM pgboss.job WHERE name = 'webhook-fanout' RETURNING data`;
  t.equal(fanouts.length, cap, 'one fan-out job per event');
  const worker = await startWorker(h.ctx.config, h.sql, { pollingSeconds: 60 });
  t.teardown(() => worker.stop());
  // Past the start-up fetches: from here the next poll is a minute away.
  await sleep(2_000);
  t.equal(hanging.state.received, 0, 'nothing delivered yet');
  await fanOut(worker.deps, fanouts.map((f) => f.data));
  await until(`the hanging receiver to hold ${cap} requests`, () => hanging.state.open >= cap, 20_000);
  t.equal(hanging.state.open, cap, `all ${cap} attempts in flight at once, long before the next poll`);
});

t.test('a hanging endpoint holds at most its group cap, and another merchant\'s webhook goes out before any of its requests ends', async (t) => {
  const cap = webhookDeliver.concurrency.perGroup;
  // More deliveries than the worker has webhook slots: without the cap they would take all of them.
  const burst = webhookDeliver.concurrency.localConcurrency + 12;
  const { hanging, fast, h, a, b } = await hangingAndFastMerchants(t);
  const statuses = new Set<number>();
  for (let i = 0; i < burst; i++) {
    statuses.add((await h.api('POST', '/clients', { key: a.key, body: { name: `A ${i}`, email: `a${i}@a.example.cl` } })).status);
  }
  t.same([...statuses], [201], `A created ${burst} clients`);
  // A's backlog is waiting when the worker starts, as after a deploy or an outage: its events fanned
  // out here by the worker's own fan-out code (the queued fan-out jobs then find nothing to do), so
  // every one of its webhook fetch loops finds A's attempts waiting at once.
  const fanouts = await h.sql<{ data: { event_id: string } }[]>`SELECT data FROM pgboss.job WHERE name = 'webhook-fanout'`;
  t.equal(fanouts.length, burst, 'one fan-out job per event of A');
  await fanOut({ config: h.ctx.config, sql: h.sql, boss: h.ctx.boss, secrets: h.ctx.secrets } as WorkerDeps, fanouts.map((f) => f.data));
  const [queued] = await h.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'webhook-deliver' AND state = 'created'`;
  t.equal(queued!.n, burst, `${burst} attempts of A are queued`);
  await startWorkerProcess(t, { DATABASE_URL: h.dbUrl });
  await until(`the hanging receiver to hold ${cap} requests`, () => hanging.state.open >= cap, 30_000);

  let atB: { open: number; closed: number; received: number } | null = null;
  fast.reply(() => {
    atB ??= { ...hanging.state };
    return { status: 200, body: 'ok' };
  });
  const res = await h.api('POST', '/clients', { key: b.key, body: { name: 'B', email: 'b@b.example.cl' } });
  t.equal(res.status, 201, 'B created a client after A\'s requests began to hang');
  await fast.waitFor(1, 30_000);
  t.ok(atB, 'B\'s webhook arrived');
  t.equal(atB!.closed, 0, 'B\'s webhook arrived before any of A\'s hanging requests was answered or timed out');
  t.equal(atB!.open, cap, `A's endpoint had its ${cap} requests open meanwhile (${atB!.open})`);

  // Keep watching through A's first timeouts, when its next deliveries take the freed slots.
  await until(`A's first wave to time out and a second to arrive`, () => hanging.state.closed >= cap && hanging.state.received >= 2 * cap, 45_000);
  t.equal(hanging.state.maxOpen, cap, `the hanging receiver never had more than ${cap} requests open (at most ${hanging.state.maxOpen} of ${hanging.state.received} received)`);
  const [active] = await h.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'webhook-deliver' AND state = 'active'`;
  t.ok(active!.n <= cap, `no more than ${cap} webhook jobs active (${active!.n})`);
  hanging.dropAll();
});

t.test('a batch waiting on a hanging receiver gives its other endpoints\' slots back: their deliveries do not wait for its timeouts', async (t) => {
  const cap = webhookDeliver.concurrency.perGroup;
  t.ok(webhookDeliver.concurrency.batchSize > 1, `webhook attempts are fetched in batches (${webhookDeliver.concurrency.batchSize})`);
  const { hanging, fast, h, a, b } = await hangingAndFastMerchants(t);
  // Each of A's cap events comes before batchSize - 1 of B's, so each batch first fetched holds one
  // attempt of A's and the rest B's: the batches waiting on A's hanging receiver hold far more of
  // B's attempts than B's cap. Then B has twice its cap more, to be fetched once slots come back.
  const batch = webhookDeliver.concurrency.batchSize;
  const order = [...Array.from({ length: cap }, () => [a, ...Array<typeof b>(batch - 1).fill(b)]).flat(), ...Array<typeof b>(2 * cap).fill(b)];
  const forB = order.filter((m) => m === b).length;
  for (const [i, m] of order.entries()) {
    const who = m === a ? 'a' : 'b';
    const res = await h.api('POST', '/clients', { key: m.key, body: { name: `${who} ${i}`, email: `${who}${i}@${who}.example.cl` } });
    if (res.status !== 201) throw new Error(`client create: ${res.status}`);
  }
  // Fanned out one event at a time, in the order they happened, so the attempts queue in that order.
  const fanouts = await h.sql<{ data: { event_id: string } }[]>`
    DELETE FROM pgboss.job WHERE name = 'webhook-fanout' RETURNING data`;
  const events = await h.sql<{ id: string }[]>`SELECT id FROM events WHERE id = ANY(${fanouts.map((f) => f.data.event_id)}::uuid[]) ORDER BY created_at, id`;
  t.equal(events.length, order.length, 'one fan-out per event of A and of B');
  const deps = { config: h.ctx.config, sql: h.sql, boss: h.ctx.boss, secrets: h.ctx.secrets } as WorkerDeps;
  for (const e of events) await fanOut(deps, [{ event_id: e.id }]);

  let atLastOfB: { open: number; closed: number; received: number } | null = null;
  fast.reply((_req, n) => {
    if (n === forB - 1) atLastOfB = { ...hanging.state };
    return { status: 200, body: 'ok' };
  });
  // A minute between polls: what runs after the start-up fetches runs because a slot came free.
  const worker = await startWorker(h.ctx.config, h.sql, { pollingSeconds: 60 });
  t.teardown(() => worker.stop());
  await fast.waitFor(forB, 14_000);
  t.ok(atLastOfB, `all ${forB} of B's webhooks arrived`);
  t.equal(atLastOfB!.closed, 0, 'before any of A\'s hanging requests was answered or timed out');
  t.equal(atLastOfB!.open, cap, `while A's endpoint held its ${cap} requests open`);
  t.equal(hanging.state.maxOpen, cap, `A never had more than its ${cap} open`);
  hanging.dropAll();
});

t.test('fairness: one merchant\'s burst of 150 does not queue another merchant\'s e-mail or webhook behind it', async (t) => {
  const total = 150;
  // X's burst and then Y's invoice are queued before the worker starts, so the queue holds X's 150
  // e-mails and webhooks ahead of Y's, created first. The sink and X's receiver answer each message
  // a little late, so X's jobs stay running long enough for its group cap to be what decides.
  const smtp = await startSmtpSink(t, { delayMs: 300 });
  const xHooks = await startHttpsReceiver(t);
  xHooks.reply(() => ({ status: 200, body: 'ok', delayMs: 300 }));
  const yHooks = await startHttpsReceiver(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const x = await h.key(['*']);
  const y = await h.key(['*']);
  await createEndpoint(h, x.key, { url: xHooks.url(), events: ['invoice.sent'] });
  await createEndpoint(h, y.key, { url: yHooks.url(), events: ['invoice.sent'] });
  for (let chunk = 0; chunk < total / 50; chunk++) {
    const res = await h.api('POST', '/invoices/bulk', {
      key: x.key,
      body: { invoices: Array.from({ length: 50 }, (_, i) => invoice(`x${chunk * 50 + i}@x.example.cl`)) },
    });
    t.equal(res.status, 200, `bulk ${chunk}`);
    t.equal(res.body.succeeded, 50, `bulk ${chunk}: every invoice sent`);
  }
  const [queued] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'email-send'`;
  t.equal(queued!.n, total, 'X\'s e-mails are all queued before Y sends');

  let xHooksAtY: number | null = null;
  yHooks.reply(() => {
    xHooksAtY ??= xHooks.received.length;
    return { status: 200, body: 'ok' };
  });
  const yInvoice = await sendInvoice(h, y.key, 'y@y.example.cl');
  await startWorkerProcess(t, { DATABASE_URL: h.dbUrl, SMTP_URL: smtp.url });

  const isY = (m: ReceivedMail) => m.headers.get('x-invoice-id') === yInvoice;
  await until('Y\'s e-mail', () => smtp.messages.some(isY), 60_000);
  await yHooks.waitFor(1, 60_000);
  await smtp.waitFor(total + 1, 120_000);
  await xHooks.waitFor(total, 120_000);

  const xMailsBeforeY = smtp.messages.findIndex(isY);
  // Without per-merchant caps the queue is FIFO: Y's job would be fetched only after every one of
  // X's, so at least `total - localConcurrency` of X's would have been delivered first.
  t.ok(
    xMailsBeforeY < total - emailSend.concurrency.localConcurrency,
    `Y's e-mail arrived after only ${xMailsBeforeY} of X's ${total} (a FIFO queue would put it after ${total - emailSend.concurrency.localConcurrency})`,
  );
  t.ok(smtp.messages.slice(xMailsBeforeY + 1).some((m) => !isY(m)), 'and before X\'s last e-mail');
  t.ok(xHooksAtY !== null && xHooksAtY < total - webhookDeliver.concurrency.localConcurrency,
    `Y's webhook arrived after only ${xHooksAtY} of X's ${total} (a FIFO queue would put it after ${total - webhookDeliver.concurrency.localConcurrency})`);
  t.ok(xHooksAtY! < total, 'and before X\'s last webhook');
});

t.test('a worker SIGKILLed mid-send: its job comes back by heartbeat and the e-mail arrives once', async (t) => {
  // The sink answers each message 5 s after its data; a client gone before the answer never
  // handed the message over (the sink drops it), so the killed send cannot reach the sink.
  const smtp = await startSmtpSink(t, { delayMs: 5_000 });
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const { key } = await h.key(['*']);
  const env = { DATABASE_URL: h.dbUrl, SMTP_URL: smtp.url };
  const first = await startWorkerProcess(t, env);

  const invoiceId = await sendInvoice(h, key, 'ana@example.cl');
  const [email] = await h.sql<{ id: string }[]>`SELECT id FROM emails WHERE invoice_id = ${invoiceId}`;
  const jobOf = async () =>
    (await h.sql<{ state: string; retry_count: number; message: string | null }[]>`
      SELECT state::text, retry_count, output->'value'->>'message' AS message
        FROM pgboss.job WHERE name = 'email-send' AND data->>'email_id' = ${email!.id}`)[0];

  await until('the first send to be under way', () => smtp.receiving >= 1, 30_000);
  t.match(await jobOf(), { state: 'active', retry_count: 0 }, 'the job is active under the first worker');
  first.process.kill('SIGKILL');
  await first.exited;

  // Every state the job passes through until it is completed, watched while the second worker runs.
  const seen: { state: string; retry_count: number; message: string | null }[] = [];
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const job = await jobOf();
      const last = seen.at(-1);
      if (job && (!last || last.state !== job.state || last.retry_count !== job.retry_count || last.message !== job.message)) seen.push(job);
      if (job?.state === 'completed') return;
      await sleep(50);
    }
  })().catch(() => {});
  t.teardown(() => {
    watching = false;
  });

  await startWorkerProcess(t, env);
  const forInvoice = () => smtp.messages.filter((m) => m.headers.get('x-invoice-id') === invoiceId);
  await until('the e-mail to arrive through the second worker', () => forInvoice().length >= 1, 150_000);
  const row = await until('the e-mail row to be sent', async () => {
    const [r] = await h.sql<{ status: string; sent_at: Date | null }[]>`SELECT status, sent_at FROM emails WHERE id = ${email!.id}`;
    return r?.status === 'sent' && r;
  }, 20_000);
  await until('the job to be completed', async () => (await jobOf())?.state === 'completed', 20_000);
  await watcher;
  await sleep(3_000);

  t.equal(row.status, 'sent', 'the e-mail row is sent');
  t.ok(row.sent_at, 'with its sent_at');
  t.equal(forInvoice().length, 1, 'exactly one copy at the sink: the killed transfer never got its 250');
  const back = seen.find((s) => s.state === 'retry');
  t.ok(back, `the job went back to the queue (states seen: ${JSON.stringify(seen)})`);
  t.equal(back?.message, 'job heartbeat timeout', 'because its heartbeat stopped, not because its 60 s lease ran out');
  const final = await jobOf();
  t.equal(final?.state, 'completed', 'the job is completed');
  t.ok(final!.retry_count >= 1, `it was run again (retry_count ${final!.retry_count})`);
});
