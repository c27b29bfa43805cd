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

// Amounts reach the wire as Postgres writes numeric: plain digits with an optional fraction. Those
// are formatted as strings (a GET formats a dozen, and a Decimal per amount dominated its cost);
// anything else (a JS number, a sign, an exponent) goes through Decimal.
const PLAIN = /^(\d+)(?:\.(\d+))?$/;

/** Adds one unit in the last place of a string of digits. */
function incremented(digits: string): string {
  let i = digits.length - 1;
  while (i >= 0 && digits.charCodeAt(i) === 57 /* 9 */) i--;
  if (i < 0) return `1${'0'.repeat(digits.length)}`;
  return digits.slice(0, i) + String.fromCharCode(digits.charCodeAt(i) + 1) + '0'.repeat(digits.length - i - 1);
}

/** `toFixed(places)` with half-up rounding, or null when `value` is not plain digits. */
function plainToFixed(value: BigNumberBase.Value, places: number): string | null {
  const m = typeof value === 'string' ? PLAIN.exec(value) : null;
  if (!m) return null;
  const int = m[1]!.replace(/^0+(?=\d)/, '');
  const frac = m[2] ?? '';
  if (frac.length <= places) return places === 0 ? int : `${int}.${frac.padEnd(places, '0')}`;
  let digits = int + frac.slice(0, places);
  if (frac.charCodeAt(places) >= 53 /* 5 */) digits = incremented(digits);
  const cut = digits.length - places;
  return places === 0 ? digits : `${digits.slice(0, cut)}.${digits.slice(cut)}`;
}

/** Integer part and the fraction without its trailing zeros, or null when not plain digits. */
function plainParts(value: BigNumberBase.Value): [string, string] | null {
  const m = typeof value === 'string' ? PLAIN.exec(value) : null;
  if (!m) return null;
  return [m[1]!.replace(/^0+(?=\d)/, ''), (m[2] ?? '').replace(/0+$/, '')];
}

/** Wire form: two decimals, four for CLF (a CLP amount is already whole). */
export function formatAmount(value: BigNumberBase.Value, currency: string): string {
  const places = currency === 'CLF' ? 4 : 2;
  return plainToFixed(value, places) ?? new Decimal(value).toFixed(places);
}

/** Like an amount, but a unit price may carry up to 4 decimals and none of them is dropped. */
export function formatUnitPrice(value: BigNumberBase.Value, currency: string): string {
  const min = currency === 'CLF' ? 4 : 2;
  const parts = plainParts(value);
  if (parts) return `${parts[0]}.${parts[1].padEnd(min, '0')}`;
  const d = new Decimal(value);
  return d.toFixed(Math.max(min, d.decimalPlaces() ?? 0));
}

export function formatQuantity(value: BigNumberBase.Value): string {
  const parts = plainParts(value);
  if (parts) return parts[1] ? `${parts[0]}.${parts[1]}` : parts[0];
  return new Decimal(value).toFixed();
}

export function formatRate(value: BigNumberBase.Value): string {
  return plainToFixed(value, 2) ?? new Decimal(value).toFixed(2);
}

export function formatExchangeRate(value: BigNumberBase.Value): string {
  return formatQuantity(plainToFixed(value, 6) ?? new Decimal(value).toFixed(6));
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
