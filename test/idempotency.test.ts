// Idempotency-Key (docs/decisions.md §7 and §14) on POST /invoices and /invoices/bulk, plus the stored
// 409 answers (and the unstored 404s) through a probe route registered with the real API layer.
import t from 'tap';
import Fastify from 'fastify';
import { z } from 'zod';
import { AppError } from '../src/errors.js';
import { clock, dateInZone } from '../src/clock.js';
import { registerApi } from '../src/http/api.js';
import { API_PREFIX as API_BASE } from '../src/http/urls.js';
import { defineRoute } from '../src/http/route.js';
import { sendError, toAppError } from '../src/http/envelope.js';
import { setRate } from '../src/rates/service.js';
import { requestHash } from '../src/http/idempotency.js';
import { isEnvelope, testApp, type ApiResponse, type TestApp } from './helpers/app.js';
import { invoiceBody as body } from './helpers/fixtures.js';


async function invoiceCount(h: TestApp, merchantId: string): Promise<number> {
  const [r] = await h.sql`SELECT count(*)::int AS n FROM invoices WHERE merchant_id = ${merchantId}`;
  return r!.n as number;
}

const replayed = (r: ApiResponse) => r.headers['idempotent-replayed'] === 'true';

t.test('idempotency', async (t) => {
  const h = await testApp(t);
  const post = (key: string, idem: string | undefined, b: unknown, path = '/invoices') =>
    h.api('POST', path, { key, body: b, ...(idem === undefined ? {} : { headers: { 'Idempotency-Key': idem } }) });

  t.test('a repeat replays the first answer byte for byte', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const b = body({ send_immediately: true });
    const first = await post(key, 'k1', b);
    t.equal(first.status, 201);
    t.notOk(replayed(first), 'the first answer is not a replay');
    const again = await post(key, 'k1', b);
    t.equal(again.status, 201);
    t.ok(replayed(again), 'Idempotent-Replayed: true');
    t.equal(again.raw, first.raw, 'byte-identical body');
    t.equal(again.headers['content-type'], first.headers['content-type']);
    const third = await post(key, 'k1', b);
    t.equal(third.raw, first.raw);
    t.equal(await invoiceCount(h, merchantId), 1, 'one invoice');
    const [counter] = await h.sql`SELECT last_number::int AS n FROM invoice_counters WHERE merchant_id = ${merchantId}`;
    t.equal(counter!.n, 1, 'one number consumed');
    const [ev] = await h.sql`SELECT count(*)::int AS n FROM events WHERE merchant_id = ${merchantId} AND type = 'invoice.created'`;
    t.equal(ev!.n, 1, 'one invoice.created event');
  });

  t.test('same key, different body → 422 validation_error', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const b = body();
    t.equal((await post(key, 'k-diff', b)).status, 201);
    const other = await post(key, 'k-diff', { ...b, external_reference: 'changed' });
    t.equal(other.status, 422);
    t.ok(isEnvelope(other.body));
    t.equal(other.body.code, 'validation_error');
    t.notOk(replayed(other));
    t.ok(
      (other.body.details.errors as any[]).some((e) => e.path === 'Idempotency-Key'),
      'names the Idempotency-Key',
    );
    t.equal(await invoiceCount(h, merchantId), 1);
    // The original is still replayed after the mismatch.
    t.ok(replayed(await post(key, 'k-diff', b)));
  });

  t.test('"same body" is the same JSON after parsing', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const a =
      '{"client":{"name":"Orden","email":"orden@example.cl"},"due_date":"2099-01-01","items":[{"description":"x","quantity":2,"unit_price":5000}]}';
    const b = `{
      "items": [ { "unit_price": 5000.0, "description": "x", "quantity": 2 } ],
      "due_date": "2099-01-01",
      "client": { "email": "orden@example.cl", "name": "Orden" }
    }`;
    const first = await h.api('POST', '/invoices', { key, raw: a, headers: { 'Idempotency-Key': 'order' } });
    t.equal(first.status, 201);
    const second = await h.api('POST', '/invoices', { key, raw: b, headers: { 'Idempotency-Key': 'order' } });
    t.equal(second.status, 201);
    t.ok(replayed(second), 'reordered keys, whitespace and 5000.0 are the same body');
    t.equal(second.raw, first.raw);
    // Array order does matter.
    const swapped = await h.api('POST', '/invoices', {
      key,
      body: {
        client: { name: 'Orden', email: 'orden@example.cl' },
        due_date: '2099-01-01',
        items: [
          { description: 'y', unit_price: 1 },
          { description: 'x', quantity: 2, unit_price: 5000 },
        ],
      },
      headers: { 'Idempotency-Key': 'order' },
    });
    t.equal(swapped.status, 422);
    t.equal(await invoiceCount(h, merchantId), 1);
  });

  t.test('concurrent duplicates: one invoice; the others 409 (Retry-After: 5) or a replay', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    // A heavy body keeps the first request busy while the others arrive.
    const b = body({ send_immediately: true, items: Array.from({ length: 200 }, (_, i) => ({ description: `l${i}`, unit_price: i })) });
    const results = await Promise.all(Array.from({ length: 5 }, () => post(key, 'race', b)));
    const fresh = results.filter((r) => r.status === 201 && !replayed(r));
    t.equal(fresh.length, 1, 'exactly one request did the work');
    for (const r of results) {
      if (r === fresh[0]) continue;
      if (r.status === 409) {
        t.ok(isEnvelope(r.body));
        t.equal(r.body.code, 'idempotency_conflict');
        t.equal(r.body.retry, 'after_seconds:5');
        t.equal(r.headers['retry-after'], '5');
      } else {
        t.equal(r.status, 201, 'otherwise a replay');
        t.ok(replayed(r));
        t.equal(r.raw, fresh[0]!.raw);
      }
    }
    t.equal(await invoiceCount(h, merchantId), 1, 'one invoice');
    // The others' work, done beside their key's lookup, was rolled back whole.
    const [counter] = await h.sql`SELECT last_number::int AS n FROM invoice_counters WHERE merchant_id = ${merchantId}`;
    t.equal(counter!.n, 1, 'one number consumed');
    const [ev] = await h.sql`SELECT count(*)::int AS n FROM events WHERE merchant_id = ${merchantId} AND type IN ('invoice.created', 'invoice.sent')`;
    t.equal(ev!.n, 2, 'one invoice.created and one invoice.sent event');
    const [clients] = await h.sql`SELECT count(*)::int AS n FROM clients WHERE merchant_id = ${merchantId}`;
    t.equal(clients!.n, 1, 'one client');
    const after = await post(key, 'race', b);
    t.ok(replayed(after), 'once finished, a repeat is a replay');
    t.equal(after.raw, fresh[0]!.raw);
  });

  t.test('without a key a retried create makes a second invoice', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const b = body();
    const a = await post(key, undefined, b);
    const c = await post(key, undefined, b);
    t.equal(a.status, 201);
    t.equal(c.status, 201);
    t.not(a.body.invoice_id, c.body.invoice_id);
    t.notOk(replayed(c));
    t.equal(await invoiceCount(h, merchantId), 2);
  });

  t.test('key length: 1 to 255 characters', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const long = await post(key, 'k'.repeat(256), body());
    t.equal(long.status, 422);
    t.equal(long.body.code, 'validation_error');
    t.ok((long.body.details.errors as any[]).some((e) => e.path === 'Idempotency-Key'));
    t.equal(await invoiceCount(h, merchantId), 0);
    const empty = await post(key, '', body());
    t.equal(empty.status, 422, 'an empty key is refused');
    t.equal(empty.body.code, 'validation_error');
    t.equal(await invoiceCount(h, merchantId), 0);
    const max = 'k'.repeat(255);
    const b = body();
    t.equal((await post(key, max, b)).status, 201, '255 is fine');
    t.ok(replayed(await post(key, max, b)));
    t.equal(await invoiceCount(h, merchantId), 1);
  });

  t.test('answers that are not stored leave the key free', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const reader = await h.key(['invoices:read'], { merchantId });

    // 422 from body validation.
    const good = body();
    const bad = await post(key, 'fixme', { ...good, items: [{ description: 'x', unit_price: -1 }] });
    t.equal(bad.status, 422);
    const fixed = await post(key, 'fixme', good);
    t.equal(fixed.status, 201, 'the corrected retry with the same key succeeds');
    t.notOk(replayed(fixed));

    // 422 raised while executing (due_date before issue_date).
    const dates = body({ issue_date: '2026-03-10' });
    const late = await post(key, 'dates', { ...dates, due_date: '2026-03-01' });
    t.equal(late.status, 422);
    t.equal(late.body.code, 'validation_error');
    const fixedDates = await post(key, 'dates', dates);
    t.equal(fixedDates.status, 201);
    t.notOk(replayed(fixedDates));

    // 400 currency_not_supported.
    const cur = body();
    t.equal((await post(key, 'cur', { ...cur, currency: 'XYZ' })).status, 400);
    t.equal((await post(key, 'cur', cur)).status, 201);

    // 403: the key's scope is checked before anything is claimed.
    const denied = await post(reader.key, 'scoped', body());
    t.equal(denied.status, 403);
    const allowed = await post(key, 'scoped', body());
    t.equal(allowed.status, 201);
    t.notOk(replayed(allowed));

    // 5xx (no exchange rate): the key is released; the same request succeeds once a rate exists.
    const usd = body({ currency: 'USD' });
    const failed = await post(key, 'usd', usd);
    t.equal(failed.status, 503);
    t.equal(failed.body.code, 'currency_conversion_failed');
    await setRate(h.sql, merchantId, 'USD', dateInZone(clock.now(), 'America/Santiago'), '950.25');
    const retried = await post(key, 'usd', usd);
    t.equal(retried.status, 201);
    t.notOk(replayed(retried));
    t.equal(retried.body.currency, 'USD');

    t.equal(await invoiceCount(h, merchantId), 5);
    const [open] = await h.sql`SELECT count(*)::int AS n FROM idempotency_keys WHERE merchant_id = ${merchantId} AND status = 'running'`;
    t.equal(open!.n, 0, 'no claim left running');
  });

  t.test('scope: the merchant and the route', async (t) => {
    const a = await h.key(['*']);
    const b = await h.key(['*']);
    const sameMerchant = await h.key(['*'], { merchantId: a.merchantId });
    const payload = body();
    const ra = await post(a.key, 'shared', payload);
    const rb = await post(b.key, 'shared', payload);
    t.equal(ra.status, 201);
    t.equal(rb.status, 201);
    t.notOk(replayed(rb), 'another merchant’s key of the same name is its own');
    t.not(rb.body.invoice_id, ra.body.invoice_id);
    t.equal(await invoiceCount(h, a.merchantId), 1);
    t.equal(await invoiceCount(h, b.merchantId), 1);
    // Another API key of the same merchant shares the merchant's keys.
    const rc = await post(sameMerchant.key, 'shared', payload);
    t.ok(replayed(rc), 'scope is the merchant, not the API key');
    t.equal(rc.raw, ra.raw);
    // The same key on another route is another record.
    const bulk = await post(a.key, 'shared', { invoices: [payload] }, '/invoices/bulk');
    t.equal(bulk.status, 200);
    t.notOk(replayed(bulk));
    t.equal(await invoiceCount(h, a.merchantId), 2);
  });

  t.test('POST /invoices/bulk is idempotent too', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const b = { invoices: [body({ send_immediately: true }), body({ currency: 'XYZ' }), body({ send_immediately: true })] };
    const first = await post(key, 'bulk-1', b, '/invoices/bulk');
    t.equal(first.status, 200);
    t.match(first.body, { total: 3, succeeded: 2, failed: 1 });
    const again = await post(key, 'bulk-1', b, '/invoices/bulk');
    t.equal(again.status, 200);
    t.ok(replayed(again));
    t.equal(again.raw, first.raw);
    t.equal(await invoiceCount(h, merchantId), 2);
    const changed = await post(key, 'bulk-1', { invoices: [body()] }, '/invoices/bulk');
    t.equal(changed.status, 422);
    t.equal(changed.body.code, 'validation_error');
    const empty = await post(key, 'bulk-2', { invoices: [] }, '/invoices/bulk');
    t.equal(empty.status, 422, 'a rejected call');
    const later = await post(key, 'bulk-2', { invoices: [body()] }, '/invoices/bulk');
    t.equal(later.status, 200, '… stores nothing');
    t.notOk(replayed(later));
    const burst = await Promise.all(Array.from({ length: 4 }, () => post(key, 'bulk-3', b, '/invoices/bulk')));
    t.equal(burst.filter((r) => r.status === 200 && !replayed(r)).length, 1, 'concurrent bulk: one does the work');
    t.ok(burst.every((r) => r.status === 200 || (r.status === 409 && r.headers['retry-after'] === '5')));
    t.equal(await invoiceCount(h, merchantId), 5);
  });

  t.test('mark-paid: 409 answers are stored and replayed, 404s are not', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const draft = await post(key, undefined, body());
    const id = draft.body.invoice_id as string;
    const pay = { payment_method: 'transfer' };

    const notSent = await post(key, 'mp-1', pay, `/invoices/${id}/mark-paid`);
    t.equal(notSent.status, 409);
    t.equal(notSent.body.code, 'invoice_not_sent');
    t.notOk(replayed(notSent));
    // The invoice changes state, but the stored answer is what a repeat gets.
    const sent = await h.api('POST', `/invoices/${id}/send`, { key });
    t.equal(sent.status, 200);
    const again = await post(key, 'mp-1', pay, `/invoices/${id}/mark-paid`);
    t.equal(again.status, 409);
    t.ok(replayed(again));
    t.equal(again.raw, notSent.raw, 'byte-identical 409');
    t.equal((await h.api('GET', `/invoices/${id}`, { key })).body.status, 'sent', 'the replay did not pay the invoice');

    const paid = await post(key, 'mp-2', pay, `/invoices/${id}/mark-paid`);
    t.equal(paid.status, 200);
    t.equal(paid.body.status, 'paid');
    const paidAgain = await post(key, 'mp-2', pay, `/invoices/${id}/mark-paid`);
    t.equal(paidAgain.status, 200, 'a repeat of a successful mark-paid is a replay, not invoice_already_paid');
    t.ok(replayed(paidAgain));
    t.equal(paidAgain.raw, paid.raw);
    const [payments] = await h.sql`SELECT count(*)::int AS n FROM events WHERE merchant_id = ${merchantId} AND type = 'invoice.paid'`;
    t.equal(payments!.n, 1, 'one invoice.paid event');

    const missing = '01a206db-3c2d-713a-b423-ea5442122778';
    const nf = await post(key, 'mp-3', pay, `/invoices/${missing}/mark-paid`);
    t.equal(nf.status, 404);
    t.equal(nf.body.code, 'invoice_not_found');
    const nfAgain = await post(key, 'mp-3', pay, `/invoices/${missing}/mark-paid`);
    t.equal(nfAgain.status, 404);
    t.notOk(replayed(nfAgain), 'a 404 is not stored: the key stays free (docs/decisions.md §14)');
    const [stored] = await h.sql`SELECT count(*)::int AS n FROM idempotency_keys WHERE merchant_id = ${merchantId} AND key = 'mp-3'`;
    t.equal(stored!.n, 0, 'no idempotency record for the 404');
  });

  t.test('records are replayed for 24 hours, then forgotten', async (t) => {
    t.teardown(() => clock.reset());
    const { key, merchantId } = await h.key(['*']);
    const b = body({ issue_date: '2026-01-01' });
    const first = await post(key, 'day', b);
    t.equal(first.status, 201);
    clock.advance(23 * 3600_000 + 59 * 60_000);
    const within = await post(key, 'day', b);
    t.ok(replayed(within), 'replayed at 23 h 59 min');
    t.equal(within.raw, first.raw);
    clock.advance(2 * 60_000);
    const after = await post(key, 'day', b);
    t.equal(after.status, 201);
    t.notOk(replayed(after), 'after 24 h the key is new again');
    t.not(after.body.invoice_id, first.body.invoice_id);
    t.equal(await invoiceCount(h, merchantId), 2);
  });
});

t.test('stored 409 answers and unstored 404s, through the real API layer', async (t) => {
  const h = await testApp(t);
  let runs = 0;
  const probe = defineRoute({
    method: 'POST',
    path: '/idempotency-probe',
    operationId: 'idempotencyProbe',
    summary: 'Test probe',
    tag: 'Test',
    scope: 'invoices:create',
    idempotent: true,
    body: z.strictObject({ outcome: z.enum(['ok', 'not_found', 'conflict', 'invalid', 'crash', 'raced']), n: z.number().optional(), key: z.string().optional() }),
    response: { status: 200, description: 'ok', schema: z.object({ runs: z.number() }) },
    errors: [],
    handler: async ({ body, auth, db }) => {
      runs += 1;
      // A write that must be rolled back whenever the request fails.
      await db`INSERT INTO rate_limit_windows (bucket, window_start, hits) VALUES (${`probe-${runs}`}, 0, 1)`;
      switch (body.outcome) {
        case 'raced':
          // Another request's answer, committed after this one looked the key up.
          await h.sql`
            INSERT INTO idempotency_keys (merchant_id, route, key, request_hash, status, locked_until, response_status, response_body, created_at, expires_at)
            VALUES (${auth.merchant.id}, 'POST /idempotency-probe', ${body.key!}, ${requestHash(body)}, 'done', now(), 200, '{"winner":true}', now(), now() + interval '1 day')`;
          return { status: 200, body: { runs } };
        case 'not_found':
          throw new AppError('invoice_not_found', 'No such invoice.');
        case 'conflict':
          throw new AppError('invoice_invalid_state', 'Wrong state.', { details: { status: 'cancelled' } });
        case 'invalid':
          throw AppError.validation([{ path: 'payment_amount', message: 'must equal the total' }]);
        case 'crash':
          throw new Error('boom');
        default:
          return { status: 200, body: { runs } };
      }
    },
  });
  const app = Fastify({ logger: false });
  app.setErrorHandler((err, _request, reply) => sendError(reply, toAppError(err)));
  registerApi(app, h.ctx, [probe]);
  await app.ready();
  t.teardown(() => app.close());
  const { key } = await h.key(['*']);
  const call = async (idem: string, b: unknown) => {
    const res = await app.inject({
      method: 'POST',
      url: `${API_BASE}/idempotency-probe`,
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'idempotency-key': idem },
      payload: JSON.stringify(b),
    });
    return { status: res.statusCode, headers: res.headers, raw: res.body, body: JSON.parse(res.body) };
  };
  const probeRows = async () => (await h.sql`SELECT count(*)::int AS n FROM rate_limit_windows WHERE bucket LIKE 'probe-%'`)[0]!.n;

  t.test('a 404 is not stored: the key stays free and the table does not grow', async (t) => {
    const before = runs;
    for (let i = 0; i < 3; i++) {
      const res = await call('nf-free', { outcome: 'not_found' });
      t.equal(res.status, 404);
      t.equal(res.body.code, 'invoice_not_found');
      t.notOk(res.headers['idempotent-replayed'], 'not a replay');
    }
    t.equal(runs, before + 3, 'the handler ran each time');
    const [row] = await h.sql`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = 'nf-free'`;
    t.equal(row!.n, 0);
    const ok = await call('nf-free', { outcome: 'ok' });
    t.equal(ok.status, 200, 'the key is free for the corrected request');
    t.equal(await probeRows(), 1, 'only the successful request wrote');
    const replay = await call('nf-free', { outcome: 'ok' });
    t.equal(replay.headers['idempotent-replayed'], 'true');
    t.equal(replay.raw, ok.raw, 'the first answer, byte for byte');
    t.equal(await probeRows(), 1, 'the work done beside the replayed key was rolled back');
    await h.sql`DELETE FROM rate_limit_windows WHERE bucket LIKE 'probe-%'`;
  });

  for (const [outcome, status, code] of [['conflict', 409, 'invoice_invalid_state']] as const) {
    t.test(`a ${status} is stored and replayed`, async (t) => {
      for (let i = 0; i < 5; i++) {
        const before = runs;
        const idem = `${outcome}-${i}`;
        const first = await call(idem, { outcome });
        t.equal(first.status, status);
        t.ok(isEnvelope(first.body));
        t.equal(first.body.code, code);
        t.equal(runs, before + 1);
        const again = await call(idem, { outcome });
        t.equal(again.status, status, 'the same status');
        t.equal(again.headers['idempotent-replayed'], 'true');
        t.equal(again.raw, first.raw, 'the same bytes as the first answer');
        t.equal(await probeRows(), 0, "the replay's work was rolled back");
        const mismatch = await call(idem, { outcome, n: 1 });
        t.equal(mismatch.status, 422, 'a different body is still a mismatch');
      }
      t.equal(await probeRows(), 0, 'the failed requests wrote nothing');
    });
  }

  t.test('422 and 5xx raised while executing release the key', async (t) => {
    for (const [outcome, status] of [
      ['invalid', 422],
      ['crash', 500],
    ] as const) {
      const before = runs;
      const first = await call(`free-${outcome}`, { outcome });
      t.equal(first.status, status);
      const again = await call(`free-${outcome}`, { outcome });
      t.equal(again.status, status);
      t.notOk(again.headers['idempotent-replayed'], 'not a replay');
      t.equal(runs, before + 2, 'the handler ran again');
      const fixed = await call(`free-${outcome}`, { outcome: 'ok' });
      t.equal(fixed.status, 200, 'a corrected request with the same key succeeds');
      t.notOk(fixed.headers['idempotent-replayed']);
    }
    t.equal(await probeRows(), 2, 'only the two successful requests wrote');
  });

  t.test('an answer stored by another request first wins; this one is rolled back', async (t) => {
    const before = await probeRows();
    const body = { outcome: 'raced', key: 'raced-1' };
    const res = await call('raced-1', body);
    t.equal(res.status, 200);
    t.equal(res.headers['idempotent-replayed'], 'true', 'the stored answer, replayed');
    t.equal(res.raw, '{"winner":true}');
    t.equal(await probeRows(), before, 'the losing request wrote nothing');
    const again = await call('raced-1', body);
    t.equal(again.raw, '{"winner":true}');
  });
});
