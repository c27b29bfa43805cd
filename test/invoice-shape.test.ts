// One invoice reads the same through GET /invoices/{id} and GET /invoices (api-spec: both return
// the Invoice resource), in each state and shape; and the column lists the data layer builds its
// insert and reads from (src/invoices/columns.ts) are the migrated tables' columns.
import t from 'tap';
import { testApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';
import { setRate } from '../src/rates/service.js';
import { invoiceColumns, itemColumns } from '../src/invoices/columns.js';

t.test('the declared columns are the migrated tables\' columns, with their types', async (t) => {
  const h = await testApp(t);
  const columns = async (table: string) =>
    (
      await h.sql<{ name: string; type: string }[]>`
        SELECT column_name AS name, udt_name AS type FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name = ${table} ORDER BY ordinal_position`
    ).map((c) => `${c.name} ${c.type}`);
  const declared = (list: Record<string, { type: string }>) => Object.entries(list).map(([name, c]) => `${name} ${c.type}`);
  t.strictSame(declared(invoiceColumns), await columns('invoices'), 'invoices, in the table\'s order');
  t.strictSame(declared(itemColumns).sort(), (await columns('invoice_items')).sort(), 'invoice_items');
});

t.test('GET /invoices/{id} and the list give the same bytes for the same invoice', async (t) => {
  const h = await testApp(t);
  const { key, merchantId } = await h.key(['*']);
  const create = async (extra: Record<string, unknown> = {}): Promise<string> => {
    const res = await h.api('POST', '/invoices', { key, body: invoiceBody(extra) });
    if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
    return res.body.invoice_id;
  };
  const post = async (path: string, body: unknown = {}) => {
    const res = await h.api('POST', path, { key, body });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.raw}`);
  };
  await setRate(h.sql, merchantId, 'USD', '2026-03-03', '900.5');

  const draft = await create();
  const sent = await create({ send_immediately: true });
  const paid = await create({ send_immediately: true });
  await post(`/invoices/${paid}/mark-paid`, { payment_method: 'transfer' });
  const cancelled = await create({ send_immediately: true });
  await post(`/invoices/${cancelled}/cancel`, { reason: 'duplicada' });
  const figures = await create({
    client: { name: 'Constructora Andes SpA', email: 'compras@andes.cl', rut: '77.123.456-9', giro: 'Construcción', address: 'Av. Matta 100', comuna: 'Santiago', ciudad: 'Santiago', phone: '+56 2 2345 6789' },
    external_reference: 'OC-4500012345',
    items: [
      { description: 'Cemento especial 25 kg', quantity: 2, unit_price: 15990, discount_percent: 9 },
      { description: 'Despacho', quantity: 1, unit_price: 3990, discount_amount: 3990 },
      { description: 'Curso de montaje', quantity: 1, unit_price: 50000, exempt: true },
    ],
    global_discount: { percent: 5, description: 'Descuento cliente mayorista' },
    references: [{ type: '801', folio: '4500012345', date: '2026-03-02', reason: 'Orden de compra' }],
  });
  const foreign = await create({ currency: 'USD', issue_date: '2026-03-10', items: [{ description: 'Licence', quantity: 3, unit_price: 15.25 }] });
  // A gateway's payment and a DTE cancelled by its credit note, written as their services leave
  // them: every column the resource reads is set, so a list that dropped one would differ here.
  const dte = await create({ send_immediately: true });
  await h.sql`
    UPDATE invoices
       SET status = 'cancelled', paid_at = now(), payment_provider = 'webpay', payment_transaction_id = 'tx-123',
           dte_type = 33, dte_folio = 1042, dte_status = 'accepted', dte_track_id = '5000123',
           credit_note_folio = 77, credit_note_status = 'accepted', amount_credited = 11900, amount_debited = 100
     WHERE id = ${dte}`;

  const list = (await h.api('GET', '/invoices?limit=100', { key })).body.data as { id: string }[];
  const cases = { draft, sent, paid, cancelled, figures, foreign, dte };
  t.equal(list.length, Object.keys(cases).length, 'the list holds every invoice');
  for (const [name, id] of Object.entries(cases)) {
    const got = await h.api('GET', `/invoices/${id}`, { key });
    t.equal(got.status, 200, `${name}: GET`);
    t.equal(JSON.stringify(list.find((i) => i.id === id)), got.raw, `${name}: the list's element is GET's body`);
  }
  const shown = (await h.api('GET', `/invoices/${dte}`, { key })).body;
  t.match(
    shown,
    { payment_reference: { provider: 'webpay', transaction_id: 'tx-123' }, dte_folio: 1042, credit_note: { folio: 77 }, amount_debited: '100' },
    'the DTE invoice carries the fields set above',
  );
});
