// docs/decisions.md §17 through the API: line discounts, exempt lines, the global discount, references and
// the client's giro, comuna and ciudad. Every figure below is worked out by hand in its comment, so
// a test does not share an arithmetic mistake with src/money.ts.
import t from 'tap';
import type { TestApp } from './helpers/app.js';
import { testApp } from './helpers/app.js';
import { assertValidationError, errorPaths, type Asserts } from './helpers/assertions.js';
import { invoiceBody as body } from './helpers/fixtures.js';

const AMOUNTS = [
  'subtotal',
  'taxable_amount',
  'exempt_amount',
  'discount_total',
  'tax_total',
  'total',
  'amount_paid',
  'amount_credited',
  'amount_debited',
  'amount_due',
] as const;
type Amounts = Record<(typeof AMOUNTS)[number], string>;

interface ItemFigures {
  quantity: string;
  unit_price: string;
  discount_percent: string | null;
  discount_amount: string;
  exempt: boolean;
  line_total: string;
}

interface Figures extends Amounts {
  tax_rate: string;
  global_discount: { percent: string | null; amount: string | null; description: string | null } | null;
  items: ItemFigures[];
}

/** The figures of an Invoice resource, nothing else, so a mismatch shows only what differs. */
function figures(inv: any): Figures {
  const amounts = Object.fromEntries(AMOUNTS.map((k) => [k, inv[k]])) as Amounts;
  return {
    ...amounts,
    tax_rate: inv.tax_rate,
    global_discount: inv.global_discount,
    items: inv.items.map((i: any) => ({
      quantity: i.quantity,
      unit_price: i.unit_price,
      discount_percent: i.discount_percent,
      discount_amount: i.discount_amount,
      exempt: i.exempt,
      line_total: i.line_total,
    })),
  };
}

/** Every amount is `total` unpaid and without notes: the four that only payments and notes move. */
const unpaid = (total: string) => ({ amount_paid: '0.00', amount_credited: '0.00', amount_debited: '0.00', amount_due: total, total });

const cents = (s: string) => BigInt(s.replace('.', ''));

/** The invoice as GET, the list and the invoice.created event show it: all three must be the same resource. */
async function readBack(t: Asserts, h: TestApp, key: string, id: string): Promise<any> {
  const got = await h.api('GET', `/invoices/${id}`, { key });
  t.equal(got.status, 200, 'GET /invoices/{id}');
  const list = await h.api('GET', '/invoices?limit=100', { key });
  const listed = (list.body.data as any[]).find((i) => i.id === id);
  t.same(listed, got.body, 'the list shows the invoice exactly as GET does');
  const [event] = await h.sql<{ payload: any }[]>`
    SELECT payload FROM events WHERE type = 'invoice.created' AND payload->'data'->'object'->>'id' = ${id}`;
  // The event is the invoice at creation: a later send or payment changes its status, not these.
  const object = event?.payload.data.object;
  t.same(object && [figures(object), object.client, object.references], [figures(got.body), got.body.client, got.body.references], 'invoice.created carries the same figures, client and references');
  return got.body;
}

/** Creates the invoice and checks its figures (GET, list, event) and the identities of §17 on the wire strings. */
async function assertFigures(t: Asserts, h: TestApp, key: string, b: Record<string, unknown>, expected: Figures): Promise<any> {
  const created = await h.api('POST', '/invoices', { key, body: b });
  t.equal(created.status, 201, 'created', { found: created.body });
  t.equal(created.body.total, expected.total, 'the create answer has the total');
  const inv = await readBack(t, h, key, created.body.invoice_id);
  t.same(figures(inv), expected, 'every amount as worked out by hand');
  t.equal(cents(inv.taxable_amount) + cents(inv.exempt_amount), cents(inv.subtotal), 'taxable_amount + exempt_amount = subtotal');
  t.equal(cents(inv.subtotal) + cents(inv.tax_total), cents(inv.total), 'subtotal + tax_total = total');
  if (inv.currency === 'CLP') {
    const all = [...AMOUNTS.map((k) => inv[k] as string), ...inv.items.flatMap((i: any) => [i.discount_amount, i.line_total])];
    t.ok(all.every((s) => s.endsWith('.00')), 'CLP amounts are whole pesos');
  }
  return inv;
}

async function count(h: TestApp, table: 'invoices' | 'clients', merchantId: string): Promise<number> {
  const [r] = await h.sql.unsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM ${table} WHERE merchant_id = $1`, [merchantId]);
  return r!.n;
}

t.test('figures worked out by hand', async (t) => {
  const h = await testApp(t);

  t.test('line discount percent: 9 % on 2 × 15.990, half-up on 15 % of 8.990', async (t) => {
    const { key } = await h.key(['*']);
    // Line 1: gross 2 × 15990 = 31980; discount round(31980 × 9 / 100) = round(2878.2) = 2878; total 29102.
    // Line 2: no discount, 4990.
    // Line 3: gross 8990; discount round(8990 × 15 / 100) = round(1348.5) = 1349 (half-up, banker's would
    //   give 1348); total 7641.
    // taxable = 29102 + 4990 + 7641 = 41733; tax = round(41733 × 0.19) = round(7929.27) = 7929;
    // total = 41733 + 7929 = 49662. No global discount: discount_total 0 (line discounts are in the items).
    await assertFigures(
      t,
      h,
      key,
      body({
        items: [
          { description: 'Cemento especial 25 kg', quantity: 2, unit_price: 15990, discount_percent: 9 },
          { description: 'Flete a obra', quantity: 1, unit_price: 4990 },
          { description: 'Malla acma C-92', quantity: 1, unit_price: 8990, discount_percent: 15 },
        ],
      }),
      {
        ...unpaid('49662.00'),
        subtotal: '41733.00',
        taxable_amount: '41733.00',
        exempt_amount: '0.00',
        discount_total: '0.00',
        tax_total: '7929.00',
        tax_rate: '19.00',
        global_discount: null,
        items: [
          { quantity: '2', unit_price: '15990.00', discount_percent: '9.00', discount_amount: '2878.00', exempt: false, line_total: '29102.00' },
          { quantity: '1', unit_price: '4990.00', discount_percent: null, discount_amount: '0.00', exempt: false, line_total: '4990.00' },
          { quantity: '1', unit_price: '8990.00', discount_percent: '15.00', discount_amount: '1349.00', exempt: false, line_total: '7641.00' },
        ],
      },
    );
  });

  t.test('line discount amount, up to the whole gross of the line', async (t) => {
    const { key } = await h.key(['*']);
    // Line 1: 3 × 12500 = 37500 − 2500 = 35000. Line 2: 3990 − 3990 = 0 (a discount may take the whole line).
    // taxable 35000; tax = 35000 × 0.19 = 6650; total 41650.
    await assertFigures(
      t,
      h,
      key,
      body({
        items: [
          { description: 'Saco de yeso 25 kg', quantity: 3, unit_price: 12500, discount_amount: 2500 },
          { description: 'Muestra de pintura', quantity: 1, unit_price: 3990, discount_amount: 3990 },
        ],
      }),
      {
        ...unpaid('41650.00'),
        subtotal: '35000.00',
        taxable_amount: '35000.00',
        exempt_amount: '0.00',
        discount_total: '0.00',
        tax_total: '6650.00',
        tax_rate: '19.00',
        global_discount: null,
        items: [
          { quantity: '3', unit_price: '12500.00', discount_percent: null, discount_amount: '2500.00', exempt: false, line_total: '35000.00' },
          { quantity: '1', unit_price: '3990.00', discount_percent: null, discount_amount: '3990.00', exempt: false, line_total: '0.00' },
        ],
      },
    );
  });

  t.test('an exempt line inside a taxable invoice', async (t) => {
    const { key } = await h.key(['*']);
    // taxable 250000, exempt 80000 (no IVA on it); tax = 250000 × 0.19 = 47500;
    // subtotal = 250000 + 80000 = 330000; total = 330000 + 47500 = 377500.
    await assertFigures(
      t,
      h,
      key,
      body({
        items: [
          { description: 'Asesoría técnica', quantity: 1, unit_price: 250000 },
          { description: 'Curso de capacitación', quantity: 1, unit_price: 80000, exempt: true },
        ],
      }),
      {
        ...unpaid('377500.00'),
        subtotal: '330000.00',
        taxable_amount: '250000.00',
        exempt_amount: '80000.00',
        discount_total: '0.00',
        tax_total: '47500.00',
        tax_rate: '19.00',
        global_discount: null,
        items: [
          { quantity: '1', unit_price: '250000.00', discount_percent: null, discount_amount: '0.00', exempt: false, line_total: '250000.00' },
          { quantity: '1', unit_price: '80000.00', discount_percent: null, discount_amount: '0.00', exempt: true, line_total: '80000.00' },
        ],
      },
    );
  });

  t.test('global discount 21 % applies to the taxable lines only, after their line discounts', async (t) => {
    const { key } = await h.key(['*']);
    // Line 1: 3 × 12350 = 37050. Line 2: 15000 − round(1500) = 13500. Line 3 exempt: 50000.
    // discount_total = round((37050 + 13500) × 21 / 100) = round(10615.5) = 10616 (half-up; the exempt
    //   50000 is not in the base: with it the discount would be 21 115.5).
    // taxable = 50550 − 10616 = 39934; tax = round(39934 × 0.19) = round(7587.46) = 7587;
    // subtotal = 39934 + 50000 = 89934; total = 89934 + 7587 = 97521.
    await assertFigures(
      t,
      h,
      key,
      body({
        items: [
          { description: 'Perfil metalcon 90 mm', quantity: 3, unit_price: 12350 },
          { description: 'Plancha OSB 11 mm', quantity: 1, unit_price: 15000, discount_percent: 10 },
          { description: 'Curso de montaje', quantity: 1, unit_price: 50000, exempt: true },
        ],
        global_discount: { percent: 21, description: 'Descuento cliente mayorista' },
      }),
      {
        ...unpaid('97521.00'),
        subtotal: '89934.00',
        taxable_amount: '39934.00',
        exempt_amount: '50000.00',
        discount_total: '10616.00',
        tax_total: '7587.00',
        tax_rate: '19.00',
        global_discount: { percent: '21.00', amount: null, description: 'Descuento cliente mayorista' },
        items: [
          { quantity: '3', unit_price: '12350.00', discount_percent: null, discount_amount: '0.00', exempt: false, line_total: '37050.00' },
          { quantity: '1', unit_price: '15000.00', discount_percent: '10.00', discount_amount: '1500.00', exempt: false, line_total: '13500.00' },
          { quantity: '1', unit_price: '50000.00', discount_percent: null, discount_amount: '0.00', exempt: true, line_total: '50000.00' },
        ],
      },
    );
  });

  t.test('global discount amount', async (t) => {
    const { key } = await h.key(['*']);
    // 2 × 45000 = 90000; taxable = 90000 − 5000 = 85000; tax = 85000 × 0.19 = 16150; total 101150.
    await assertFigures(
      t,
      h,
      key,
      body({
        items: [{ description: 'Arriendo de andamios (mes)', quantity: 2, unit_price: 45000 }],
        global_discount: { amount: 5000, description: 'Descuento por pronto pago' },
      }),
      {
        ...unpaid('101150.00'),
        subtotal: '85000.00',
        taxable_amount: '85000.00',
        exempt_amount: '0.00',
        discount_total: '5000.00',
        tax_total: '16150.00',
        tax_rate: '19.00',
        global_discount: { percent: null, amount: '5000.00', description: 'Descuento por pronto pago' },
        items: [{ quantity: '2', unit_price: '45000.00', discount_percent: null, discount_amount: '0.00', exempt: false, line_total: '90000.00' }],
      },
    );
  });

  t.test('a global amount may take all the taxable lines, never the exempt ones', async (t) => {
    const { key } = await h.key(['*']);
    // taxable 100000 − 100000 = 0, tax 0; the exempt 50000 stays: subtotal = total = 50000.
    await assertFigures(
      t,
      h,
      key,
      body({
        items: [
          { description: 'Equipo en comodato', quantity: 1, unit_price: 100000 },
          { description: 'Capacitación de uso', quantity: 1, unit_price: 50000, exempt: true },
        ],
        global_discount: { amount: 100000 },
      }),
      {
        ...unpaid('50000.00'),
        subtotal: '50000.00',
        taxable_amount: '0.00',
        exempt_amount: '50000.00',
        discount_total: '100000.00',
        tax_total: '0.00',
        tax_rate: '19.00',
        global_discount: { percent: null, amount: '100000.00', description: null },
        items: [
          { quantity: '1', unit_price: '100000.00', discount_percent: null, discount_amount: '0.00', exempt: false, line_total: '100000.00' },
          { quantity: '1', unit_price: '50000.00', discount_percent: null, discount_amount: '0.00', exempt: true, line_total: '50000.00' },
        ],
      },
    );
  });

  t.test('tax_inclusive with line and global discounts: taxable_amount = round(taxable gross / 1.19)', async (t) => {
    const { key } = await h.key(['*']);
    // Prices include IVA. Line 1: 31980 − round(2878.2) = 29102. Line 2: 11900 − 1900 = 10000.
    // Line 3 exempt: 20000 (no IVA inside it).
    // discount_total = round((29102 + 10000) × 5 / 100) = round(1955.1) = 1955.
    // taxable gross = 39102 − 1955 = 37147; taxable_amount = round(37147 / 1.19) = round(31215.966…) = 31216;
    // tax = 37147 − 31216 = 5931; subtotal = 31216 + 20000 = 51216; total = 51216 + 5931 = 57147,
    // which is what the buyer pays: 29102 + 10000 + 20000 − 1955.
    await assertFigures(
      t,
      h,
      key,
      body({
        tax_inclusive: true,
        items: [
          { description: 'Cemento especial 25 kg', quantity: 2, unit_price: 15990, discount_percent: 9 },
          { description: 'Taladro percutor', quantity: 1, unit_price: 11900, discount_amount: 1900 },
          { description: 'Curso de seguridad', quantity: 1, unit_price: 20000, exempt: true },
        ],
        global_discount: { percent: 5 },
      }),
      {
        ...unpaid('57147.00'),
        subtotal: '51216.00',
        taxable_amount: '31216.00',
        exempt_amount: '20000.00',
        discount_total: '1955.00',
        tax_total: '5931.00',
        tax_rate: '19.00',
        global_discount: { percent: '5.00', amount: null, description: null },
        items: [
          { quantity: '2', unit_price: '15990.00', discount_percent: '9.00', discount_amount: '2878.00', exempt: false, line_total: '29102.00' },
          { quantity: '1', unit_price: '11900.00', discount_percent: null, discount_amount: '1900.00', exempt: false, line_total: '10000.00' },
          { quantity: '1', unit_price: '20000.00', discount_percent: null, discount_amount: '0.00', exempt: true, line_total: '20000.00' },
        ],
      },
    );
  });

  t.test('is_tax_exempt: every line is exempt and the global discount applies to the exempt amount', async (t) => {
    const { key } = await h.key(['*']);
    // Line 1: 2 × 35000 = 70000. Line 2: 12500 − round(1250) = 11250. Σ = 81250.
    // discount_total = round(81250 × 15 / 100) = round(12187.5) = 12188 (half-up).
    // exempt_amount = 81250 − 12188 = 69062; no tax, tax_rate "0.00"; subtotal = total = 69062.
    await assertFigures(
      t,
      h,
      key,
      body({
        is_tax_exempt: true,
        items: [
          { description: 'Arancel curso de perfeccionamiento', quantity: 2, unit_price: 35000 },
          { description: 'Material de estudio', quantity: 1, unit_price: 12500, discount_percent: 10 },
        ],
        global_discount: { percent: 15, description: 'Beca empresa' },
      }),
      {
        ...unpaid('69062.00'),
        subtotal: '69062.00',
        taxable_amount: '0.00',
        exempt_amount: '69062.00',
        discount_total: '12188.00',
        tax_total: '0.00',
        tax_rate: '0.00',
        global_discount: { percent: '15.00', amount: null, description: 'Beca empresa' },
        items: [
          { quantity: '2', unit_price: '35000.00', discount_percent: null, discount_amount: '0.00', exempt: true, line_total: '70000.00' },
          { quantity: '1', unit_price: '12500.00', discount_percent: '10.00', discount_amount: '1250.00', exempt: true, line_total: '11250.00' },
        ],
      },
    );
  });

  t.test('USD: two decimals, half-up on a discount', async (t) => {
    const usdMerchant = await h.merchant({ base_currency: 'USD' });
    const { key } = await h.key(['*'], { merchantId: usdMerchant.id });
    // Line 1: 2 × 15.25 = 30.50; discount round(30.50 × 5 / 100) = round(1.525) = 1.53 (half-up; banker's
    //   gives 1.52, and a float 30.5 × 0.05 is 1.5250000000000001); total 28.97.
    // Line 2: 9.99 − 0.99 = 9.00.
    // discount_total = round((28.97 + 9.00) × 2.5 / 100) = round(0.94925) = 0.95;
    // taxable = 37.97 − 0.95 = 37.02; tax = round(37.02 × 0.19) = round(7.0338) = 7.03; total = 44.05.
    await assertFigures(
      t,
      h,
      key,
      body({
        items: [
          { description: 'Annual licence', quantity: 2, unit_price: 15.25, discount_percent: 5 },
          { description: 'Support', quantity: 1, unit_price: 9.99, discount_amount: 0.99 },
        ],
        global_discount: { percent: 2.5 },
      }),
      {
        ...unpaid('44.05'),
        subtotal: '37.02',
        taxable_amount: '37.02',
        exempt_amount: '0.00',
        discount_total: '0.95',
        tax_total: '7.03',
        tax_rate: '19.00',
        global_discount: { percent: '2.50', amount: null, description: null },
        items: [
          { quantity: '2', unit_price: '15.25', discount_percent: '5.00', discount_amount: '1.53', exempt: false, line_total: '28.97' },
          { quantity: '1', unit_price: '9.99', discount_percent: null, discount_amount: '0.99', exempt: false, line_total: '9.00' },
        ],
      },
    );
  });

  t.test('amount_due follows the discounted total: mark-paid takes it and leaves 0', async (t) => {
    const { key } = await h.key(['*']);
    // 2 × 15990 − 2878 = 29102; tax round(5529.38) = 5529; total 34631. The undiscounted total would be
    // 31980 + 6076 = 38056.
    const created = await h.api('POST', '/invoices', {
      key,
      body: body({ send_immediately: true, items: [{ description: 'Cemento especial 25 kg', quantity: 2, unit_price: 15990, discount_percent: 9 }] }),
    });
    t.equal(created.status, 201);
    const id = created.body.invoice_id;
    t.equal(created.body.total, '34631.00');
    const wrong = await h.api('POST', `/invoices/${id}/mark-paid`, { key, body: { payment_amount: 38056 } });
    assertValidationError(t, wrong, ['payment_amount'], { what: 'the undiscounted total is not the total' });
    const paid = await h.api('POST', `/invoices/${id}/mark-paid`, { key, body: { payment_method: 'transfer', payment_amount: 34631 } });
    t.equal(paid.status, 200, 'paid', { found: paid.body });
    const inv = (await h.api('GET', `/invoices/${id}`, { key })).body;
    t.match(inv, { status: 'paid', total: '34631.00', amount_paid: '34631.00', amount_due: '0.00', amount_credited: '0.00', amount_debited: '0.00' });
    const listed = (await h.api('GET', '/invoices?limit=100', { key })).body.data.find((i: any) => i.id === id);
    t.same(listed, inv, 'the list agrees after payment');
  });

  t.test('CLP amounts stay whole pesos: a discount amount with cents is refused or rounded, never kept', async (t) => {
    // §2: "a CLP amount is always whole pesos"; §17: "every amount is computed half-up to whole pesos".
    // The spec does not say whether such an amount is refused or rounded; it may not leak cents.
    const { key } = await h.key(['*']);
    for (const [what, b, path] of [
      ['items[0].discount_amount 1000.5', body({ items: [{ description: 'Perno', quantity: 1, unit_price: 10000, discount_amount: 1000.5 }] }), 'items[0].discount_amount'],
      ['global_discount.amount 500.5', body({ items: [{ description: 'Perno', quantity: 1, unit_price: 10000 }], global_discount: { amount: 500.5 } }), 'global_discount.amount'],
    ] as const) {
      const res = await h.api('POST', '/invoices', { key, body: b });
      if (res.status === 422) {
        t.same(errorPaths(res), [path], `${what}: refused naming ${path}`);
        continue;
      }
      t.equal(res.status, 201, `${what}: refused or created`);
      const inv = (await h.api('GET', `/invoices/${res.body.invoice_id}`, { key })).body;
      const amounts = [...AMOUNTS.map((k) => inv[k] as string), ...inv.items.flatMap((i: any) => [i.discount_amount, i.line_total]), inv.global_discount?.amount ?? '0.00'];
      t.same(
        amounts.filter((s) => !s.endsWith('.00')),
        [],
        `${what}: created, then every amount is whole pesos`,
      );
    }
  });
});

t.test('without discounts or exempt lines every figure is §2’s', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);
  const none = { discount_percent: null, discount_amount: '0.00', exempt: false };

  t.test('exclusive 2 × 5000: subtotal = taxable_amount, then paid: amount_due 0', async (t) => {
    // §2's example: subtotal 10000, tax 1900, total 11900.
    const inv = await assertFigures(t, h, key, body({ send_immediately: true }), {
      ...unpaid('11900.00'),
      subtotal: '10000.00',
      taxable_amount: '10000.00',
      exempt_amount: '0.00',
      discount_total: '0.00',
      tax_total: '1900.00',
      tax_rate: '19.00',
      global_discount: null,
      items: [{ quantity: '2', unit_price: '5000.00', ...none, line_total: '10000.00' }],
    });
    t.same(inv.references, [], 'no references');
    const paid = await h.api('POST', `/invoices/${inv.id}/mark-paid`, { key, body: {} });
    t.equal(paid.status, 200);
    const after = (await h.api('GET', `/invoices/${inv.id}`, { key })).body;
    t.same(figures(after), { ...figures(inv), amount_paid: '11900.00', amount_due: '0.00' }, 'only amount_paid and amount_due moved');
    const listed = (await h.api('GET', '/invoices?limit=100', { key })).body.data.find((i: any) => i.id === inv.id);
    t.same(listed, after, 'the list agrees after payment');
  });

  t.test('inclusive 1 × 11900: subtotal = taxable_amount = round(11900 / 1.19) = 10000', async (t) => {
    await assertFigures(t, h, key, body({ tax_inclusive: true, items: [{ description: 'Servicio', quantity: 1, unit_price: 11900 }] }), {
      ...unpaid('11900.00'),
      subtotal: '10000.00',
      taxable_amount: '10000.00',
      exempt_amount: '0.00',
      discount_total: '0.00',
      tax_total: '1900.00',
      tax_rate: '19.00',
      global_discount: null,
      items: [{ quantity: '1', unit_price: '11900.00', ...none, line_total: '11900.00' }],
    });
  });

  t.test('lines rounded one by one: 1.5 × 3333 = 4999.5 → 5000', async (t) => {
    // 5000 + 1 × 1 = 5001; tax round(5001 × 0.19) = round(950.19) = 950; total 5951.
    await assertFigures(
      t,
      h,
      key,
      body({
        items: [
          { description: 'Tornillos (kg)', quantity: 1.5, unit_price: 3333 },
          { description: 'Arandela', quantity: 1, unit_price: 1 },
        ],
      }),
      {
        ...unpaid('5951.00'),
        subtotal: '5001.00',
        taxable_amount: '5001.00',
        exempt_amount: '0.00',
        discount_total: '0.00',
        tax_total: '950.00',
        tax_rate: '19.00',
        global_discount: null,
        items: [
          { quantity: '1.5', unit_price: '3333.00', ...none, line_total: '5000.00' },
          { quantity: '1', unit_price: '1.00', ...none, line_total: '1.00' },
        ],
      },
    );
  });

  t.test('is_tax_exempt 3 × 1000: the subtotal is all exempt', async (t) => {
    await assertFigures(t, h, key, body({ is_tax_exempt: true, items: [{ description: 'Exento', quantity: 3, unit_price: 1000 }] }), {
      ...unpaid('3000.00'),
      subtotal: '3000.00',
      taxable_amount: '0.00',
      exempt_amount: '3000.00',
      discount_total: '0.00',
      tax_total: '0.00',
      tax_rate: '0.00',
      global_discount: null,
      items: [{ quantity: '3', unit_price: '1000.00', ...none, exempt: true, line_total: '3000.00' }],
    });
  });
});

t.test('every refused input is a 422 naming the field and stating the rule; nothing is created', async (t) => {
  const h = await testApp(t);
  const { key, merchantId } = await h.key(['*']);
  const invoices = await count(h, 'invoices', merchantId);
  const clients = await count(h, 'clients', merchantId);
  const line = (extra: Record<string, unknown> = {}) => ({ description: 'Cemento especial 25 kg', quantity: 2, unit_price: 15990, ...extra });
  const ref = (extra: Record<string, unknown> = {}) => ({ type: '801', folio: '4500012345', ...extra });
  // "Both" and "neither" may name the global discount or one of its two fields: either is the field at fault.
  const eitherGlobal = /^global_discount(\.percent|\.amount)?$/;
  const cases: [what: string, body: Record<string, unknown>, path: string | RegExp, rule: RegExp[]][] = [
    ['discount_percent 0', body({ items: [line({ discount_percent: 0 })] }), 'items[0].discount_percent', [/\b0\b/, /\b100\b/]],
    ['discount_percent 100', body({ items: [line({ discount_percent: 100 })] }), 'items[0].discount_percent', [/\b0\b/, /\b100\b/]],
    ['discount_percent 9.999', body({ items: [line({ discount_percent: 9.999 })] }), 'items[0].discount_percent', [/2 decimals/]],
    ['discount_percent as a string', body({ items: [line({ discount_percent: '9' })] }), 'items[0].discount_percent', [/number/]],
    ['discount_amount 0', body({ items: [line({ discount_amount: 0 })] }), 'items[0].discount_amount', [/\b0\b/]],
    ['both discounts on a line', body({ items: [line({ discount_percent: 9, discount_amount: 2878 })] }), 'items[0].discount_amount', [/discount_percent/, /discount_amount/]],
    // The gross of the second line is 2 × 15990 = 31980: one peso more is refused.
    ['discount_amount above the gross', body({ items: [line(), line({ discount_amount: 31981 })] }), 'items[1].discount_amount', [/31980/]],
    ['exempt as a string', body({ items: [line({ exempt: 'true' })] }), 'items[0].exempt', [/^must be true or false$/]],
    ['global discount with percent and amount', body({ items: [line()], global_discount: { percent: 10, amount: 1000 } }), eitherGlobal, [/percent/, /amount/]],
    ['global discount with neither', body({ items: [line()], global_discount: { description: 'Descuento' } }), eitherGlobal, [/percent/, /amount/]],
    ['global percent 100', body({ items: [line()], global_discount: { percent: 100 } }), 'global_discount.percent', [/\b100\b/]],
    ['global description of 46 characters', body({ items: [line()], global_discount: { percent: 5, description: 'D'.repeat(46) } }), 'global_discount.description', [/45/]],
    // The taxable line is 100000; the exempt 50000 is not what a global discount applies to.
    [
      'global amount above the taxable lines',
      body({ items: [line({ quantity: 1, unit_price: 100000 }), line({ quantity: 1, unit_price: 50000, exempt: true })], global_discount: { amount: 100001 } }),
      'global_discount.amount',
      [/100000/],
    ],
    [
      'global amount above the lines of an exempt invoice',
      body({ is_tax_exempt: true, items: [line({ quantity: 1, unit_price: 80000 })], global_discount: { amount: 80001 } }),
      'global_discount.amount',
      [/80000/],
    ],
    [
      'global discount with every line exempt',
      body({ items: [line({ exempt: true }), line({ exempt: true })], global_discount: { percent: 10 } }),
      'global_discount',
      [/taxable/],
    ],
    ['41 references', body({ references: Array.from({ length: 41 }, (_, i) => ref({ folio: String(4500012345 + i) })) }), 'references', [/\b40\b/]],
    ['reference type XYZ', body({ references: [ref({ type: 'XYZ' })] }), 'references[0].type', [/801/, /802/, /803/, /HES/, /SET/]],
    ['reference 801 without folio', body({ references: [{ type: 801, date: '2026-03-02' }] }), 'references[0].folio', [/required/]],
    ['reference folio of 19 characters', body({ references: [ref({ folio: '4'.repeat(19) })] }), 'references[0].folio', [/18/]],
    ['reference folio with a space', body({ references: [ref({ folio: 'OC 4500' })] }), 'references[0].folio', [/letters, digits or dashes/]],
    ['reference date 2026-02-30', body({ references: [ref({ date: '2026-02-30' })] }), 'references[0].date', [/date/]],
    ['reference reason of 91 characters', body({ references: [ref({ reason: 'r'.repeat(91) })] }), 'references[0].reason', [/90/]],
    // The SII's GiroRecep is 40 characters: the full giro is 48, its first 41 are one too many.
    ['client giro of 41 characters', body({ client: { name: 'Constructora Andes SpA', email: 'giro41@andes.cl', giro: 'Venta al por mayor de materiales de const' } }), 'client.giro', [/40/]],
    // "San Francisco de Mostazal" is 25 characters; CmnaRecep takes 20.
    ['client comuna of 21 characters', body({ client: { name: 'Ferretería Mostazal', email: 'comuna21@mostazal.cl', comuna: 'San Francisco de Mostazal'.slice(0, 21) } }), 'client.comuna', [/20/]],
    ['client ciudad of 21 characters', body({ client: { name: 'Ferretería Mostazal', email: 'ciudad21@mostazal.cl', ciudad: 'San Francisco de Mostazal'.slice(0, 21) } }), 'client.ciudad', [/20/]],
  ];
  for (const [what, b, path, rule] of cases) {
    const res = await h.api('POST', '/invoices', { key, body: b });
    const named = errorPaths(res);
    const paths = typeof path === 'string' ? [path] : named.length === 1 && path.test(named[0]!) ? named : [String(path)];
    assertValidationError(t, res, paths, { what });
    const messages = ((res.body?.details?.errors ?? []) as { message: string }[]).map((e) => e.message).join(' | ');
    for (const r of rule) t.match(messages, r, `${what}: the message states the rule (${r})`);
  }
  t.equal(await count(h, 'invoices', merchantId), invoices, 'no invoice was created');
  t.equal(await count(h, 'clients', merchantId), clients, 'no client was created');
});

t.test('bulk: each invoice is computed and refused on its own', async (t) => {
  const h = await testApp(t);
  const { key, merchantId } = await h.key(['*']);
  const res = await h.api('POST', '/invoices/bulk', {
    key,
    body: {
      invoices: [
        body({ items: [{ description: 'Cemento especial 25 kg', quantity: 2, unit_price: 15990, discount_percent: 9 }] }),
        body({ items: [{ description: 'Cemento especial 25 kg', quantity: 2, unit_price: 15990, discount_amount: 31981 }] }),
      ],
    },
  });
  t.equal(res.status, 200);
  t.match(res.body, { total: 2, succeeded: 1, failed: 1 });
  // 31980 − 2878 = 29102 + round(5529.38) = 34631.
  t.match(res.body.results[0], { success: true, invoice: { total: '34631.00' } });
  t.match(res.body.results[1], { success: false, error: 'validation_error' });
  t.same(
    (res.body.results[1].details.errors as { path: string }[]).map((e) => e.path),
    ['items[0].discount_amount'],
    'the failed item names its line',
  );
  t.equal(await count(h, 'invoices', merchantId), 1);
});

t.test('references come back resolved', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);

  t.test('types as strings, SET folio "0", dates default to the issue date', async (t) => {
    const res = await h.api('POST', '/invoices', {
      key,
      body: body({
        issue_date: '2026-03-10',
        due_date: '2026-04-09',
        references: [
          { type: 801, folio: '4500012345', date: '2026-03-02', reason: 'Orden de compra del cliente' },
          { type: 'HES', folio: '1000234567' },
          { type: 'SET', reason: 'CASO 4329507-1' },
          { type: 33, folio: 1523, date: '2026-02-27' },
          { type: '802', folio: 'NP-2026-0042' },
        ],
      }),
    });
    t.equal(res.status, 201, 'created', { found: res.body });
    const inv = await readBack(t, h, key, res.body.invoice_id);
    t.same(inv.references, [
      { type: '801', folio: '4500012345', date: '2026-03-02', reason: 'Orden de compra del cliente' },
      { type: 'HES', folio: '1000234567', date: '2026-03-10', reason: null },
      { type: 'SET', folio: '0', date: '2026-03-10', reason: 'CASO 4329507-1' },
      { type: '33', folio: '1523', date: '2026-02-27', reason: null },
      { type: '802', folio: 'NP-2026-0042', date: '2026-03-10', reason: null },
    ]);
  });

  t.test('without issue_date a reference takes today, the invoice’s issue date', async (t) => {
    const res = await h.api('POST', '/invoices', { key, body: body({ references: [{ type: 'HEM', folio: '7000001234' }] }) });
    t.equal(res.status, 201);
    const inv = await readBack(t, h, key, res.body.invoice_id);
    t.same(inv.references, [{ type: 'HEM', folio: '7000001234', date: inv.issue_date, reason: null }]);
  });

  t.test('40 references, the SII’s limit, are kept in their order', async (t) => {
    const refs = Array.from({ length: 40 }, (_, i) => ({ type: 'HES', folio: String(1000234567 + i), date: '2026-03-01', reason: 'r'.repeat(90) }));
    const res = await h.api('POST', '/invoices', { key, body: body({ issue_date: '2026-03-10', due_date: '2026-04-09', references: refs }) });
    t.equal(res.status, 201, 'created', { found: res.body });
    const inv = await readBack(t, h, key, res.body.invoice_id);
    t.same(inv.references, refs);
  });
});

t.test('clients: giro, comuna and ciudad', async (t) => {
  const h = await testApp(t);
  const { key, merchantId } = await h.key(['*']);
  // The 40 characters the SII takes of "Venta al por mayor de materiales de construcción".
  const giro40 = 'Venta al por mayor de materiales de cons';
  t.equal(giro40.length, 40);

  t.test('create, GET, PATCH one, PATCH null clears', async (t) => {
    const created = await h.api('POST', '/clients', {
      key,
      body: {
        name: 'Constructora Los Aromos SpA',
        email: 'facturas@losaromos.cl',
        rut: '77.123.456-9',
        address: 'Av. Libertador Bernardo O’Higgins 3470',
        giro: giro40,
        comuna: 'Estación Central',
        ciudad: 'Santiago',
      },
    });
    t.equal(created.status, 201, 'created', { found: created.body });
    t.match(created.body, { rut: '77123456-9', giro: giro40, comuna: 'Estación Central', ciudad: 'Santiago' });
    const id = created.body.id;
    t.same((await h.api('GET', `/clients/${id}`, { key })).body, created.body, 'GET shows them');

    const moved = await h.api('PATCH', `/clients/${id}`, { key, body: { comuna: 'Ñuñoa' } });
    t.equal(moved.status, 200);
    t.match(moved.body, { giro: giro40, comuna: 'Ñuñoa', ciudad: 'Santiago', address: 'Av. Libertador Bernardo O’Higgins 3470' }, 'only comuna changed');

    const cleared = await h.api('PATCH', `/clients/${id}`, { key, body: { giro: null, ciudad: null } });
    t.equal(cleared.status, 200);
    t.match(cleared.body, { giro: null, comuna: 'Ñuñoa', ciudad: null }, 'null clears giro and ciudad, comuna stays');
    t.same((await h.api('GET', `/clients/${id}`, { key })).body, cleared.body, 'GET agrees');

    // Accented letters count as one character each: a 40-character giro with four of them fits.
    const accented = 'Asesorías y consultorías en construcción';
    t.equal(accented.length, 40);
    const again = await h.api('PATCH', `/clients/${id}`, { key, body: { giro: accented } });
    t.equal(again.status, 200);
    t.equal(again.body.giro, accented);
  });

  t.test('POST/PATCH /clients refuse what the SII would', async (t) => {
    const before = await count(h, 'clients', merchantId);
    const tooLong = await h.api('POST', '/clients', {
      key,
      body: { name: 'Ferretería Mostazal', email: 'ventas@mostazal.cl', giro: `${giro40}t`, comuna: 'San Francisco de Mostazal', ciudad: 'San Francisco de Mostazal' },
    });
    assertValidationError(t, tooLong, ['giro', 'comuna', 'ciudad']);
    t.equal(await count(h, 'clients', merchantId), before, 'nothing created');

    const c = await h.api('POST', '/clients', { key, body: { name: 'Ferretería Mostazal', email: 'ventas@mostazal.cl', comuna: 'Mostazal' } });
    t.equal(c.status, 201);
    const bad = await h.api('PATCH', `/clients/${c.body.id}`, { key, body: { comuna: 'San Francisco de Mostazal' } });
    assertValidationError(t, bad, ['comuna']);
    t.match(bad.body.details.errors[0].message, /20/);
    t.equal((await h.api('GET', `/clients/${c.body.id}`, { key })).body.comuna, 'Mostazal', 'unchanged');
  });

  t.test('the invoice keeps the client as it was', async (t) => {
    // A new client through POST /invoices: created with the three fields, snapshot on the invoice.
    const first = await h.api('POST', '/invoices', {
      key,
      body: body({
        client: {
          name: 'Comercial Ñuñoa Ltda',
          email: 'pagos@comercialnunoa.cl',
          rut: '77.123.456-9',
          address: 'Av. Irarrázaval 2401',
          giro: giro40,
          comuna: 'Ñuñoa',
          ciudad: 'Santiago',
        },
      }),
    });
    t.equal(first.status, 201, 'created', { found: first.body });
    const clientId = first.body.client_id;
    const snapshot = {
      id: clientId,
      name: 'Comercial Ñuñoa Ltda',
      email: 'pagos@comercialnunoa.cl',
      phone: null,
      rut: '77123456-9',
      address: 'Av. Irarrázaval 2401',
      giro: giro40,
      comuna: 'Ñuñoa',
      ciudad: 'Santiago',
    };
    t.same((await readBack(t, h, key, first.body.invoice_id)).client, snapshot);
    t.match((await h.api('GET', `/clients/${clientId}`, { key })).body, { giro: giro40, comuna: 'Ñuñoa', ciudad: 'Santiago' }, 'the client has them');

    const patched = await h.api('PATCH', `/clients/${clientId}`, {
      key,
      body: { address: 'Av. Libertador Bernardo O’Higgins 3470', comuna: 'Estación Central', giro: null },
    });
    t.equal(patched.status, 200);
    t.same((await readBack(t, h, key, first.body.invoice_id)).client, snapshot, 'GET, list and event keep the snapshot');

    // The next invoice takes the client as it is now (and ignores what the request says of a known client).
    const second = await h.api('POST', '/invoices', {
      key,
      body: body({ client: { name: 'otro', email: 'PAGOS@comercialnunoa.cl', giro: 'Otro giro', comuna: 'Providencia' } }),
    });
    t.equal(second.body.client_id, clientId);
    t.same((await readBack(t, h, key, second.body.invoice_id)).client, {
      ...snapshot,
      address: 'Av. Libertador Bernardo O’Higgins 3470',
      giro: null,
      comuna: 'Estación Central',
    });
  });
});
