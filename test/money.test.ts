// Money arithmetic of decisions §2: unit tests of src/money.ts, the same table through the API,
// and a fast-check property against an independent scaled-integer reference.
import t from 'tap';
import fc from 'fast-check';
import {
  computeTotals,
  Decimal,
  decimalPlaces,
  formatAmount,
  formatExchangeRate,
  formatQuantity,
  formatRate,
  formatUnitPrice,
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
  lines: x.lineTotals.map((d) => d.toFixed()),
  subtotal: x.subtotal.toFixed(),
  tax: x.taxTotal.toFixed(),
  total: x.total.toFixed(),
  rate: x.taxRate.toFixed(),
});

const excl = { taxInclusive: false, taxExempt: false };
const incl = { taxInclusive: true, taxExempt: false };

t.test('unit: the arithmetic table of decisions §2', async (t) => {
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
    computeTotals([{ quantity: q, unit_price: p }], { currency, taxRate: 0, ...excl }).lineTotals[0]!.toFixed();
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
  t.equal(formatAmount('11900', 'CLP'), '11900.00', 'CLP is whole pesos printed with two decimals');
  t.equal(formatAmount('0', 'CLP'), '0.00');
  t.equal(formatAmount('119', 'USD'), '119.00');
  t.equal(formatAmount('0.1', 'USD'), '0.10');
  t.equal(formatAmount('3.5', 'CLF'), '3.5000');
  t.equal(formatAmount('0.0001', 'CLF'), '0.0001');
  t.equal(formatAmount('1000000000000', 'EUR'), '1000000000000.00', 'no exponent notation');
  t.equal(formatQuantity('2'), '2');
  t.equal(formatQuantity('2.0000'), '2', 'trailing zeros of a numeric column are dropped');
  t.equal(formatQuantity('1.50'), '1.5');
  t.equal(formatQuantity('0.0001'), '0.0001');
  t.equal(formatQuantity('1000000'), '1000000');
  t.equal(formatRate('19'), '19.00');
  t.equal(formatRate('0'), '0.00');
  t.equal(formatRate('12.5'), '12.50');
  t.equal(formatExchangeRate('950.25'), '950.25');
  t.equal(formatExchangeRate('950.2500000'), '950.25');
  t.equal(formatExchangeRate('950.1234564'), '950.123456');
  t.equal(formatExchangeRate('950.1234565'), '950.123457', 'half-up at six decimals');
  t.equal(formatExchangeRate('0.000001'), '0.000001');
  t.equal(formatExchangeRate('39000'), '39000');
  t.equal(formatUnitPrice('5000', 'CLP'), '5000.00');
  t.equal(formatUnitPrice('0.1234', 'USD'), '0.1234', 'a unit price keeps its 4 decimals');
  t.equal(formatUnitPrice('3.5', 'CLF'), '3.5000');
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
    formatAmount(v, c) === viaDecimal.amount(v, c) &&
    formatUnitPrice(v, c) === viaDecimal.unitPrice(v, c) &&
    formatQuantity(v) === viaDecimal.quantity(v) &&
    formatRate(v) === viaDecimal.rate(v) &&
    formatExchangeRate(v) === viaDecimal.exchangeRate(v);
  // Digits biased to 0, 4, 5 and 9, where rounding and carries happen.
  const digits = (max: number) => fc.array(fc.constantFrom('0', '4', '5', '9', '1', '7'), { minLength: 1, maxLength: max }).map((d) => d.join(''));
  const plain = fc.tuple(digits(14), fc.option(digits(10), { nil: undefined })).map(([i, f]) => (f === undefined ? i : `${i}.${f}`));
  fc.assert(fc.property(plain, fc.constantFrom('CLP', 'CLF', 'USD'), agree), { numRuns: 5000 });
  for (const v of ['0', '0.0', '007', '0.005', '0.995', '9.99995', '99.995', '999999.9999995', '1.00000050', '0.0000005']) {
    t.ok(agree(v, 'USD') && agree(v, 'CLF'), v);
  }
  // Not database text: still exact, through Decimal.
  t.equal(formatAmount(1e21, 'USD'), '1000000000000000000000.00');
  t.equal(formatAmount('-1.005', 'USD'), '-1.01');
  t.equal(formatQuantity('1e-7'), '0.0000001');
  t.equal(formatUnitPrice(0.5, 'CLP'), '0.50');
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
      for (const v of [got.subtotal, got.taxTotal, got.total, ...got.lineTotals]) {
        if ((v.decimalPlaces() ?? 0) > pr) return false;
      }
      if (mode === 'incl') {
        if (!got.subtotal.plus(got.taxTotal).eq(got.total)) return false;
      } else if (!got.total.eq(got.subtotal.plus(got.taxTotal))) return false;
      return (
        formatAmount(got.subtotal, currency) === ref.subtotal &&
        formatAmount(got.taxTotal, currency) === ref.tax_total &&
        formatAmount(got.total, currency) === ref.total &&
        got.lineTotals.every((l, i) => formatAmount(l, currency) === ref.lines[i])
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
