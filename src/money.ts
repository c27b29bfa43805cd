import BigNumberBase from 'bignumber.js';

// Half-up at the currency's precision, the rule of Chilean invoicing and of decisions §2.
export const Decimal = BigNumberBase.clone({ ROUNDING_MODE: BigNumberBase.ROUND_HALF_UP, DECIMAL_PLACES: 20, EXPONENTIAL_AT: [-30, 40] });
export type Decimal = BigNumberBase;

export const currencies = {
  CLP: 0,
  CLF: 4,
  USD: 2,
  EUR: 2,
  GBP: 2,
  ARS: 2,
  BRL: 2,
  COP: 2,
  MXN: 2,
  PEN: 2,
} as const;

export type Currency = keyof typeof currencies;

export function isCurrency(code: string): code is Currency {
  return Object.hasOwn(currencies, code);
}

export function precision(currency: Currency): number {
  return currencies[currency];
}

export function roundMoney(value: BigNumberBase.Value, currency: Currency): Decimal {
  return new Decimal(value).decimalPlaces(precision(currency), Decimal.ROUND_HALF_UP);
}

/** Wire form: two decimals, four for CLF (a CLP amount is already whole). */
export function formatAmount(value: BigNumberBase.Value, currency: string): string {
  return new Decimal(value).toFixed(currency === 'CLF' ? 4 : 2);
}

/** Like an amount, but a unit price may carry up to 4 decimals and none of them is dropped. */
export function formatUnitPrice(value: BigNumberBase.Value, currency: string): string {
  const d = new Decimal(value);
  return d.toFixed(Math.max(currency === 'CLF' ? 4 : 2, d.decimalPlaces() ?? 0));
}

export function formatQuantity(value: BigNumberBase.Value): string {
  return new Decimal(value).toFixed();
}

export function formatRate(value: BigNumberBase.Value): string {
  return new Decimal(value).toFixed(2);
}

export function formatExchangeRate(value: BigNumberBase.Value): string {
  return new Decimal(new Decimal(value).toFixed(6)).toFixed();
}

export function decimalPlaces(n: number): number {
  return new Decimal(n).decimalPlaces() ?? 0;
}

export interface LineInput {
  quantity: BigNumberBase.Value;
  unit_price: BigNumberBase.Value;
}

export interface Totals {
  lineTotals: Decimal[];
  subtotal: Decimal;
  taxTotal: Decimal;
  total: Decimal;
  taxRate: Decimal;
}

/** The invoice arithmetic of decisions §2. */
export function computeTotals(
  items: LineInput[],
  opts: { currency: Currency; taxRate: BigNumberBase.Value; taxInclusive: boolean; taxExempt: boolean },
): Totals {
  const lineTotals = items.map((i) => roundMoney(new Decimal(i.quantity).times(i.unit_price), opts.currency));
  const sum = lineTotals.reduce((a, b) => a.plus(b), new Decimal(0));
  if (opts.taxExempt) {
    return { lineTotals, subtotal: sum, taxTotal: new Decimal(0), total: sum, taxRate: new Decimal(0) };
  }
  const rate = new Decimal(opts.taxRate);
  if (opts.taxInclusive) {
    const subtotal = roundMoney(sum.div(rate.div(100).plus(1)), opts.currency);
    return { lineTotals, subtotal, taxTotal: sum.minus(subtotal), total: sum, taxRate: rate };
  }
  const taxTotal = roundMoney(sum.times(rate).div(100), opts.currency);
  return { lineTotals, subtotal: sum, taxTotal, total: sum.plus(taxTotal), taxRate: rate };
}
