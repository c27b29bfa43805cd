import BigNumberBase from 'bignumber.js';

// Half-up at the currency's precision, the rule of Chilean invoicing and of docs/decisions.md §2.
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

/** The rule a currency breaks, in the words of every message that refuses one (API and CLI alike). */
export const CURRENCY_RULE = `must be one of ${Object.keys(currencies).join(', ')}`;

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

// The API's string forms of numbers (wire*); what people read is src/format.ts's format*.

/** An amount on the wire: two decimals, four for CLF (a CLP amount is already whole). */
export function wireAmount(value: BigNumberBase.Value, currency: string): string {
  const places = currency === 'CLF' ? 4 : 2;
  return plainToFixed(value, places) ?? new Decimal(value).toFixed(places);
}

/** Like an amount, but a unit price may carry up to 4 decimals and none of them is dropped. */
export function wireUnitPrice(value: BigNumberBase.Value, currency: string): string {
  const min = currency === 'CLF' ? 4 : 2;
  const parts = plainParts(value);
  if (parts) return `${parts[0]}.${parts[1].padEnd(min, '0')}`;
  const d = new Decimal(value);
  return d.toFixed(Math.max(min, d.decimalPlaces() ?? 0));
}

export function wireQuantity(value: BigNumberBase.Value): string {
  const parts = plainParts(value);
  if (parts) return parts[1] ? `${parts[0]}.${parts[1]}` : parts[0];
  return new Decimal(value).toFixed();
}

export function wireRate(value: BigNumberBase.Value): string {
  return plainToFixed(value, 2) ?? new Decimal(value).toFixed(2);
}

export function wireExchangeRate(value: BigNumberBase.Value): string {
  return wireQuantity(plainToFixed(value, 6) ?? new Decimal(value).toFixed(6));
}

export function decimalPlaces(n: number): number {
  return new Decimal(n).decimalPlaces() ?? 0;
}

export interface LineInput {
  quantity: BigNumberBase.Value;
  unit_price: BigNumberBase.Value;
  /** Percent off the line's gross amount; or `discount_amount`, never both. */
  discount_percent?: BigNumberBase.Value | null | undefined;
  discount_amount?: BigNumberBase.Value | null | undefined;
  exempt?: boolean | undefined;
}

/** Off the taxable lines (the exempt ones on an exempt invoice): a percent or an amount. */
export interface GlobalDiscountInput {
  percent?: BigNumberBase.Value | undefined;
  amount?: BigNumberBase.Value | undefined;
}

export interface LineAmounts {
  /** round(quantity × unit_price). */
  gross: Decimal;
  discount: Decimal;
  /** gross − discount. */
  total: Decimal;
  exempt: boolean;
}

export interface Totals {
  lines: LineAmounts[];
  /** What the global discount applies to: Σ of the taxable lines (the exempt ones on an exempt invoice). */
  discountBase: Decimal;
  discountTotal: Decimal;
  taxableAmount: Decimal;
  exemptAmount: Decimal;
  subtotal: Decimal;
  taxTotal: Decimal;
  total: Decimal;
  taxRate: Decimal;
}

const sum = (values: Decimal[]) => values.reduce((a, b) => a.plus(b), new Decimal(0));

/**
 * The invoice arithmetic of docs/tax-documents.md (§2's, with line discounts, exempt lines and a
 * global discount): every amount half-up at the currency's precision. Without discounts or exempt
 * lines it gives §2's figures exactly. Tax inclusive, the taxable lines are gross of tax.
 */
export function computeTotals(
  items: LineInput[],
  opts: { currency: Currency; taxRate: BigNumberBase.Value; taxInclusive: boolean; taxExempt: boolean; globalDiscount?: GlobalDiscountInput | null | undefined },
): Totals {
  const round = (v: Decimal) => roundMoney(v, opts.currency);
  const lines = items.map((i): LineAmounts => {
    const gross = round(new Decimal(i.quantity).times(i.unit_price));
    const discount =
      i.discount_amount != null ? new Decimal(i.discount_amount) : i.discount_percent != null ? round(gross.times(i.discount_percent).div(100)) : new Decimal(0);
    return { gross, discount, total: gross.minus(discount), exempt: opts.taxExempt || i.exempt === true };
  });
  const exemptLines = sum(lines.filter((l) => l.exempt).map((l) => l.total));
  const taxableLines = sum(lines.filter((l) => !l.exempt).map((l) => l.total));
  const discountBase = opts.taxExempt ? exemptLines : taxableLines;
  const g = opts.globalDiscount;
  const discountTotal = g?.amount != null ? new Decimal(g.amount) : g?.percent != null ? round(discountBase.times(g.percent).div(100)) : new Decimal(0);
  if (opts.taxExempt) {
    const exemptAmount = exemptLines.minus(discountTotal);
    const zero = new Decimal(0);
    return { lines, discountBase, discountTotal, taxableAmount: zero, exemptAmount, subtotal: exemptAmount, taxTotal: zero, total: exemptAmount, taxRate: zero };
  }
  const rate = new Decimal(opts.taxRate);
  const taxablePart = taxableLines.minus(discountTotal);
  const taxableAmount = opts.taxInclusive ? round(taxablePart.div(rate.div(100).plus(1))) : taxablePart;
  const taxTotal = opts.taxInclusive ? taxablePart.minus(taxableAmount) : round(taxableAmount.times(rate).div(100));
  const subtotal = taxableAmount.plus(exemptLines);
  return { lines, discountBase, discountTotal, taxableAmount, exemptAmount: exemptLines, subtotal, taxTotal, total: subtotal.plus(taxTotal), taxRate: rate };
}
