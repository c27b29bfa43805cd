// docs/decisions.md §5 and §10: a webhook attempt held by a worker that died comes back (the attempt job's
// lease is 30 s) and is the same attempt, not a failed one. A real worker process is killed
// (SIGKILL) while the receiver holds its request; a new worker completes the delivery, and the
// record shows one attempt, none lost and none invented.
import t from 'tap';
import { testApp } from './helpers/app.js';
import { startWorkerProcess } from './helpers/processes.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { until } from './helpers/until.js';

t.test('a worker killed mid-delivery: the delivery completes after a restart with no attempt lost', async (t) => {
  const receiver = await startHttpsReceiver(t);
  // The first request is answered only after 10 s: time enough to kill the worker while it waits.
  receiver.reply((_req, n) => (n === 0 ? { status: 200, body: 'late', delayMs: 10_000 } : { status: 200, body: 'ok' }));
  const h = await testApp(t);
  const { key } = await h.key(['*']);

  const first = await startWorkerProcess(t, { DATABASE_URL: h.dbUrl });
  const ep = await h.api('POST', '/webhooks/endpoints', { key, body: { url: receiver.url(), events: ['client.created'] } });
  t.equal(ep.status, 201);
  const client = await h.api('POST', '/clients', { key, body: { name: 'Ana Rojas', email: 'ana@example.cl' } });
  t.equal(client.status, 201);

  await receiver.waitFor(1, 30_000);
  first.process.kill('SIGKILL');
  await first.exited;
  const [during] = await h.sql<{ id: string; status: string; attempts: number }[]>`SELECT id, status, attempts FROM webhook_deliveries WHERE endpoint_id = ${ep.body.id}`;
  t.match(during, { status: 'pending', attempts: 0 }, 'the interrupted attempt is not counted as failed');

  await startWorkerProcess(t, { DATABASE_URL: h.dbUrl });
  const done = await until(
    'the delivery to complete after the restart',
    async () => {
      const [d] = await h.sql<{ status: string; attempts: number }[]>`SELECT status, attempts FROM webhook_deliveries WHERE id = ${during!.id}`;
      return d?.status === 'success' ? d : null;
    },
    120_000,
  );
  t.equal(done.attempts, 1, 'the re-run is the same attempt');
  const recorded = await h.sql<{ attempt_number: number; response_status: number }[]>`
    SELECT attempt_number, response_status FROM webhook_attempts WHERE delivery_id = ${during!.id} ORDER BY attempt_number`;
  t.same(recorded, [{ attempt_number: 1, response_status: 200 }], 'one attempt kept, with its answer');
  t.equal(receiver.received.length, 2, 'the receiver saw the interrupted request and the completed one');
  t.equal(receiver.received[0]!.headers['x-webhook-id'], receiver.received[1]!.headers['x-webhook-id'], 'one event id: receivers de-duplicate on it');
});
