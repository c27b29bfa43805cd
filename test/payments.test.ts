import t from 'tap';
import { testApp, isEnvelope, type TestApp } from './helpers/app.js';
import { API_PREFIX } from '../src/http/urls.js';
import { newId } from '../src/ids.js';
import { AppError } from '../src/errors.js';
import { getPaymentResource, paymentResource } from '../src/payments/service.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface Invoice {
  invoice_id: string;
  invoice_number: string;
  total: string;
  currency: string;
}

/** A sent invoice, created through the API as a client of the service would. */
async function sentInvoice(h: TestApp, key: string, unitPrice = 10000, email = 'ana@example.cl'): Promise<Invoice> {
  const res = await h.api('POST', '/invoices', {
    key,
    body: {
      client: { name: 'Ana Pérez', email },
      due_date: '2099-12-31',
      items: [{ description: 'Consultoría', quantity: 1, unit_price: unitPrice }],
      send_immediately: true,
    },
  });
  if (res.status !== 201) throw new Error(`invoice not created: ${res.status} ${res.raw}`);
  return res.body;
}

interface PaymentSeed {
  merchantId: string;
  invoice: Invoice;
  createdAt: string;
  status?: 'succeeded' | 'failed';
  amount?: string;
  currency?: string;
  method?: string | null;
  provider?: string;
  id?: string;
}

/** A payments row written directly, as mark-paid or a checkout would record it. */
async function insertPayment(h: TestApp, p: PaymentSeed): Promise<string> {
  const id = p.id ?? newId();
  const status = p.status ?? 'succeeded';
  const createdAt = new Date(p.createdAt);
  await h.sql`
    INSERT INTO payments (id, merchant_id, invoice_id, amount, currency, method, notes, provider, transaction_id, status, paid_at, created_at)
    VALUES (${id}, ${p.merchantId}, ${p.invoice.invoice_id}, ${p.amount ?? p.invoice.total}, ${p.currency ?? p.invoice.currency},
            ${p.method === undefined ? 'transfer' : p.method}, ${null}, ${p.provider ?? 'manual'}, ${`tx_${id.slice(-12)}`}, ${status},
            ${status === 'succeeded' ? createdAt : null}, ${createdAt})`;
  return id;
}

/**
 * Merchant A with five payments on three invoices (newest first: p5, p4, p3, p2, p1; p3 and p4
 * share created_at, so id breaks the tie), and merchant B with one payment of its own.
 */
async function fixture(t: { teardown(fn: () => unknown): void }) {
  const h = await testApp(t);
  const a = await h.key(['*']);
  const b = await h.key(['*']);
  const inv1 = await sentInvoice(h, a.key, 10000, 'uno@example.cl');
  const inv2 = await sentInvoice(h, a.key, 2500.5, 'dos@example.cl');
  const inv3 = await sentInvoice(h, a.key, 100, 'tres@example.cl');
  const invB = await sentInvoice(h, b.key, 5000, 'otra@example.cl');
  const m = a.merchantId;
  const p1 = await insertPayment(h, { merchantId: m, invoice: inv1, createdAt: '2026-03-01T10:00:00.000Z', status: 'failed', provider: 'sandbox', method: null });
  const p2 = await insertPayment(h, { merchantId: m, invoice: inv1, createdAt: '2026-03-02T10:00:00.000Z' });
  // Same instant: the larger id comes first.
  const tieA = '01900000-0000-7000-8000-000000000001';
  const tieB = '01900000-0000-7000-8000-000000000002';
  const p3 = await insertPayment(h, { merchantId: m, invoice: inv2, createdAt: '2026-03-03T10:00:00.000Z', id: tieA, status: 'failed' });
  const p4 = await insertPayment(h, { merchantId: m, invoice: inv2, createdAt: '2026-03-03T10:00:00.000Z', id: tieB });
  const p5 = await insertPayment(h, { merchantId: m, invoice: inv3, createdAt: '2026-03-04T10:00:00.000Z', amount: '119', method: 'cash' });
  const pB = await insertPayment(h, { merchantId: b.merchantId, invoice: invB, createdAt: '2026-03-05T10:00:00.000Z' });
  return { h, a, b, inv1, inv2, inv3, invB, p1, p2, p3, p4, p5, pB };
}

const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((p) => p.id);

t.test('GET /payments lists newest first with the Payment shape', async (t) => {
  const f = await fixture(t);
  const res = await f.h.api('GET', '/payments', { key: f.a.key });
  t.equal(res.status, 200);
  t.same(Object.keys(res.body).sort(), ['data', 'has_more', 'limit', 'offset']);
  t.equal(res.body.limit, 50, 'default limit');
  t.equal(res.body.offset, 0, 'default offset');
  t.equal(res.body.has_more, false);
  t.same(ids(res), [f.p5, f.p4, f.p3, f.p2, f.p1], 'created_at desc, then id desc');

  const [p5, p4, p3, p2, p1] = res.body.data;
  t.same(Object.keys(p5).sort(), ['amount', 'created_at', 'currency', 'id', 'invoice_id', 'invoice_number', 'method', 'paid_at', 'provider', 'status', 'transaction_id'].sort());
  t.same(p2, {
    id: f.p2,
    invoice_id: f.inv1.invoice_id,
    invoice_number: f.inv1.invoice_number,
    amount: '11900.00',
    currency: 'CLP',
    method: 'transfer',
    provider: 'manual',
    transaction_id: `tx_${f.p2.slice(-12)}`,
    status: 'succeeded',
    paid_at: '2026-03-02T10:00:00.000Z',
    created_at: '2026-03-02T10:00:00.000Z',
  });
  t.match(f.inv1.invoice_number, /^INV-\d{6}$/);
  t.equal(p5.amount, '119.00', 'amount at the currency format (two decimals)');
  t.equal(p5.method, 'cash');
  t.equal(p4.amount, '2976.00', 'CLP rounding of the invoice total is kept');
  t.equal(p3.status, 'failed');
  t.equal(p3.paid_at, null, 'a failed payment has no paid_at');
  t.equal(p1.provider, 'sandbox');
  t.equal(p1.method, null);
  t.equal(p1.invoice_number, f.inv1.invoice_number);
  for (const p of res.body.data) {
    t.match(p.created_at, ISO_MS);
    t.type(p.amount, 'string');
  }
});

t.test('paging: limit, offset and has_more', async (t) => {
  const f = await fixture(t);
  const key = f.a.key;
  const first = await f.h.api('GET', '/payments?limit=2', { key });
  t.equal(first.status, 200);
  t.same(ids(first), [f.p5, f.p4]);
  t.equal(first.body.limit, 2);
  t.equal(first.body.offset, 0);
  t.equal(first.body.has_more, true);

  const second = await f.h.api('GET', '/payments?limit=2&offset=2', { key });
  t.same(ids(second), [f.p3, f.p2]);
  t.equal(second.body.offset, 2);
  t.equal(second.body.has_more, true);

  const last = await f.h.api('GET', '/payments?limit=2&offset=4', { key });
  t.same(ids(last), [f.p1]);
  t.equal(last.body.has_more, false);

  const exact = await f.h.api('GET', '/payments?limit=5', { key });
  t.equal(exact.body.data.length, 5);
  t.equal(exact.body.has_more, false, 'a full page with nothing after it has no more');

  const past = await f.h.api('GET', '/payments?offset=50', { key });
  t.same(past.body.data, []);
  t.equal(past.body.has_more, false);

  const bounds = await f.h.api('GET', '/payments?limit=1', { key });
  t.equal(bounds.status, 200);
  const max = await f.h.api('GET', '/payments?limit=100', { key });
  t.equal(max.status, 200);
});

t.test('filters: invoice_id, since (inclusive), until (exclusive)', async (t) => {
  const f = await fixture(t);
  const key = f.a.key;
  const get = (q: string) => f.h.api('GET', `/payments?${q}`, { key });

  t.same(ids(await get(`invoice_id=${f.inv1.invoice_id}`)), [f.p2, f.p1]);
  t.same(ids(await get(`invoice_id=${f.inv2.invoice_id}`)), [f.p4, f.p3]);
  t.same(ids(await get(`invoice_id=${f.invB.invoice_id}`)), [], "another merchant's invoice matches nothing");
  t.same(ids(await get('invoice_id=0191e4b2-7c1a-7000-8000-0000000000aa')), []);

  t.same(ids(await get('since=2026-03-03T10:00:00.000Z')), [f.p5, f.p4, f.p3], 'since is inclusive');
  t.same(ids(await get('since=2026-03-03T10:00:00.001Z')), [f.p5]);
  t.same(ids(await get('until=2026-03-03T10:00:00Z')), [f.p2, f.p1], 'until is exclusive');
  t.same(ids(await get('until=2026-03-03T10:00:00.001Z')), [f.p4, f.p3, f.p2, f.p1]);
  t.same(ids(await get('since=2026-03-02T00:00:00Z&until=2026-03-04T00:00:00Z')), [f.p4, f.p3, f.p2]);
  // An offset other than Z: 2026-03-02T07:00:00-03:00 is 10:00Z.
  t.same(ids(await get(`since=${encodeURIComponent('2026-03-02T07:00:00-03:00')}&until=${encodeURIComponent('2026-03-03T07:00:00-03:00')}`)), [f.p2]);
  t.same(ids(await get('since=2030-01-01T00:00:00Z')), []);

  // Filters combine with each other and with paging.
  const combined = await get(`invoice_id=${f.inv2.invoice_id}&since=2026-03-01T00:00:00Z&limit=1`);
  t.same(ids(combined), [f.p4]);
  t.equal(combined.body.has_more, true);
  const combined2 = await get(`invoice_id=${f.inv2.invoice_id}&since=2026-03-01T00:00:00Z&limit=1&offset=1`);
  t.same(ids(combined2), [f.p3]);
  t.equal(combined2.body.has_more, false);
});

t.test('bad query parameters are 422 validation_error naming the field', async (t) => {
  const f = await fixture(t);
  const key = f.a.key;
  const cases: Array<[string, string]> = [
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=1.5', 'limit'],
    ['offset=-1', 'offset'],
    ['since=yesterday', 'since'],
    ['since=2026-03-01', 'since'],
    ['until=2026-13-01T00:00:00Z', 'until'],
    ['until=1767225600', 'until'],
    ['invoice_id=abc', 'invoice_id'],
    ['invoice_id=', 'invoice_id'],
    ['status=succeeded', 'status'],
    ['sort=asc', 'sort'],
    ['since=2026-03-04T00:00:00Z&until=2026-03-01T00:00:00Z', 'until'],
  ];
  for (const [query, field] of cases) {
    const res = await f.h.api('GET', `/payments?${query}`, { key });
    t.equal(res.status, 422, `422 for ${query}`);
    t.ok(isEnvelope(res.body), `envelope for ${query}`);
    t.equal(res.body.code, 'validation_error');
    t.equal(res.body.path, `${API_PREFIX}/payments`, 'path without the query');
    t.ok(
      res.body.details?.errors?.some((e: { path: string }) => e.path === field),
      `${query}: details.errors names ${field}: ${JSON.stringify(res.body.details)}`,
    );
  }
  const several = await f.h.api('GET', '/payments?limit=0&invoice_id=x&foo=1', { key });
  t.equal(several.status, 422);
  t.same(several.body.details.errors.map((e: { path: string }) => e.path).sort(), ['foo', 'invoice_id', 'limit'], 'every bad field is named');
});

t.test('scope payments:read is required; * grants it', async (t) => {
  const f = await fixture(t);
  const m = f.a.merchantId;
  for (const scopes of [['payments:write'], ['invoices:read', 'invoices:create', 'clients:read']] as const) {
    const { key } = await f.h.key([...scopes], { merchantId: m });
    for (const path of ['/payments', `/payments/${f.p2}`, '/payments/not-a-uuid', '/payments?limit=0']) {
      const res = await f.h.api('GET', path, { key });
      t.equal(res.status, 403, `403 for ${path} with ${scopes.join(',')}`);
      t.ok(isEnvelope(res.body));
      t.equal(res.body.code, 'insufficient_scope');
      t.equal(res.body.retry, 'never');
      t.same(res.body.details, { required_scope: 'payments:read' });
    }
  }
  const readOnly = await f.h.key(['payments:read'], { merchantId: m });
  const list = await f.h.api('GET', '/payments', { key: readOnly.key });
  t.equal(list.status, 200);
  t.equal(list.body.data.length, 5);
  t.equal((await f.h.api('GET', `/payments/${f.p2}`, { key: readOnly.key })).status, 200);

  const star = await f.h.key(['*'], { merchantId: m });
  t.equal((await f.h.api('GET', '/payments', { key: star.key })).body.data.length, 5);
  t.equal((await f.h.api('GET', `/payments/${f.p5}`, { key: star.key })).status, 200);

  const none = await f.h.api('GET', '/payments');
  t.equal(none.status, 401);
  t.equal(none.body.code, 'missing_api_key');
});

t.test('merchant isolation', async (t) => {
  const f = await fixture(t);
  const listB = await f.h.api('GET', '/payments', { key: f.b.key });
  t.same(ids(listB), [f.pB], 'B sees only its own payment');
  const listA = await f.h.api('GET', '/payments', { key: f.a.key });
  t.notOk(ids(listA).includes(f.pB), 'A never sees B');

  const cross = await f.h.api('GET', `/payments/${f.p2}`, { key: f.b.key });
  t.equal(cross.status, 404, "another merchant's payment is 404, as if absent");
  t.equal(cross.body.code, 'payment_not_found');
  const crossBack = await f.h.api('GET', `/payments/${f.pB}`, { key: f.a.key });
  t.equal(crossBack.status, 404);
  t.equal(crossBack.body.code, 'payment_not_found');

  const fresh = await f.h.key(['payments:read']);
  const empty = await f.h.api('GET', '/payments', { key: fresh.key });
  t.equal(empty.status, 200);
  t.same(empty.body, { data: [], limit: 50, offset: 0, has_more: false });
});

t.test('GET /payments/:payment_id', async (t) => {
  const f = await fixture(t);
  const key = f.a.key;
  const list = await f.h.api('GET', '/payments', { key });
  for (const item of list.body.data) {
    const one = await f.h.api('GET', `/payments/${item.id}`, { key });
    t.equal(one.status, 200);
    t.same(one.body, item, `GET ${item.id} equals its list item`);
  }

  const unknown = await f.h.api('GET', '/payments/0191e4b2-7c1a-7000-8000-0000000000aa', { key });
  t.equal(unknown.status, 404);
  t.ok(isEnvelope(unknown.body));
  t.equal(unknown.body.code, 'payment_not_found');
  t.equal(unknown.body.retry, 'never');
  t.equal(unknown.body.path, `${API_PREFIX}/payments/0191e4b2-7c1a-7000-8000-0000000000aa`);

  for (const bad of ['not-a-uuid', '123', '0191e4b2-7c1a-7000-8000-0000000000aaa', '0191e4b27c1a700080000000000000aa0']) {
    const res = await f.h.api('GET', `/payments/${bad}`, { key });
    t.equal(res.status, 400, `400 for ${bad}`);
    t.ok(isEnvelope(res.body));
    t.equal(res.body.code, 'validation_error');
    t.equal(res.body.details?.errors?.[0]?.path, 'payment_id');
  }
});

t.test('paymentResource and getPaymentResource for webhook payloads', async (t) => {
  const f = await fixture(t);
  const viaApi = await f.h.api('GET', `/payments/${f.p2}`, { key: f.a.key });
  const direct = await f.h.sql.begin((tx) => getPaymentResource(tx, f.a.merchantId, f.p2));
  t.same(direct, viaApi.body, 'the same object as GET returns, inside a transaction too');

  const err = await getPaymentResource(f.h.sql, f.b.merchantId, f.p2).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof AppError, "another merchant's payment is not found");
  t.equal((err as AppError).code, 'payment_not_found');
  t.equal((err as AppError).status, 404);

  // Amount formatting follows the currency: four decimals for CLF, two otherwise.
  const base = {
    id: 'x',
    merchant_id: 'm',
    invoice_id: 'i',
    invoice_number: null,
    method: null,
    provider: 'sandbox',
    transaction_id: 't',
    status: 'failed' as const,
    paid_at: null,
    created_at: new Date('2026-03-01T00:00:00Z'),
  };
  t.equal(paymentResource({ ...base, amount: '3.5', currency: 'CLF' }).amount, '3.5000');
  t.equal(paymentResource({ ...base, amount: '119', currency: 'USD' }).amount, '119.00');
  t.equal(paymentResource({ ...base, amount: '11900', currency: 'CLP' }).amount, '11900.00');
  t.equal(paymentResource({ ...base, amount: '11900', currency: 'CLP' }).paid_at, null);
  t.equal(paymentResource({ ...base, amount: '1', currency: 'CLP' }).created_at, '2026-03-01T00:00:00.000Z');
});

t.test('a CLF merchant sees four-decimal amounts', async (t) => {
  const h = await testApp(t);
  const m = await h.merchant({ base_currency: 'CLF' });
  const { key } = await h.key(['*'], { merchantId: m.id });
  const inv = await sentInvoice(h, key, 3.5);
  t.equal(inv.currency, 'CLF');
  const id = await insertPayment(h, { merchantId: m.id, invoice: inv, createdAt: '2026-03-01T00:00:00Z' });
  const res = await h.api('GET', `/payments/${id}`, { key });
  t.equal(res.status, 200);
  t.equal(res.body.currency, 'CLF');
  t.equal(res.body.amount, inv.total);
  t.match(res.body.amount, /^\d+\.\d{4}$/);
});

t.test('the payments routes are in the OpenAPI document', async (t) => {
  const h = await testApp(t);
  const res = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/docs/openapi.json` });
  t.equal(res.statusCode, 200);
  const doc = JSON.parse(res.body);
  const list = doc.paths?.[`${API_PREFIX}/payments`]?.get;
  const one = doc.paths?.[`${API_PREFIX}/payments/{payment_id}`]?.get;
  t.equal(list?.operationId, 'listPayments');
  t.equal(one?.operationId, 'getPayment');
  const params = (list?.parameters ?? []).map((p: { name: string }) => p.name).sort();
  t.same(params, ['invoice_id', 'limit', 'offset', 'since', 'until']);
  t.match(list?.description, /created_at/, 'the description says which timestamp since and until filter on');
  t.match(JSON.stringify(one?.responses ?? {}), /payment_not_found/);
});
