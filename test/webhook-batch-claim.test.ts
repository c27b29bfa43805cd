// A batch of webhook attempt jobs (jobs/webhook-deliver.ts) is claimed in one statement and each
// job then goes its own way: an owed attempt is made once, even when two jobs of the batch ask
// for it or one asks for a later attempt of the same delivery; a stale job (its attempt no longer
// owed) does nothing, a job whose delivery another live run holds fails to be retried, and a job
// whose payload is not an attempt fails alone, without stopping its batch neighbours.
import t from 'tap';
import { testApp } from './helpers/app.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { fanOut } from '../jobs/webhook-fanout.js';
import { deliverWebhooks } from '../jobs/webhook-deliver.js';
import type { WorkerDeps } from '../jobs/worker.js';
import { DeliveryInFlightError } from '../src/webhooks/delivery.js';

t.test('one batch: owed attempts made once each, a stale job idle, a held delivery retried, a bad payload failed alone', async (t) => {
  const receiver = await startHttpsReceiver(t);
  const h = await testApp(t);
  const { key } = await h.key(['*']);
  const ep = await h.api('POST', '/webhooks/endpoints', { key, body: { url: receiver.url(), events: ['client.created'] } });
  t.equal(ep.status, 201);
  for (const name of ['Uno', 'Dos', 'Tres']) {
    t.equal((await h.api('POST', '/clients', { key, body: { name, email: `${name.toLowerCase()}@example.cl` } })).status, 201);
  }
  // No worker runs here: the events are fanned out by hand and their attempt jobs set aside, so
  // every attempt below is the batch's own.
  const fanouts = await h.sql<{ data: { event_id: string } }[]>`DELETE FROM pgboss.job WHERE name = 'webhook-fanout' RETURNING data`;
  const deps = { config: h.ctx.config, sql: h.sql, boss: h.ctx.boss, secrets: h.ctx.secrets } as WorkerDeps;
  await fanOut(deps, fanouts.map((f) => f.data));
  await h.sql`DELETE FROM pgboss.job WHERE name = 'webhook-deliver'`;
  const [one, two, held] = await h.sql<{ id: string }[]>`SELECT id FROM webhook_deliveries WHERE endpoint_id = ${ep.body.id} ORDER BY created_at, id`;
  t.ok(one && two && held, 'three deliveries');
  await h.sql`UPDATE webhook_deliveries SET leased_until = now() + interval '1 minute' WHERE id = ${held!.id}`;

  const outcomes = await Promise.allSettled(
    deliverWebhooks(deps, [
      { delivery_id: one!.id, attempt: 1 },
      { delivery_id: two!.id, attempt: 2 },
      { delivery_id: 'not-a-uuid', attempt: 1 },
      { delivery_id: held!.id, attempt: 1 },
      { delivery_id: two!.id, attempt: 1 },
      { delivery_id: one!.id, attempt: 1 },
    ]),
  );
  t.match(outcomes[0], { status: 'fulfilled', value: { id: one!.id, status: 'success', attempts: 1 } }, 'an owed attempt is made and recorded');
  t.same(outcomes[1], { status: 'fulfilled', value: null }, 'a job for an attempt not owed (2 before 1) does nothing');
  t.equal(outcomes[2]!.status, 'rejected', 'a payload that is not an attempt fails its own job');
  t.match(outcomes[2], { reason: { name: 'ZodError' } });
  const heldOutcome = outcomes[3]!;
  t.ok(heldOutcome.status === 'rejected' && heldOutcome.reason instanceof DeliveryInFlightError, 'a delivery another live run holds: its job fails, to be retried');
  t.match(outcomes[4], { status: 'fulfilled', value: { id: two!.id, status: 'success', attempts: 1 } }, 'the batch goes on past its failed neighbours');
  // A second job for an attempt the batch claimed (singleton keys keep them apart): the claim is
  // the first job's, so this one finds the attempt held (retried later) or already made.
  const twice = outcomes[5]!;
  t.ok(
    (twice.status === 'rejected' && twice.reason instanceof DeliveryInFlightError) || (twice.status === 'fulfilled' && twice.value === null),
    'a second job for a claimed attempt does not make it too',
  );
  t.equal(receiver.received.length, 2, 'two requests: one per owed attempt');
  t.same(
    receiver.received.map((r) => r.headers['x-webhook-id']).sort(),
    (await h.sql<{ event_id: string }[]>`SELECT event_id FROM webhook_deliveries WHERE id IN (${one!.id}, ${two!.id})`).map((r) => r.event_id).sort(),
    'one for each of the two deliveries',
  );
  const [untouched] = await h.sql<{ status: string; attempts: number }[]>`SELECT status, attempts FROM webhook_deliveries WHERE id = ${held!.id}`;
  t.same(untouched, { status: 'pending', attempts: 0 }, 'the held delivery is left to its run');

  // The same jobs again, as after a worker died before completing them: nothing is sent twice.
  const again = await Promise.allSettled(deliverWebhooks(deps, [{ delivery_id: one!.id, attempt: 1 }, { delivery_id: two!.id, attempt: 1 }]));
  t.same(again, [{ status: 'fulfilled', value: null }, { status: 'fulfilled', value: null }], 'attempts already made are not made again');
  t.equal(receiver.received.length, 2, 'still two requests');
});
