// The events API and recover (docs/decisions.md §18): GET /events pages a merchant's events newest first
// with its filters, GET /events/{id} is the body the receiver got, and
// POST /webhooks/endpoints/{id}/recover delivers again, once, what an endpoint missed.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { testApp, type ApiResponse, type TestApp } from './helpers/app.js';
import { assertError, assertValidationError, type Asserts } from './helpers/assertions.js';
import { startHttpsReceiver, type HttpsReceiver } from './helpers/https-receiver.js';
import { until } from './helpers/until.js';
import { ConfigError, loadConfig } from '../src/config.js';

type Ev = { id: string; type: string; created_at: string };

async function storedEvents(h: TestApp, merchantId: string) {
  return h.sql<{ id: string; type: string; created_at: string }[]>`
    SELECT id, type, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at
      FROM events WHERE merchant_id = ${merchantId} ORDER BY id DESC`;
}

async function createClient(h: TestApp, key: string, name: string): Promise<string> {
  const res = await h.api('POST', '/clients', { key, body: { name, email: `${name.toLowerCase().replace(/\W/g, '')}@example.cl` } });
  if (res.status !== 201) throw new Error(`client create: ${res.status} ${res.raw}`);
  return res.body.id as string;
}

async function createEndpoint(h: TestApp, key: string, body: Record<string, unknown>) {
  const res = await h.api('POST', '/webhooks/endpoints', { key, body });
  if (res.status !== 201) throw new Error(`endpoint create: ${res.status} ${res.raw}`);
  return res.body as { id: string };
}

async function deliveries(h: TestApp, endpointId: string) {
  return h.sql<{ id: string; event_id: string; status: string; replay_of: string | null; last_error: string | null }[]>`
    SELECT id, event_id, status, replay_of, last_error FROM webhook_deliveries WHERE endpoint_id = ${endpointId} ORDER BY created_at, id`;
}

/** A 422 validation_error naming exactly this field. */
const field = (t: Asserts, res: ApiResponse, path: string, what: string) => assertValidationError(t, res, [path], { what });

const hits = (r: HttpsReceiver, path: string, eventId?: string) => r.received.filter((x) => x.path === path && (!eventId || x.headers['x-webhook-id'] === eventId));

t.test('listing: order, paging, filters, one event, refusals', async (t) => {
  const h = await testApp(t);
  const { key, merchantId } = await h.key(['webhooks:manage', 'clients:create', 'invoices:create']);
  for (const name of ['Uno', 'Dos', 'Tres', 'Cuatro']) await createClient(h, key, name);
  for (let i = 0; i < 2; i++) {
    const inv = await h.api('POST', '/invoices', { key, body: { client: { name: `Cliente ${i}`, email: `c${i}@example.cl` }, due_date: '2099-12-31', items: [{ description: 'x', quantity: 1, unit_price: 1000 }] } });
    t.equal(inv.status, 201);
  }
  const stored = await storedEvents(h, merchantId);
  t.ok(stored.length >= 8, `${stored.length} events`);

  t.test('newest first, paged with starting_after over several pages', async (t) => {
    const seen: Ev[] = [];
    let after: string | undefined;
    let pages = 0;
    for (;;) {
      const res = await h.api('GET', `/events?limit=3${after ? `&starting_after=${after}` : ''}`, { key });
      t.equal(res.status, 200);
      seen.push(...res.body.data);
      pages += 1;
      if (!res.body.has_more) break;
      t.equal(res.body.data.length, 3);
      after = res.body.data.at(-1).id;
    }
    t.ok(pages >= 3, `${pages} pages`);
    t.same(seen.map((e) => e.id), stored.map((e) => e.id), 'every event once, by id descending');
    const all = await h.api('GET', '/events', { key });
    t.equal(all.body.data.length, stored.length, 'default limit 50 holds them all');
    t.equal(all.body.has_more, false);
    t.same(Object.keys(all.body.data[0]), ['id', 'type', 'created_at', 'api_version', 'is_test', 'data']);
  });

  t.test('type: one, or a comma list', async (t) => {
    const one = await h.api('GET', '/events?type=client.created', { key });
    t.same(one.body.data.map((e: Ev) => e.id), stored.filter((e) => e.type === 'client.created').map((e) => e.id));
    const two = await h.api('GET', '/events?type=invoice.created,client.created&limit=5', { key });
    const both = stored.filter((e) => e.type === 'client.created' || e.type === 'invoice.created');
    t.same(two.body.data.map((e: Ev) => e.id), both.slice(0, 5).map((e) => e.id), 'merged newest first');
    t.equal(two.body.has_more, both.length > 5);
    const next = await h.api('GET', `/events?type=invoice.created,client.created&limit=5&starting_after=${two.body.data.at(-1).id}`, { key });
    t.same(next.body.data.map((e: Ev) => e.id), both.slice(5, 10).map((e) => e.id), 'and paged');
    const none = await h.api('GET', '/events?type=payment.failed', { key });
    t.same(none.body, { data: [], has_more: false });
  });

  t.test('created_gte (inclusive) and created_lt (exclusive)', async (t) => {
    const asc = [...stored].reverse();
    const from = asc[2]!.created_at;
    const to = asc[5]!.created_at;
    const res = await h.api('GET', `/events?created_gte=${from}&created_lt=${to}`, { key });
    t.equal(res.status, 200);
    t.same(res.body.data.map((e: Ev) => e.id), stored.filter((e) => e.created_at >= from && e.created_at < to).map((e) => e.id));
    t.ok(res.body.data.length >= 3);
    const offset = await h.api('GET', `/events?created_gte=${encodeURIComponent('2000-01-01T00:00:00-03:00')}`, { key });
    t.equal(offset.body.data.length, stored.length, 'an offset is RFC 3339 too');
    const lower = await h.api('GET', `/events?created_gte=${from.toLowerCase()}&created_lt=${to.toLowerCase()}`, { key });
    t.same(lower.body.data, res.body.data, 'so are a lower-case t and z (RFC 3339 §5.6)');
  });

  t.test('GET one is the list entry; unknown, another merchant\'s, malformed', async (t) => {
    const list = await h.api('GET', '/events', { key });
    for (const e of list.body.data.slice(0, 3)) {
      const one = await h.api('GET', `/events/${e.id}`, { key });
      t.equal(one.status, 200);
      t.same(one.body, e);
    }
    const other = await h.key(['*']);
    await createClient(h, other.key, 'Ajeno');
    const [foreign] = await storedEvents(h, other.merchantId);
    for (const id of [foreign!.id, randomUUID()]) {
      assertError(t, await h.api('GET', `/events/${id}`, { key }), 404, 'event_not_found');
    }
    t.notOk((await h.api('GET', '/events', { key })).body.data.some((e: Ev) => e.id === foreign!.id), 'not listed either');
    const malformed = await h.api('GET', '/events/not-a-uuid', { key });
    assertError(t, malformed, 400, 'validation_error', 'malformed id: 400, as outside /webhooks');
    t.equal(malformed.body.details.errors[0].path, 'event_id');
    field(t, await h.api('GET', `/events?starting_after=${foreign!.id}`, { key }), 'starting_after', 'another merchant\'s cursor');
    field(t, await h.api('GET', `/events?starting_after=${randomUUID()}`, { key }), 'starting_after', 'an unknown cursor');
  });

  t.test('every bad query names its field', async (t) => {
    field(t, await h.api('GET', '/events?limit=0', { key }), 'limit', 'limit=0');
    field(t, await h.api('GET', '/events?limit=101', { key }), 'limit', 'limit=101');
    field(t, await h.api('GET', '/events?limit=x', { key }), 'limit', 'limit=x');
    field(t, await h.api('GET', '/events?limit=0x2', { key }), 'limit', 'limit=0x2, hexadecimal');
    const bad = await h.api('GET', '/events?type=invoice.paid,invoice.exploded', { key });
    field(t, bad, 'type', 'unknown type');
    t.match(bad.body.details.errors[0].message, /invoice\.exploded/);
    field(t, await h.api('GET', '/events?created_gte=yesterday', { key }), 'created_gte', 'bad created_gte');
    field(t, await h.api('GET', '/events?created_lt=2026-13-01T00:00:00Z', { key }), 'created_lt', 'bad created_lt');
    field(t, await h.api('GET', '/events?created_gte=2026-11-02T00:00:00Z&created_lt=2026-11-01T00:00:00Z', { key }), 'created_lt', 'an empty window');
    field(t, await h.api('GET', '/events?delivery_success=maybe', { key }), 'delivery_success', 'delivery_success');
    field(t, await h.api('GET', '/events?starting_after=nope', { key }), 'starting_after', 'malformed cursor');
    field(t, await h.api('GET', '/events?colour=red', { key }), 'colour', 'an unknown parameter');
  });

  t.test('scope webhooks:manage', async (t) => {
    const { key: reader } = await h.key(['invoices:read', 'clients:read'], { merchantId });
    for (const path of ['/events', `/events/${stored[0]!.id}`]) {
      const res = await h.api('GET', path, { key: reader });
      assertError(t, res, 403, 'insufficient_scope', path);
      t.equal(res.body.details.required_scope, 'webhooks:manage', path);
    }
    assertError(t, await h.api('POST', `/webhooks/endpoints/${randomUUID()}/recover`, { key: reader, body: { since: new Date().toISOString() } }), 403, 'insufficient_scope');
  });
});

t.test('deliveries: the body received, delivery_success, recover', async (t) => {
  // Two attempts, 1 s apart, then the delivery gives up.
  const h = await testApp(t, { WEBHOOK_RETRY_SCHEDULE: '1', WEBHOOK_DISABLE_AFTER_FAILURES: '1000' });
  await h.startWorker();
  const receiver = await startHttpsReceiver(t);
  let downUp = false;
  receiver.reply((req) => {
    if (req.path === '/down' && !downUp) return { status: 500, body: 'down' };
    // A Retry-After of an hour: the delivery waits for a retry that is not due in this test.
    if (req.path === '/later' && !downUp) return { status: 503, headers: { 'retry-after': '3600' }, body: 'busy' };
    return { status: 200, body: 'ok' };
  });
  const { key, merchantId } = await h.key(['*']);
  const ok = await createEndpoint(h, key, { url: receiver.url('/ok') });
  const down = await createEndpoint(h, key, { url: receiver.url('/down'), events: ['client.created'] });
  const later = await createEndpoint(h, key, { url: receiver.url('/later'), events: ['client.created'] });
  const since = new Date(Date.now() - 60_000).toISOString();

  await createClient(h, key, 'Caido');
  const [missed] = await storedEvents(h, merchantId);
  await until('the /down delivery to give up and /later to wait', async () => {
    const [d] = await deliveries(h, down.id);
    const [l] = await deliveries(h, later.id);
    return d?.status === 'failed' && l?.status === 'retrying' && hits(receiver, '/ok').length >= 1;
  });
  t.equal(hits(receiver, '/down').length, 2, 'two attempts to /down');
  const invoice = await h.api('POST', '/invoices', { key, body: { client: { name: 'Caido', email: 'caido@example.cl' }, due_date: '2099-12-31', items: [{ description: 'x', quantity: 1, unit_price: 1000 }] } });
  t.equal(invoice.status, 201);
  const [delivered, before] = await storedEvents(h, merchantId);
  t.equal(delivered!.type, 'invoice.created');
  t.equal(before!.id, missed!.id, 'the client is the one already known: no other event');
  await until('invoice.created at /ok', () => hits(receiver, '/ok', delivered!.id).length === 1);
  await until('its delivery recorded', async () => (await deliveries(h, ok.id)).every((d) => d.status === 'success'));

  t.test('GET /events/{id} is the body the receiver got', async (t) => {
    for (const id of [missed!.id, delivered!.id]) {
      const [got] = hits(receiver, '/ok', id);
      const res = await h.api('GET', `/events/${id}`, { key });
      t.equal(res.status, 200);
      t.same(res.body, JSON.parse(got!.body));
      t.equal(res.raw, got!.body, 'byte for byte');
    }
  });

  t.test('delivery_success=false: what some endpoint has not received; true: the rest', async (t) => {
    const no = await h.api('GET', '/events?delivery_success=false', { key });
    t.same(no.body.data.map((e: Ev) => e.id), [missed!.id]);
    const yes = await h.api('GET', '/events?delivery_success=true', { key });
    t.same(yes.body.data.map((e: Ev) => e.id), [delivered!.id]);
    const both = await h.api('GET', '/events?delivery_success=false&type=client.created,invoice.created', { key });
    t.same(both.body.data.map((e: Ev) => e.id), [missed!.id], 'with a type filter too');
  });

  t.test('recover refusals', async (t) => {
    const old = new Date(Date.now() - 31 * 86_400_000).toISOString();
    field(t, await h.api('POST', `/webhooks/endpoints/${down.id}/recover`, { key, body: { since: old } }), 'since', 'older than the retention');
    field(t, await h.api('POST', `/webhooks/endpoints/${down.id}/recover`, { key, body: { since: 'ayer' } }), 'since', 'not RFC 3339');
    field(t, await h.api('POST', `/webhooks/endpoints/${down.id}/recover`, { key, body: {} }), 'since', 'since is required');
    field(t, await h.api('POST', `/webhooks/endpoints/${down.id}/recover`, { key, body: { since, until: since } }), 'until', 'until not after since');
    field(t, await h.api('POST', `/webhooks/endpoints/${down.id}/recover`, { key, body: { since: new Date(Date.now() + 3_600_000).toISOString() } }), 'since', 'since in the future');
    field(t, await h.api('POST', '/webhooks/endpoints/nope/recover', { key, body: { since } }), 'endpoint_id', 'malformed id');
    const other = await h.key(['*']);
    for (const [what, k] of [['unknown', key], ['another merchant\'s', other.key]] as const) {
      const res = await h.api('POST', `/webhooks/endpoints/${what === 'unknown' ? randomUUID() : down.id}/recover`, { key: k, body: { since } });
      assertError(t, res, 404, 'webhook_endpoint_not_found', what);
    }
    t.equal(hits(receiver, '/down').length, 2, 'nothing sent');
  });

  t.test('recover: the receiver gets exactly the missed events, once', async (t) => {
    downUp = true;
    const res = await h.api('POST', `/webhooks/endpoints/${down.id}/recover`, { key, body: { since }, headers: { 'idempotency-key': 'recover-1' } });
    t.equal(res.status, 202);
    t.same(res.body, { events: 1, has_more: false });
    const again = await h.api('POST', `/webhooks/endpoints/${down.id}/recover`, { key, body: { since }, headers: { 'idempotency-key': 'recover-1' } });
    t.equal(again.status, 202);
    t.equal(again.headers['idempotent-replayed'], 'true');
    t.same(again.body, res.body);
    await until('the replay delivered', async () => (await deliveries(h, down.id)).some((d) => d.replay_of && d.status === 'success'));
    const [original, replay] = await deliveries(h, down.id);
    t.equal(replay!.replay_of, original!.id, 'linked to the delivery that gave up');
    const got = hits(receiver, '/down');
    t.equal(got.length, 3);
    t.equal(got[2]!.headers['x-webhook-id'], missed!.id);
    t.equal(got[2]!.body, hits(receiver, '/ok', missed!.id)[0]!.body, 'the same body');
    t.same((await h.api('POST', `/webhooks/endpoints/${down.id}/recover`, { key, body: { since } })).body, { events: 0, has_more: false }, 'nothing left to recover');
  });

  t.test('recover replaces a delivery waiting for a retry; it stops', async (t) => {
    t.equal(hits(receiver, '/later').length, 1);
    const res = await h.api('POST', `/webhooks/endpoints/${later.id}/recover`, { key, body: { since } });
    t.same(res.body, { events: 1, has_more: false });
    await until('the replay delivered', async () => (await deliveries(h, later.id)).some((d) => d.replay_of && d.status === 'success'));
    const [original] = await deliveries(h, later.id);
    t.match(original, { status: 'failed', last_error: 'superseded by a recover' });
    t.equal(hits(receiver, '/later').length, 2);
    t.same((await h.api('GET', '/events?delivery_success=false', { key })).body.data, [], 'every endpoint has every event now');
  });

  t.test('events emitted while the endpoint was disabled are recovered once it is enabled', async (t) => {
    t.equal((await h.api('PATCH', `/webhooks/endpoints/${down.id}`, { key, body: { enabled: false } })).status, 200);
    await createClient(h, key, 'Mientras');
    const [whileOff] = await storedEvents(h, merchantId);
    await until('the event at /ok', () => hits(receiver, '/ok', whileOff!.id).length === 1);
    t.equal((await deliveries(h, down.id)).filter((d) => d.event_id === whileOff!.id).length, 0, 'no delivery to a disabled endpoint');
    // Sent to /ok only, which received it: a delivered event, as Stripe counts pending webhooks.
    const listed = async (success: boolean) =>
      (await h.api('GET', `/events?delivery_success=${success}&created_gte=${encodeURIComponent(since)}`, { key })).body.data.some((e: Ev) => e.id === whileOff!.id);
    await until('its delivery to /ok recorded', async () => listed(true));
    t.notOk(await listed(false), 'delivery_success=false leaves out what a disabled endpoint was never sent');
    const refused = await h.api('POST', `/webhooks/endpoints/${down.id}/recover`, { key, body: { since } });
    field(t, refused, 'endpoint_id', 'a disabled endpoint');
    t.equal((await h.api('PATCH', `/webhooks/endpoints/${down.id}`, { key, body: { enabled: true } })).status, 200);
    const res = await h.api('POST', `/webhooks/endpoints/${down.id}/recover`, { key, body: { since } });
    t.same(res.body, { events: 1, has_more: false }, 'only the client.created it subscribes to');
    await until('it arrives', () => hits(receiver, '/down', whileOff!.id).length === 1);
    await until('its delivery recorded', async () => (await deliveries(h, down.id)).every((d) => d.status !== 'pending'));
    t.same((await h.api('POST', `/webhooks/endpoints/${down.id}/recover`, { key, body: { since } })).body, { events: 0, has_more: false });
    t.equal(hits(receiver, '/down').length, 4, 'no other event reached it');
  });
});

t.test('EVENT_RETENTION_DAYS: an integer, 30 unless set, at least 7', async (t) => {
  t.equal(loadConfig({}).EVENT_RETENTION_DAYS, 30);
  t.equal(loadConfig({ EVENT_RETENTION_DAYS: '90' }).EVENT_RETENTION_DAYS, 90);
  for (const bad of ['6', '7.5', 'month']) t.throws(() => loadConfig({ EVENT_RETENTION_DAYS: bad }), ConfigError, bad);
});
