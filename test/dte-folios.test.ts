// Folios (docs/decisions.md §15): assigned in the sending transaction, gapless per merchant and type
// under concurrency (the proof of invoice numbers, test/numbering.test.ts), from the oldest CAF
// with folios left, across CAF ranges, and never more than the CAFs hold.
import t from 'tap';
import { testApp } from './helpers/app.js';
import { dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { facturaBody } from './helpers/fixtures.js';

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

t.test('folios under concurrency', async (t) => {
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, API_CONCURRENCY_PER_KEY: '100' });

  t.test('30 concurrent sends over two CAFs with 20 folios: 1..10 then 21..30, each once; the other 10 refused', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    // Loaded newest first: the oldest authorisation is used first all the same.
    await dteMerchant(h, merchantId, sii, [
      { type: 33, from: 21, to: 30, authorizedOn: '2026-03-01' },
      { type: 33, from: 1, to: 10, authorizedOn: '2026-01-10' },
    ]);
    const results = await Promise.all(
      Array.from({ length: 30 }, () => h.api('POST', '/invoices', { key, body: facturaBody({ client: { name: 'Mismo', email: 'mismo@example.cl' }, send_immediately: true }) })),
    );
    t.equal(results.filter((r) => r.status === 201).length, 20, '20 sent');
    const refused = results.filter((r) => r.status !== 201);
    t.equal(refused.length, 10);
    t.ok(refused.every((r) => r.status === 400 && r.body.code === 'merchant_misconfigured' && r.body.details.dte_type === 33), 'the rest refused, naming the type');
    const rows = await h.sql<{ dte_folio: number; invoice_number: string }[]>`
      SELECT dte_folio, invoice_number FROM invoices WHERE merchant_id = ${merchantId} ORDER BY dte_folio`;
    t.same(rows.map((r) => r.dte_folio), [...range(1, 10), ...range(21, 30)], 'gapless within the CAFs, none twice');
    t.same(rows.map((r) => r.invoice_number).sort(), range(1, 20).map((n) => `INV-${String(n).padStart(6, '0')}`), 'refused sends took no invoice number');
    const docs = await h.sql<{ folio: number }[]>`SELECT folio FROM invoice_dtes WHERE merchant_id = ${merchantId} ORDER BY folio`;
    t.same(docs.map((d) => d.folio), [...range(1, 10), ...range(21, 30)], 'one document per folio');
    const [counter] = await h.sql`SELECT issued FROM dte_folio_counters WHERE merchant_id = ${merchantId} AND dte_type = 33`;
    t.equal(counter!.issued, 20, 'the counter counts issued folios only');
    // The folio order follows the sending order: a later invoice number never has an earlier folio.
    const byNumber = await h.sql<{ dte_folio: number }[]>`SELECT dte_folio FROM invoices WHERE merchant_id = ${merchantId} ORDER BY invoice_number`;
    t.same(byNumber.map((r) => r.dte_folio), [...range(1, 10), ...range(21, 30)]);
  });

  t.test('types and merchants have their own sequences, also when they send at once', async (t) => {
    const a = await h.key(['*']);
    const b = await h.key(['*']);
    await dteMerchant(h, a.merchantId, sii, [{ type: 33, from: 1, to: 50 }, { type: 34, from: 1, to: 50 }]);
    await dteMerchant(h, b.merchantId, sii, [{ type: 33, from: 500, to: 550 }]);
    await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        h.api('POST', '/invoices', { key: i % 3 === 2 ? b.key : a.key, body: facturaBody({ send_immediately: true, is_tax_exempt: i % 3 === 1 }) }),
      ),
    );
    const folios = async (merchantId: string, type: number) =>
      (await h.sql<{ dte_folio: number }[]>`SELECT dte_folio FROM invoices WHERE merchant_id = ${merchantId} AND dte_type = ${type} ORDER BY dte_folio`).map((r) => r.dte_folio);
    t.same(await folios(a.merchantId, 33), range(1, 8));
    t.same(await folios(a.merchantId, 34), range(1, 8));
    t.same(await folios(b.merchantId, 33), range(500, 507));
  });
});
