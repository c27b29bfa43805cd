// Money arithmetic of docs/decisions.md §2: unit tests of src/money.ts, the same table through the API,
// and a fast-check property against an independent scaled-integer reference.
import t from 'tap';
import fc from 'fast-check';
import {
  computeTotals,
  Decimal,
  decimalPlaces,
  wireAmount,
  wireExchangeRate,
  wireQuantity,
  wireRate,
  wireUnitPrice,
  isCurrency,
  precision,
  roundMoney,
  type Currency,
} from '../src/money.js';
import { setRate } from '../src/rates/service.js';
import { clock, dateInZone } from '../src/clock.js';
import { testApp, type TestApp } from './helpers/app.js';

type Totals = ReturnType<typeof computeTotals>;
const str = (x: Totals) => ({
  lines: x.lines.map((l) => l.total.toFixed()),
  subtotal: x.subtotal.toFixed(),
  tax: x.taxTotal.toFixed(),
  total: x.total.toFixed(),
  rate: x.taxRate.toFixed(),
});

const excl = { taxInclusive: false, taxExempt: false };
const incl = { taxInclusive: true, taxExempt: false };

t.test('unit: the arithmetic table of docs/decisions.md §2', async (t) => {
  t.test('exclusive CLP 2 × 5000 at 19 %', async (t) => {
    t.same(str(computeTotals([{ quantity: 2, unit_price: 5000 }], { currency: 'CLP', taxRate: 19, ...excl })), {
      lines: ['10000'],
      subtotal: '10000',
      tax: '1900',
      total: '11900',
      rate: '19',
    });
  });
  t.test('inclusive CLP 1 × 11900 at 19 %', async (t) => {
    t.same(str(computeTotals([{ quantity: 1, unit_price: 11900 }], { currency: 'CLP', taxRate: 19, ...incl })), {
      lines: ['11900'],
      subtotal: '10000',
      tax: '1900',
      total: '11900',
      rate: '19',
    });
  });
  t.test('exempt: no tax, rate 0, total = subtotal = Σ lines', async (t) => {
    for (const taxInclusive of [false, true]) {
      const r = computeTotals(
        [
          { quantity: 2, unit_price: 5000 },
          { quantity: 1, unit_price: 333 },
        ],
        { currency: 'CLP', taxRate: 19, taxInclusive, taxExempt: true },
      );
      t.same(str(r), { lines: ['10000', '333'], subtotal: '10333', tax: '0', total: '10333', rate: '0' });
    }
  });
  t.test('several lines are rounded one by one, then summed', async (t) => {
    // 0.5 × 5 = 2.5 → 3 twice (6), not round(5) = 5.
    const r = computeTotals(
      [
        { quantity: 0.5, unit_price: 5 },
        { quantity: 0.5, unit_price: 5 },
      ],
      { currency: 'CLP', taxRate: 0, ...excl },
    );
    t.same(str(r).lines, ['3', '3']);
    t.equal(str(r).subtotal, '6');
  });
});

t.test('unit: half-up exactly at the boundary', async (t) => {
  const line = (q: string | number, p: string | number, currency: Currency) =>
    computeTotals([{ quantity: q, unit_price: p }], { currency, taxRate: 0, ...excl }).lines[0]!.total.toFixed();
  t.equal(line(1, 0.005, 'USD'), '0.01', 'USD 0.005 → 0.01');
  t.equal(line(0.5, 0.01, 'USD'), '0.01', 'USD 0.5 × 0.01 = 0.005 → 0.01');
  t.equal(line(1, 1.005, 'USD'), '1.01', 'USD 1.005 → 1.01 (a float would give 1.00)');
  t.equal(line(3, 0.335, 'USD'), '1.01', 'USD 3 × 0.335 = 1.005 → 1.01');
  t.equal(line(1, 0.0049, 'USD'), '0', 'USD 0.0049 → 0.00');
  t.equal(line(0.5, 5, 'CLP'), '3', 'CLP 2.5 → 3');
  t.equal(line(1, 2.5, 'CLP'), '3', 'CLP line 2.5 → 3');
  t.equal(line(1, 3.5, 'CLP'), '4', 'CLP 3.5 → 4 (not banker’s 4/2 alternation)');
  t.equal(line(1, 4.5, 'CLP'), '5', 'CLP 4.5 → 5 (banker’s rounding would give 4)');
  t.equal(line(1, 2.4999, 'CLP'), '2', 'CLP 2.4999 → 2');
  t.equal(line(0.5, 0.0001, 'CLF'), '0.0001', 'CLF 0.00005 → 0.0001');
  t.equal(line(1, 3.5, 'CLF'), '3.5', 'CLF keeps 4 decimals');
  t.equal(line(0.1, 0.3, 'USD'), '0.03', '0.1 × 0.3 without float noise');

  // Tax rounding.
  const tax = (p: number, rate: number, currency: Currency) =>
    computeTotals([{ quantity: 1, unit_price: p }], { currency, taxRate: rate, ...excl }).taxTotal.toFixed();
  t.equal(tax(50, 19, 'CLP'), '10', 'CLP 50 × 19 % = 9.5 → 10');
  t.equal(tax(150, 19, 'CLP'), '29', 'CLP 150 × 19 % = 28.5 → 29');
  t.equal(tax(0.5, 19, 'USD'), '0.1', 'USD 0.50 × 19 % = 0.095 → 0.10');
  t.equal(tax(10, 0.05, 'USD'), '0.01', 'USD 10 × 0.05 % = 0.005 → 0.01');

  // Inclusive extraction: subtotal = round(total / 1.19).
  const inc = (p: number, rate: number, currency: Currency) =>
    str(computeTotals([{ quantity: 1, unit_price: p }], { currency, taxRate: rate, ...incl }));
  t.same(inc(100, 19, 'CLP'), { lines: ['100'], subtotal: '84', tax: '16', total: '100', rate: '19' });
  // 119.5 / 1.195 = 100 exactly; 1.195 with rate 19.5 %.
  t.same(inc(119.5, 19.5, 'USD'), { lines: ['119.5'], subtotal: '100', tax: '19.5', total: '119.5', rate: '19.5' });
  // 10.5 / 1.05 = 10: tax 0.5; 1 / 1.05 = 0.952380... → 0.95, tax 0.05.
  t.same(inc(1, 5, 'USD'), { lines: ['1'], subtotal: '0.95', tax: '0.05', total: '1', rate: '5' });
  // Boundary: 2.5 / (1 + 0/100) at CLP is a whole-peso line already (3) → subtotal 3.
  t.same(inc(2.5, 0, 'CLP'), { lines: ['3'], subtotal: '3', tax: '0', total: '3', rate: '0' });
  // 0.01 USD at 100 %: 0.005 → 0.01 subtotal, tax 0.
  t.same(inc(0.01, 100, 'USD'), { lines: ['0.01'], subtotal: '0.01', tax: '0', total: '0.01', rate: '100' });

  t.equal(roundMoney('0.125', 'USD').toFixed(), '0.13');
  t.equal(roundMoney('0.00005', 'CLF').toFixed(), '0.0001');
  t.equal(roundMoney('1999.5', 'CLP').toFixed(), '2000');
});

t.test('unit: wire formats', async (t) => {
  t.equal(wireAmount('11900', 'CLP'), '11900.00', 'CLP is whole pesos printed with two decimals');
  t.equal(wireAmount('0', 'CLP'), '0.00');
  t.equal(wireAmount('119', 'USD'), '119.00');
  t.equal(wireAmount('0.1', 'USD'), '0.10');
  t.equal(wireAmount('3.5', 'CLF'), '3.5000');
  t.equal(wireAmount('0.0001', 'CLF'), '0.0001');
  t.equal(wireAmount('1000000000000', 'EUR'), '1000000000000.00', 'no exponent notation');
  t.equal(wireQuantity('2'), '2');
  t.equal(wireQuantity('2.0000'), '2', 'trailing zeros of a numeric column are dropped');
  t.equal(wireQuantity('1.50'), '1.5');
  t.equal(wireQuantity('0.0001'), '0.0001');
  t.equal(wireQuantity('1000000'), '1000000');
  t.equal(wireRate('19'), '19.00');
  t.equal(wireRate('0'), '0.00');
  t.equal(wireRate('12.5'), '12.50');
  t.equal(wireExchangeRate('950.25'), '950.25');
  t.equal(wireExchangeRate('950.2500000'), '950.25');
  t.equal(wireExchangeRate('950.1234564'), '950.123456');
  t.equal(wireExchangeRate('950.1234565'), '950.123457', 'half-up at six decimals');
  t.equal(wireExchangeRate('0.000001'), '0.000001');
  t.equal(wireExchangeRate('39000'), '39000');
  t.equal(wireUnitPrice('5000', 'CLP'), '5000.00');
  t.equal(wireUnitPrice('0.1234', 'USD'), '0.1234', 'a unit price keeps its 4 decimals');
  t.equal(wireUnitPrice('3.5', 'CLF'), '3.5000');
  t.equal(decimalPlaces(1.0001), 4);
  t.equal(decimalPlaces(1.00001), 5);
  t.equal(decimalPlaces(1e12), 0);
  t.equal(decimalPlaces(0.1 + 0.2), 17, 'a float sum is not silently accepted as 2 decimals');
  for (const c of ['CLP', 'CLF', 'USD', 'EUR', 'GBP', 'ARS', 'BRL', 'COP', 'MXN', 'PEN']) t.ok(isCurrency(c), c);
  for (const c of ['XYZ', 'usd', '', 'toString', 'constructor', '__proto__']) t.notOk(isCurrency(c), JSON.stringify(c));
  t.equal(precision('CLP'), 0);
  t.equal(precision('CLF'), 4);
  t.equal(precision('USD'), 2);
});

t.test('unit: wire formats of database text agree with Decimal, digit for digit', async (t) => {
  // Postgres writes numeric as plain digits; those are formatted as strings, the rest by Decimal.
  const viaDecimal = {
    amount: (v: string, c: string) => new Decimal(v).toFixed(c === 'CLF' ? 4 : 2),
    unitPrice: (v: string, c: string) => {
      const d = new Decimal(v);
      return d.toFixed(Math.max(c === 'CLF' ? 4 : 2, d.decimalPlaces() ?? 0));
    },
    quantity: (v: string) => new Decimal(v).toFixed(),
    rate: (v: string) => new Decimal(v).toFixed(2),
    exchangeRate: (v: string) => new Decimal(new Decimal(v).toFixed(6)).toFixed(),
  };
  const agree = (v: string, c: string) =>
    wireAmount(v, c) === viaDecimal.amount(v, c) &&
    wireUnitPrice(v, c) === viaDecimal.unitPrice(v, c) &&
    wireQuantity(v) === viaDecimal.quantity(v) &&
    wireRate(v) === viaDecimal.rate(v) &&
    wireExchangeRate(v) === viaDecimal.exchangeRate(v);
  // Digits biased to 0, 4, 5 and 9, where rounding and carries happen.
  const digits = (max: number) => fc.array(fc.constantFrom('0', '4', '5', '9', '1', '7'), { minLength: 1, maxLength: max }).map((d) => d.join(''));
  const plain = fc.tuple(digits(14), fc.option(digits(10), { nil: undefined })).map(([i, f]) => (f === undefined ? i : `${i}.${f}`));
  fc.assert(fc.property(plain, fc.constantFrom('CLP', 'CLF', 'USD'), agree), { numRuns: 5000 });
  for (const v of ['0', '0.0', '007', '0.005', '0.995', '9.99995', '99.995', '999999.9999995', '1.00000050', '0.0000005']) {
    t.ok(agree(v, 'USD') && agree(v, 'CLF'), v);
  }
  // Not database text: still exact, through Decimal.
  t.equal(wireAmount(1e21, 'USD'), '1000000000000000000000.00');
  t.equal(wireAmount('-1.005', 'USD'), '-1.01');
  t.equal(wireQuantity('1e-7'), '0.0000001');
  t.equal(wireUnitPrice(0.5, 'CLP'), '0.50');
});

// ---------------------------------------------------------------------------------------------
// Independent reference: every value is a BigInt scaled by 10^4 (inputs) or 10^p (money).

const P: Record<Currency, number> = { CLP: 0, CLF: 4, USD: 2, EUR: 2, GBP: 2, ARS: 2, BRL: 2, COP: 2, MXN: 2, PEN: 2 };
const pow10 = (n: number) => 10n ** BigInt(n);
/** Half-up of num/den for num, den ≥ 0. */
const divHalfUp = (num: bigint, den: bigint) => (2n * num + den) / (2n * den);
/** Scaled integer → plain decimal string with exactly `scale` decimals. */
function fixed(v: bigint, scale: number, digits: number): string {
  // v has `scale` decimals; print with `digits` decimals (digits ≥ scale).
  const w = v * pow10(digits - scale);
  const s = w.toString().padStart(digits + 1, '0');
  return digits === 0 ? s : `${s.slice(0, -digits)}.${s.slice(-digits)}`;
}
/** A scaled-by-10^4 integer as the shortest decimal string. */
function dec4(v: bigint): string {
  const s = fixed(v, 4, 4).replace(/\.?0+$/, '');
  return s === '' ? '0' : s;
}

interface RefItem {
  q: bigint; // × 10^4
  p: bigint; // × 10^4
}
function reference(items: RefItem[], currency: Currency, rate: bigint /* × 100 */, mode: 'excl' | 'incl' | 'exempt') {
  const pr = P[currency];
  const lines = items.map((i) => divHalfUp(i.q * i.p, pow10(8 - pr)));
  const sum = lines.reduce((a, b) => a + b, 0n);
  let subtotal: bigint;
  let tax: bigint;
  let total: bigint;
  if (mode === 'exempt') {
    subtotal = sum;
    tax = 0n;
    total = sum;
  } else if (mode === 'excl') {
    subtotal = sum;
    tax = divHalfUp(sum * rate, 10000n);
    total = sum + tax;
  } else {
    total = sum;
    subtotal = divHalfUp(sum * 10000n, 10000n + rate);
    tax = total - subtotal;
  }
  const wire = pr === 4 ? 4 : 2;
  return {
    lines: lines.map((l) => fixed(l, pr, wire)),
    subtotal: fixed(subtotal, pr, wire),
    tax_total: fixed(tax, pr, wire),
    total: fixed(total, pr, wire),
    raw: { lines, subtotal, tax, total },
  };
}

const currencyArb = fc.constantFrom<Currency>('CLP', 'CLF', 'USD', 'EUR');
const modeArb = fc.constantFrom<'excl' | 'incl' | 'exempt'>('excl', 'incl', 'exempt');
const rateArb = fc.oneof(fc.constant(1900n), fc.constant(0n), fc.constant(10000n), fc.bigInt({ min: 0n, max: 10000n }));

t.test('property (unit): totals add up at the currency precision and match the reference', async (t) => {
  const itemArb = fc.record({
    q: fc.oneof(fc.bigInt({ min: 1n, max: 100000n }), fc.bigInt({ min: 1n, max: 10_000_000_000n })),
    p: fc.oneof(fc.bigInt({ min: 0n, max: 1_000_000_000n }), fc.bigInt({ min: 0n, max: 10_000_000_000_000_000n })),
  });
  fc.assert(
    fc.property(fc.array(itemArb, { minLength: 1, maxLength: 8 }), currencyArb, rateArb, modeArb, (items, currency, rate, mode) => {
      const got = computeTotals(
        items.map((i) => ({ quantity: dec4(i.q), unit_price: dec4(i.p) })),
        { currency, taxRate: dec4(rate * 100n), taxInclusive: mode === 'incl', taxExempt: mode === 'exempt' },
      );
      const ref = reference(items, currency, rate, mode);
      const pr = P[currency];
      for (const v of [got.subtotal, got.taxTotal, got.total, ...got.lines.map((l) => l.total)]) {
        if ((v.decimalPlaces() ?? 0) > pr) return false;
      }
      if (mode === 'incl') {
        if (!got.subtotal.plus(got.taxTotal).eq(got.total)) return false;
      } else if (!got.total.eq(got.subtotal.plus(got.taxTotal))) return false;
      return (
        wireAmount(got.subtotal, currency) === ref.subtotal &&
        wireAmount(got.taxTotal, currency) === ref.tax_total &&
        wireAmount(got.total, currency) === ref.total &&
        got.lines.every((l, i) => wireAmount(l.total, currency) === ref.lines[i])
      );
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 random invoices agree with the scaled-integer reference');
});

// ---------------------------------------------------------------------------------------------
// Through the API.

const today = () => dateInZone(clock.now(), 'America/Santiago');
let seq = 0;
function invoiceBody(extra: Record<string, unknown> = {}) {
  seq += 1;
  return {
    client: { name: `Cliente ${seq}`, email: `money${seq}@example.cl` },
    due_date: '2099-12-31',
    ...extra,
  };
}

async function createAndGet(h: TestApp, key: string, body: Record<string, unknown>) {
  const created = await h.api('POST', '/invoices', { key, body });
  if (created.status !== 201) throw new Error(`create failed ${created.status}: ${created.raw}`);
  const got = await h.api('GET', `/invoices/${created.body.invoice_id}`, { key });
  return { created: created.body, inv: got.body };
}

t.test('through the API', async (t) => {
  const h = await testApp(t);
  const clp = await h.key(['*']);
  const usdMerchant = await h.merchant({ base_currency: 'USD' });
  const usd = await h.key(['*'], { merchantId: usdMerchant.id });

  t.test('exclusive CLP 2 × 5000 at 19 %', async (t) => {
    const { created, inv } = await createAndGet(h, clp.key, invoiceBody({ items: [{ description: 'Servicio', quantity: 2, unit_price: 5000 }] }));
    t.equal(created.total, '11900.00');
    t.match(inv, {
      currency: 'CLP',
      tax_rate: '19.00',
      subtotal: '10000.00',
      tax_total: '1900.00',
      total: '11900.00',
      amount_paid: '0.00',
      tax_inclusive: false,
      is_tax_exempt: false,
      items: [{ quantity: '2', unit_price: '5000.00', line_total: '10000.00' }],
    });
  });

  t.test('inclusive CLP 1 × 11900 at 19 %', async (t) => {
    const { inv } = await createAndGet(
      h,
      clp.key,
      invoiceBody({ tax_inclusive: true, items: [{ description: 'Servicio', quantity: 1, unit_price: 11900 }] }),
    );
    t.match(inv, { tax_inclusive: true, subtotal: '10000.00', tax_total: '1900.00', total: '11900.00', tax_rate: '19.00' });
    t.equal(inv.items[0].line_total, '11900.00');
  });

  t.test('exempt: tax_rate "0.00" whatever the rate sent', async (t) => {
    const { inv } = await createAndGet(
      h,
      clp.key,
      invoiceBody({ is_tax_exempt: true, tax_rate: 19, items: [{ description: 'Exento', quantity: 3, unit_price: 1000 }] }),
    );
    t.match(inv, { is_tax_exempt: true, tax_rate: '0.00', subtotal: '3000.00', tax_total: '0.00', total: '3000.00' });
  });

  t.test('CLP rounds each line to whole pesos, half-up', async (t) => {
    const { inv } = await createAndGet(
      h,
      clp.key,
      invoiceBody({
        tax_rate: 0,
        items: [
          { description: 'a', quantity: 0.5, unit_price: 5 },
          { description: 'b', quantity: 1, unit_price: 2.5 },
          { description: 'c', quantity: 1.5, unit_price: 3 },
        ],
      }),
    );
    t.same(
      inv.items.map((i: any) => [i.quantity, i.line_total]),
      [
        ['0.5', '3.00'],
        ['1', '3.00'],
        ['1.5', '5.00'],
      ],
    );
    t.equal(inv.subtotal, '11.00');
    t.equal(inv.total, '11.00');
    t.equal(inv.tax_rate, '0.00');
  });

  t.test('CLP tax rounds half-up: 50 × 19 % = 9.5 → 10', async (t) => {
    const { inv } = await createAndGet(h, clp.key, invoiceBody({ items: [{ description: 'a', unit_price: 50 }] }));
    t.match(inv, { subtotal: '50.00', tax_total: '10.00', total: '60.00' });
  });

  t.test('USD: two decimals, 0.005 → 0.01, 1.005 → 1.01', async (t) => {
    const { created, inv } = await createAndGet(
      h,
      usd.key,
      invoiceBody({
        tax_rate: 0,
        items: [
          { description: 'a', quantity: 1, unit_price: 0.005 },
          { description: 'b', quantity: 1, unit_price: 1.005 },
          { description: 'c', quantity: 0.5, unit_price: 0.01 },
        ],
      }),
    );
    t.equal(created.currency, 'USD');
    t.equal(inv.currency, 'USD');
    t.equal(inv.exchange_rate, null, 'base currency: no exchange rate');
    t.equal(inv.base_currency, null);
    t.same(
      inv.items.map((i: any) => [i.unit_price, i.line_total]),
      [
        ['0.005', '0.01'],
        ['1.005', '1.01'],
        ['0.01', '0.01'],
      ],
    );
    t.equal(inv.total, '1.03');
    t.equal(inv.amount_paid, '0.00');
  });

  t.test('USD tax 0.50 × 19 % = 0.095 → 0.10', async (t) => {
    const { inv } = await createAndGet(h, usd.key, invoiceBody({ items: [{ description: 'a', unit_price: 0.5 }] }));
    t.match(inv, { subtotal: '0.50', tax_total: '0.10', total: '0.60', tax_rate: '19.00' });
  });

  t.test('tax_rate prints with two decimals', async (t) => {
    const { inv } = await createAndGet(h, usd.key, invoiceBody({ tax_rate: 12.5, items: [{ description: 'a', unit_price: 100 }] }));
    t.match(inv, { tax_rate: '12.50', tax_total: '12.50', total: '112.50' });
  });

  t.test('CLF: four decimals and a stored exchange rate of up to six decimals', async (t) => {
    await setRate(h.sql, clp.merchantId, 'CLF', today(), '39123.4567891');
    const { created, inv } = await createAndGet(
      h,
      clp.key,
      invoiceBody({
        currency: 'CLF',
        is_tax_exempt: true,
        items: [
          { description: 'UF', quantity: 1, unit_price: 3.5 },
          { description: 'half', quantity: 0.5, unit_price: 0.0001 },
        ],
      }),
    );
    t.equal(created.total, '3.5001');
    t.match(inv, {
      currency: 'CLF',
      base_currency: 'CLP',
      exchange_rate: '39123.456789',
      subtotal: '3.5001',
      tax_total: '0.0000',
      total: '3.5001',
      amount_paid: '0.0000',
    });
    t.same(
      inv.items.map((i: any) => [i.unit_price, i.line_total]),
      [
        ['3.5000', '3.5000'],
        ['0.0001', '0.0001'],
      ],
    );
  });

  t.test('quantity prints plainly', async (t) => {
    const { inv } = await createAndGet(
      h,
      usd.key,
      invoiceBody({
        items: [
          { description: 'a', quantity: 2, unit_price: 1 },
          { description: 'b', quantity: 1.5, unit_price: 1 },
          { description: 'c', quantity: 0.0001, unit_price: 1 },
          { description: 'd', quantity: 1000000, unit_price: 1 },
          { description: 'e', unit_price: 1 },
        ],
      }),
    );
    t.same(
      inv.items.map((i: any) => i.quantity),
      ['2', '1.5', '0.0001', '1000000', '1'],
    );
  });

  t.test('property (API): random invoices agree with the reference, create and GET alike', async (t) => {
    const apiItem = fc.record({
      q: fc.bigInt({ min: 1n, max: 10_000_000_000n }), // up to 1e6, 4 decimals
      p: fc.bigInt({ min: 0n, max: 1_000_000_000_000n }), // up to 1e8, 4 decimals (exact as JSON numbers)
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(apiItem, { minLength: 1, maxLength: 4 }),
        fc.constantFrom<'CLP' | 'USD'>('CLP', 'USD'),
        rateArb,
        modeArb,
        async (items, currency, rate, mode) => {
          const key = currency === 'CLP' ? clp.key : usd.key;
          const body = invoiceBody({
            tax_rate: Number(dec4(rate * 100n)),
            tax_inclusive: mode === 'incl',
            is_tax_exempt: mode === 'exempt',
            items: items.map((i, n) => ({ description: `l${n}`, quantity: Number(dec4(i.q)), unit_price: Number(dec4(i.p)) })),
          });
          const { created, inv } = await createAndGet(h, key, body);
          const ref = reference(items, currency, rate, mode);
          t.equal(created.total, ref.total, 'create response total');
          t.equal(inv.subtotal, ref.subtotal, 'subtotal');
          t.equal(inv.tax_total, ref.tax_total, 'tax_total');
          t.equal(inv.total, ref.total, 'total');
          t.same(
            inv.items.map((i: any) => i.line_total),
            ref.lines,
            'line totals',
          );
          t.same(
            inv.items.map((i: any) => i.quantity),
            items.map((i) => dec4(i.q)),
            'quantities plain',
          );
          const expectedRate = mode === 'exempt' ? '0.00' : fixed(rate, 2, 2);
          t.equal(inv.tax_rate, expectedRate, 'tax_rate two decimals');
          // The identities, read back from the wire strings.
          const cents = (s: string) => BigInt(s.replace('.', ''));
          t.equal(cents(inv.subtotal) + cents(inv.tax_total), cents(inv.total), 'subtotal + tax_total = total');
          for (const s of [inv.subtotal, inv.tax_total, inv.total, ...inv.items.map((i: any) => i.line_total)]) {
            t.match(s, /^\d+\.\d{2}$/, 'two decimals on the wire');
            if (currency === 'CLP') t.match(s, /\.00$/, 'CLP amounts are whole pesos');
          }
          return (
            created.total === ref.total && inv.subtotal === ref.subtotal && inv.tax_total === ref.tax_total && inv.total === ref.total
          );
        },
      ),
      { numRuns: 30 },
    );
  });
});

// ---------------------------------------------------------------------------------------------
// docs/decisions.md §17: line discounts, exempt lines and a global discount. Figures worked out by hand in
// the comments, then two properties against a scaled-integer reference of §17.

t.test('unit: §17 line discounts, exempt lines and the global discount', async (t) => {
  /** Every figure of §17, lines as [gross, discount, total, exempt]. */
  const s17 = (x: Totals) => ({
    lines: x.lines.map((l) => [l.gross.toFixed(), l.discount.toFixed(), l.total.toFixed(), l.exempt]),
    base: x.discountBase.toFixed(),
    discount: x.discountTotal.toFixed(),
    taxable: x.taxableAmount.toFixed(),
    exempt: x.exemptAmount.toFixed(),
    subtotal: x.subtotal.toFixed(),
    tax: x.taxTotal.toFixed(),
    total: x.total.toFixed(),
    rate: x.taxRate.toFixed(),
  });
  const clp = { currency: 'CLP' as const, taxRate: 19, ...excl };

  t.test('discount percent: 9 % on 2 × 15990', async (t) => {
    // gross 31980; discount round(2878.2) = 2878; line 29102; tax round(29102 × 0.19) = round(5529.38) = 5529;
    // total 34631. No global discount: its total is 0 and its base is the one taxable line.
    t.same(s17(computeTotals([{ quantity: 2, unit_price: 15990, discount_percent: 9 }], clp)), {
      lines: [['31980', '2878', '29102', false]],
      base: '29102',
      discount: '0',
      taxable: '29102',
      exempt: '0',
      subtotal: '29102',
      tax: '5529',
      total: '34631',
      rate: '19',
    });
  });

  t.test('discount percent rounds half-up: 15 % of 8990 = 1348.5 → 1349', async (t) => {
    t.same(computeTotals([{ quantity: 1, unit_price: 8990, discount_percent: 15 }], clp).lines[0]!.discount.toFixed(), '1349');
    // USD: 5 % of 30.50 = 1.525 → 1.53 (banker's rounding gives 1.52).
    t.same(computeTotals([{ quantity: 2, unit_price: 15.25, discount_percent: '5' }], { ...clp, currency: 'USD' }).lines[0]!.discount.toFixed(), '1.53');
  });

  t.test('discount amount, up to the whole line', async (t) => {
    // 37500 − 2500 = 35000; 3990 − 3990 = 0; tax 35000 × 0.19 = 6650; total 41650.
    t.same(
      s17(
        computeTotals(
          [
            { quantity: 3, unit_price: 12500, discount_amount: 2500 },
            { quantity: 1, unit_price: 3990, discount_amount: '3990' },
          ],
          clp,
        ),
      ),
      {
        lines: [
          ['37500', '2500', '35000', false],
          ['3990', '3990', '0', false],
        ],
        base: '35000',
        discount: '0',
        taxable: '35000',
        exempt: '0',
        subtotal: '35000',
        tax: '6650',
        total: '41650',
        rate: '19',
      },
    );
  });

  t.test('an exempt line: no tax on it, in the subtotal', async (t) => {
    // taxable 250000 → tax 47500; exempt 80000; subtotal 330000; total 377500.
    t.same(
      s17(
        computeTotals(
          [
            { quantity: 1, unit_price: 250000 },
            { quantity: 1, unit_price: 80000, exempt: true },
          ],
          clp,
        ),
      ),
      {
        lines: [
          ['250000', '0', '250000', false],
          ['80000', '0', '80000', true],
        ],
        base: '250000',
        discount: '0',
        taxable: '250000',
        exempt: '80000',
        subtotal: '330000',
        tax: '47500',
        total: '377500',
        rate: '19',
      },
    );
  });

  t.test('global percent: 21 % of the taxable lines after their discounts, half-up', async (t) => {
    // Lines 37050 and 15000 − 1500 = 13500 taxable, 50000 exempt. discount = round(50550 × 0.21) =
    // round(10615.5) = 10616; taxable 39934; tax round(7587.46) = 7587; subtotal 89934; total 97521.
    t.same(
      s17(
        computeTotals(
          [
            { quantity: 3, unit_price: 12350 },
            { quantity: 1, unit_price: 15000, discount_percent: 10 },
            { quantity: 1, unit_price: 50000, exempt: true },
          ],
          { ...clp, globalDiscount: { percent: 21 } },
        ),
      ),
      {
        lines: [
          ['37050', '0', '37050', false],
          ['15000', '1500', '13500', false],
          ['50000', '0', '50000', true],
        ],
        base: '50550',
        discount: '10616',
        taxable: '39934',
        exempt: '50000',
        subtotal: '89934',
        tax: '7587',
        total: '97521',
        rate: '19',
      },
    );
  });

  t.test('global amount', async (t) => {
    // 90000 − 5000 = 85000; tax 16150; total 101150.
    t.same(s17(computeTotals([{ quantity: 2, unit_price: 45000 }], { ...clp, globalDiscount: { amount: 5000 } })), {
      lines: [['90000', '0', '90000', false]],
      base: '90000',
      discount: '5000',
      taxable: '85000',
      exempt: '0',
      subtotal: '85000',
      tax: '16150',
      total: '101150',
      rate: '19',
    });
  });

  t.test('tax inclusive: the discounts come off the gross, then taxable = round(gross / 1.19)', async (t) => {
    // 31980 − 2878 = 29102 and 11900 − 1900 = 10000 taxable, 20000 exempt. discount round(39102 × 0.05) =
    // round(1955.1) = 1955; taxable gross 37147; taxable round(37147 / 1.19) = round(31215.966…) = 31216;
    // tax 37147 − 31216 = 5931; subtotal 31216 + 20000 = 51216; total 57147.
    t.same(
      s17(
        computeTotals(
          [
            { quantity: 2, unit_price: 15990, discount_percent: 9 },
            { quantity: 1, unit_price: 11900, discount_amount: 1900 },
            { quantity: 1, unit_price: 20000, exempt: true },
          ],
          { currency: 'CLP', taxRate: 19, ...incl, globalDiscount: { percent: 5 } },
        ),
      ),
      {
        lines: [
          ['31980', '2878', '29102', false],
          ['11900', '1900', '10000', false],
          ['20000', '0', '20000', true],
        ],
        base: '39102',
        discount: '1955',
        taxable: '31216',
        exempt: '20000',
        subtotal: '51216',
        tax: '5931',
        total: '57147',
        rate: '19',
      },
    );
  });

  t.test('exempt invoice: every line exempt, the global discount comes off the exempt amount', async (t) => {
    // 70000 + (12500 − 1250) = 81250; discount round(81250 × 0.15) = round(12187.5) = 12188;
    // exempt = subtotal = total = 69062; no tax, rate 0. A line marked exempt: false is exempt all the same.
    for (const taxInclusive of [false, true]) {
      t.same(
        s17(
          computeTotals(
            [
              { quantity: 2, unit_price: 35000, exempt: false },
              { quantity: 1, unit_price: 12500, discount_percent: 10 },
            ],
            { currency: 'CLP', taxRate: 19, taxInclusive, taxExempt: true, globalDiscount: { percent: 15 } },
          ),
        ),
        {
          lines: [
            ['70000', '0', '70000', true],
            ['12500', '1250', '11250', true],
          ],
          base: '81250',
          discount: '12188',
          taxable: '0',
          exempt: '69062',
          subtotal: '69062',
          tax: '0',
          total: '69062',
          rate: '0',
        },
        `tax_inclusive ${taxInclusive}`,
      );
    }
  });

  t.test('USD and CLF round at their precision', async (t) => {
    // USD: 30.50 − 1.53 = 28.97 and 9.99 − 0.99 = 9.00; discount round(37.97 × 0.025) = round(0.94925) = 0.95;
    // taxable 37.02; tax round(7.0338) = 7.03; total 44.05.
    t.same(
      s17(
        computeTotals(
          [
            { quantity: 2, unit_price: 15.25, discount_percent: 5 },
            { quantity: 1, unit_price: 9.99, discount_amount: 0.99 },
          ],
          { currency: 'USD', taxRate: 19, ...excl, globalDiscount: { percent: 2.5 } },
        ),
      ),
      {
        lines: [
          ['30.5', '1.53', '28.97', false],
          ['9.99', '0.99', '9', false],
        ],
        base: '37.97',
        discount: '0.95',
        taxable: '37.02',
        exempt: '0',
        subtotal: '37.02',
        tax: '7.03',
        total: '44.05',
        rate: '19',
      },
    );
    // CLF: 7 % of 1.2345 = 0.086415 → 0.0864; line 1.1481; tax round(0.218139) = 0.2181; total 1.3662.
    t.same(
      s17(computeTotals([{ quantity: 1, unit_price: 1.2345, discount_percent: 7 }], { currency: 'CLF', taxRate: 19, ...excl })),
      {
        lines: [['1.2345', '0.0864', '1.1481', false]],
        base: '1.1481',
        discount: '0',
        taxable: '1.1481',
        exempt: '0',
        subtotal: '1.1481',
        tax: '0.2181',
        total: '1.3662',
        rate: '19',
      },
    );
  });
});

/** A line of the §17 reference: quantity and price × 10^4, a discount percent × 100 or a share (‰) of the gross. */
interface RefLine17 extends RefItem {
  discount: { pct: bigint } | { permille: bigint } | null;
  exempt: boolean;
}
/** The global discount: a percent × 100, or a share (‰) of what it applies to. */
type RefGlobal17 = { pct: bigint } | { permille: bigint } | null;

/**
 * §17 in scaled integers (money × 10^precision). An amount discount is drawn as a share of what it
 * applies to, so it is always valid input; the inputs for computeTotals come back with the figures.
 */
function reference17(items: RefLine17[], currency: Currency, rate: bigint /* × 100 */, mode: 'excl' | 'incl' | 'exempt', global: RefGlobal17) {
  const pr = P[currency];
  const money = (v: bigint) => fixed(v, pr, pr);
  const lines = items.map((i) => {
    const gross = divHalfUp(i.q * i.p, pow10(8 - pr));
    let discount = 0n;
    let input: { discount_percent?: string; discount_amount?: string } = {};
    if (i.discount && 'pct' in i.discount) {
      discount = divHalfUp(gross * i.discount.pct, 10000n);
      input = { discount_percent: fixed(i.discount.pct, 2, 2) };
    } else if (i.discount && (gross * i.discount.permille) / 1000n > 0n) {
      discount = (gross * i.discount.permille) / 1000n;
      input = { discount_amount: money(discount) };
    }
    const exempt = mode === 'exempt' || i.exempt;
    return { gross, discount, total: gross - discount, exempt, input: { quantity: dec4(i.q), unit_price: dec4(i.p), exempt: i.exempt, ...input } };
  });
  const sum = (ls: typeof lines) => ls.reduce((a, l) => a + l.total, 0n);
  const exemptLines = sum(lines.filter((l) => l.exempt));
  const base = mode === 'exempt' ? exemptLines : sum(lines.filter((l) => !l.exempt));
  let discountTotal = 0n;
  let globalInput: { percent?: string; amount?: string } | undefined;
  if (global && 'pct' in global) {
    discountTotal = divHalfUp(base * global.pct, 10000n);
    globalInput = { percent: fixed(global.pct, 2, 2) };
  } else if (global && (base * global.permille) / 1000n > 0n) {
    discountTotal = (base * global.permille) / 1000n;
    globalInput = { amount: money(discountTotal) };
  }
  let taxable = 0n;
  let exemptAmount = exemptLines;
  let tax = 0n;
  if (mode === 'exempt') {
    exemptAmount = exemptLines - discountTotal;
  } else if (mode === 'excl') {
    taxable = base - discountTotal;
    tax = divHalfUp(taxable * rate, 10000n);
  } else {
    const taxableGross = base - discountTotal;
    taxable = divHalfUp(taxableGross * 10000n, 10000n + rate);
    tax = taxableGross - taxable;
  }
  const subtotal = taxable + exemptAmount;
  return {
    inputs: lines.map((l) => l.input),
    globalInput,
    expected: {
      lines: lines.map((l) => [money(l.gross), money(l.discount), money(l.total), l.exempt]),
      base: money(base),
      discount: money(discountTotal),
      taxable: money(taxable),
      exempt: money(exemptAmount),
      subtotal: money(subtotal),
      tax: money(tax),
      total: money(subtotal + tax),
    },
  };
}

/** computeTotals' figures at the currency's precision, in the reference's shape. */
function figures17(x: Totals, currency: Currency) {
  const pr = P[currency];
  const money = (d: Decimal) => d.toFixed(pr);
  return {
    lines: x.lines.map((l) => [money(l.gross), money(l.discount), money(l.total), l.exempt]),
    base: money(x.discountBase),
    discount: money(x.discountTotal),
    taxable: money(x.taxableAmount),
    exempt: money(x.exemptAmount),
    subtotal: money(x.subtotal),
    tax: money(x.taxTotal),
    total: money(x.total),
  };
}

/** The identities §17 promises whatever the input: true when all hold. */
function identitiesHold(x: Totals, currency: Currency): boolean {
  const pr = P[currency];
  const amounts = [x.discountBase, x.discountTotal, x.taxableAmount, x.exemptAmount, x.subtotal, x.taxTotal, x.total, ...x.lines.flatMap((l) => [l.gross, l.discount, l.total])];
  return (
    amounts.every((d) => (d.decimalPlaces() ?? 0) <= pr && !d.isNegative()) &&
    x.total.eq(x.subtotal.plus(x.taxTotal)) &&
    x.taxableAmount.plus(x.exemptAmount).eq(x.subtotal) &&
    x.discountTotal.lte(x.discountBase) &&
    x.lines.every((l) => l.total.eq(l.gross.minus(l.discount)))
  );
}

const line17Arb = fc.record({
  q: fc.bigInt({ min: 1n, max: 100_000_000n }), // up to 10,000, 4 decimals
  p: fc.oneof(fc.bigInt({ min: 0n, max: 100_000_000n }), fc.bigInt({ min: 0n, max: 10_000_000_000_000n })), // 4 decimals
  discount: fc.oneof(
    fc.constant(null),
    fc.record({ pct: fc.bigInt({ min: 1n, max: 9999n }) }),
    fc.record({ permille: fc.bigInt({ min: 1n, max: 1000n }) }),
  ),
  exempt: fc.boolean(),
});
const global17Arb = fc.oneof(
  fc.constant(null),
  fc.record({ pct: fc.bigInt({ min: 1n, max: 9999n }) }),
  fc.record({ permille: fc.bigInt({ min: 1n, max: 1000n }) }),
);

t.test('property (unit): without discounts or exempt lines, §17 reduces to §2', async (t) => {
  const plainArb = fc.record({ q: fc.bigInt({ min: 1n, max: 10_000_000_000n }), p: fc.bigInt({ min: 0n, max: 10_000_000_000_000_000n }) });
  fc.assert(
    fc.property(fc.array(plainArb, { minLength: 1, maxLength: 8 }), currencyArb, rateArb, modeArb, (items, currency, rate, mode) => {
      const got = computeTotals(
        items.map((i) => ({ quantity: dec4(i.q), unit_price: dec4(i.p) })),
        { currency, taxRate: dec4(rate * 100n), taxInclusive: mode === 'incl', taxExempt: mode === 'exempt' },
      );
      const old = reference(items, currency, rate, mode);
      const pr = P[currency];
      const zero = new Decimal(0);
      const sameAsOld =
        wireAmount(got.subtotal, currency) === old.subtotal &&
        wireAmount(got.taxTotal, currency) === old.tax_total &&
        wireAmount(got.total, currency) === old.total &&
        got.lines.every((l, i) => l.discount.isZero() && l.total.eq(l.gross) && wireAmount(l.total, currency) === old.lines[i]);
      // An exempt invoice's lines are all exempt: its subtotal is exempt, not taxable.
      const split =
        mode === 'exempt'
          ? got.taxableAmount.eq(zero) && got.exemptAmount.eq(got.subtotal) && got.lines.every((l) => l.exempt)
          : got.taxableAmount.eq(got.subtotal) && got.exemptAmount.eq(zero) && got.lines.every((l) => !l.exempt);
      return (
        sameAsOld &&
        split &&
        got.discountTotal.eq(zero) &&
        got.total.eq(got.subtotal.plus(got.taxTotal)) &&
        got.taxableAmount.plus(got.exemptAmount).eq(got.subtotal) &&
        [got.taxableAmount, got.exemptAmount, got.discountTotal].every((d) => (d.decimalPlaces() ?? 0) <= pr)
      );
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 random invoices without discounts: subtotal = taxable_amount, exempt 0, discount 0, §2 totals');
});

t.test('property (unit): with discounts, exempt lines and a global discount, §17 matches the reference and adds up', async (t) => {
  fc.assert(
    fc.property(fc.array(line17Arb, { minLength: 1, maxLength: 8 }), currencyArb, rateArb, modeArb, global17Arb, (items, currency, rate, mode, global) => {
      const ref = reference17(items, currency, rate, mode, global);
      const got = computeTotals(ref.inputs, {
        currency,
        taxRate: dec4(rate * 100n),
        taxInclusive: mode === 'incl',
        taxExempt: mode === 'exempt',
        globalDiscount: ref.globalInput,
      });
      const figures = figures17(got, currency);
      if (JSON.stringify(figures) !== JSON.stringify(ref.expected)) {
        throw new Error(`computeTotals ${JSON.stringify(figures)} ≠ reference ${JSON.stringify(ref.expected)}`);
      }
      return identitiesHold(got, currency) && got.taxRate.eq(mode === 'exempt' ? 0 : dec4(rate * 100n));
    }),
    { numRuns: 3000 },
  );
  t.pass('3000 random invoices: figures equal the scaled-integer reference; total = subtotal + tax_total, taxable + exempt = subtotal');
});
