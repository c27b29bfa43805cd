// Invoice numbers (docs/decisions.md §4): assigned on draft → sent, per merchant, gapless and unique under
// concurrency, `{prefix}{n}` zero-padded to 6 digits.
import t from 'tap';
import { testApp, type TestApp } from './helpers/app.js';

let seq = 0;
function body(extra: Record<string, unknown> = {}): Record<string, any> {
  seq += 1;
  return {
    client: { name: `Cliente ${seq}`, email: `num${seq}@example.cl` },
    due_date: '2099-12-31',
    items: [{ description: 'Servicio', unit_price: 1000 }],
    ...extra,
  };
}

const expected = (n: number) => Array.from({ length: n }, (_, i) => `INV-${String(i + 1).padStart(6, '0')}`);

async function numbersInDb(h: TestApp, merchantId: string): Promise<string[]> {
  const rows = await h.sql<{ invoice_number: string }[]>`
    SELECT invoice_number FROM invoices WHERE merchant_id = ${merchantId} AND invoice_number IS NOT NULL ORDER BY invoice_number`;
  return rows.map((r) => r.invoice_number);
}

t.test('numbering', async (t) => {
  // Thirty requests of one key at once: room for all of them, past the usual 10 in flight.
  const h = await testApp(t, { API_CONCURRENCY_PER_KEY: '100' });

  t.test('30 concurrent sends get INV-000001..INV-000030 exactly', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    // The same client for all: the concurrent requests also race on the client row.
    const results = await Promise.all(
      Array.from({ length: 30 }, () =>
        h.api('POST', '/invoices', { key, body: body({ client: { name: 'Mismo', email: 'mismo@example.cl' }, send_immediately: true }) }),
      ),
    );
    t.same(
      results.map((r) => r.status),
      Array(30).fill(201),
      'all created',
    );
    t.ok(results.every((r) => r.body.status === 'sent'));
    const numbers = results.map((r) => r.body.invoice_number as string).sort();
    t.same(numbers, expected(30), 'distinct, gapless, from 1');
    t.same(await numbersInDb(h, merchantId), expected(30), 'the database agrees');
    t.equal(new Set(results.map((r) => r.body.client_id)).size, 1, 'one client');
    // The response number is the stored one.
    for (const r of results.slice(0, 3)) {
      const got = await h.api('GET', `/invoices/${r.body.invoice_id}`, { key });
      t.equal(got.body.invoice_number, r.body.invoice_number);
    }
  });

  t.test('numbers are per merchant, also when merchants send at the same time', async (t) => {
    const a = await h.key(['*']);
    const b = await h.key(['*']);
    const calls = Array.from({ length: 20 }, (_, i) =>
      h.api('POST', '/invoices', { key: i % 2 ? a.key : b.key, body: body({ send_immediately: true }) }),
    );
    const results = await Promise.all(calls);
    t.ok(results.every((r) => r.status === 201));
    t.same(await numbersInDb(h, a.merchantId), expected(10), 'merchant A: 1..10');
    t.same(await numbersInDb(h, b.merchantId), expected(10), 'merchant B: 1..10');
    const c = await h.key(['*']);
    const first = await h.api('POST', '/invoices', { key: c.key, body: body({ send_immediately: true }) });
    t.equal(first.body.invoice_number, 'INV-000001', 'a third merchant starts at 1');
  });

  t.test('drafts and failed requests take no number; bulk numbers in order', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const mixed = await Promise.all(
      Array.from({ length: 12 }, (_, i) => {
        if (i % 3 === 0) return h.api('POST', '/invoices', { key, body: body() }); // draft
        if (i % 3 === 1) return h.api('POST', '/invoices', { key, body: body({ send_immediately: true, currency: 'USD' }) }); // 503: no rate
        return h.api('POST', '/invoices', { key, body: body({ send_immediately: true }) });
      }),
    );
    t.same(
      mixed.map((r) => r.status),
      Array.from({ length: 12 }, (_, i) => (i % 3 === 1 ? 503 : 201)),
    );
    t.ok(mixed.filter((_, i) => i % 3 === 0).every((r) => r.body.invoice_number === null), 'drafts have none');
    t.same(await numbersInDb(h, merchantId), expected(4), 'no gap from drafts nor rolled-back sends');

    const bulk = await h.api('POST', '/invoices/bulk', {
      key,
      body: {
        invoices: [
          body({ send_immediately: true }),
          body({ send_immediately: true, items: [] }),
          body(),
          body({ send_immediately: true, currency: 'XYZ' }),
          body({ send_immediately: true }),
        ],
      },
    });
    t.equal(bulk.status, 200);
    t.same(
      bulk.body.results.map((r: any) => r.invoice?.invoice_number ?? (r.success ? 'draft' : 'failed')),
      ['INV-000005', 'failed', 'draft', 'failed', 'INV-000006'],
      'items are numbered in request order, failures and drafts take none',
    );
    t.same(await numbersInDb(h, merchantId), expected(6));
    const [counter] = await h.sql`SELECT last_number::int AS n FROM invoice_counters WHERE merchant_id = ${merchantId}`;
    t.equal(counter!.n, 6);
  });

  t.test('concurrent bulk calls and single sends share one gapless sequence', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const calls = [
      ...Array.from({ length: 3 }, () =>
        h.api('POST', '/invoices/bulk', { key, body: { invoices: Array.from({ length: 5 }, () => body({ send_immediately: true })) } }),
      ),
      ...Array.from({ length: 5 }, () => h.api('POST', '/invoices', { key, body: body({ send_immediately: true }) })),
    ];
    const results = await Promise.all(calls);
    t.same(
      results.map((r) => r.status),
      [200, 200, 200, 201, 201, 201, 201, 201],
    );
    t.same(await numbersInDb(h, merchantId), expected(20));
    // Within one bulk call the numbers are consecutive (the call is one transaction).
    for (const r of results.slice(0, 3)) {
      const ns = r.body.results.map((x: any) => Number(x.invoice.invoice_number.slice(4)));
      t.same(
        ns,
        ns.map((_: number, i: number) => ns[0] + i),
        'consecutive within a bulk call',
      );
    }
  });
});
