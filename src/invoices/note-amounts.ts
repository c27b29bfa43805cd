// What a credit or debit note states (docs/tax-documents.md): its lines and totals, worked out from
// the invoice with the invoice arithmetic. Pure: no I/O.
import { computeTotals, Decimal, isCurrency, roundMoney, type Currency, type GlobalDiscountInput, type LineInput, type Totals } from '../money.js';
import type { InvoiceItemRow, InvoiceWithItems } from './queries.js';

export interface NoteLine {
  invoice_item_id: string | null;
  description: string;
  quantity: string | null;
  unit_price: string | null;
  discount_percent: string | null;
  discount_amount: string;
  exempt: boolean;
  line_total: string;
}

export interface NoteAmounts {
  lines: NoteLine[];
  global_discount_percent: string | null;
  global_discount_amount: string | null;
  global_discount_description: string | null;
  subtotal: string;
  taxable_amount: string;
  exempt_amount: string;
  discount_total: string;
  tax_total: string;
  total: string;
}

type TotalsOwner = Pick<InvoiceWithItems, 'currency' | 'tax_rate' | 'tax_inclusive' | 'is_tax_exempt'>;

function currencyOf(invoice: Pick<InvoiceWithItems, 'currency'>): Currency {
  if (!isCurrency(invoice.currency)) throw new Error(`an invoice in an unknown currency: ${invoice.currency}`);
  return invoice.currency;
}

function totalsOf(invoice: TotalsOwner, lines: LineInput[], globalDiscount?: GlobalDiscountInput): Totals {
  return computeTotals(lines, {
    currency: currencyOf(invoice),
    taxRate: invoice.tax_rate,
    taxInclusive: invoice.tax_inclusive,
    taxExempt: invoice.is_tax_exempt,
    globalDiscount,
  });
}

function amounts(totals: Totals, lines: NoteLine[], global: Pick<NoteAmounts, 'global_discount_percent' | 'global_discount_amount' | 'global_discount_description'>): NoteAmounts {
  return {
    lines,
    ...global,
    subtotal: totals.subtotal.toFixed(),
    taxable_amount: totals.taxableAmount.toFixed(),
    exempt_amount: totals.exemptAmount.toFixed(),
    discount_total: totals.discountTotal.toFixed(),
    tax_total: totals.taxTotal.toFixed(),
    total: totals.total.toFixed(),
  };
}

const NO_GLOBAL_DISCOUNT = { global_discount_percent: null, global_discount_amount: null, global_discount_description: null };

/** CodRef 1 of an invoice: every line and total as the invoice states them. */
export function cancelAmounts(invoice: InvoiceWithItems): NoteAmounts {
  return {
    lines: invoice.items.map((it) => ({
      invoice_item_id: it.id,
      description: it.description,
      quantity: it.quantity,
      unit_price: it.unit_price,
      discount_percent: it.discount_percent,
      discount_amount: it.discount_amount,
      exempt: invoice.is_tax_exempt || it.exempt,
      line_total: it.line_total,
    })),
    global_discount_percent: invoice.global_discount_percent,
    global_discount_amount: invoice.global_discount_amount,
    global_discount_description: invoice.global_discount_description,
    subtotal: invoice.subtotal,
    taxable_amount: invoice.taxable_amount,
    exempt_amount: invoice.exempt_amount,
    discount_total: invoice.discount_total,
    tax_total: invoice.tax_total,
    total: invoice.total,
  };
}

/** CodRef 2: one line with the text as it should read, no quantity or price, every amount 0. */
export function correctTextAmounts(correctedText: string): NoteAmounts {
  return {
    lines: [{ invoice_item_id: null, description: correctedText, quantity: null, unit_price: null, discount_percent: null, discount_amount: '0', exempt: false, line_total: '0' }],
    ...NO_GLOBAL_DISCOUNT,
    subtotal: '0',
    taxable_amount: '0',
    exempt_amount: '0',
    discount_total: '0',
    tax_total: '0',
    total: '0',
  };
}

export interface ReturnedLine {
  item: InvoiceItemRow;
  quantity: string;
}

/**
 * CodRef 3, goods returned: each line at its unit price, exemption and discount percent; a
 * discount amount prorated by the quantity returned; a global discount percent as it is, a global
 * amount prorated by the returned share of the lines it applied to. Half-up throughout.
 */
export function returnAmounts(invoice: InvoiceWithItems, returned: ReturnedLine[]): NoteAmounts {
  const currency = currencyOf(invoice);
  const lineInputs: LineInput[] = returned.map(({ item, quantity }) => ({
    quantity,
    unit_price: item.unit_price,
    exempt: item.exempt,
    discount_percent: item.discount_percent,
    discount_amount:
      item.discount_percent === null && !new Decimal(item.discount_amount).isZero()
        ? roundMoney(new Decimal(item.discount_amount).times(quantity).div(item.quantity), currency).toFixed()
        : null,
  }));
  let global: GlobalDiscountInput | undefined;
  if (invoice.global_discount_percent !== null) global = { percent: invoice.global_discount_percent };
  if (invoice.global_discount_amount !== null) {
    const whole = totalsOf(invoice, invoice.items).discountBase;
    const share = totalsOf(invoice, lineInputs).discountBase;
    global = { amount: whole.isZero() ? '0' : roundMoney(new Decimal(invoice.global_discount_amount).times(share).div(whole), currency).toFixed() };
  }
  const totals = totalsOf(invoice, lineInputs, global);
  const lines = returned.map(({ item, quantity }, i): NoteLine => ({
    invoice_item_id: item.id,
    description: item.description,
    quantity,
    unit_price: item.unit_price,
    discount_percent: item.discount_percent,
    discount_amount: totals.lines[i]!.discount.toFixed(),
    exempt: totals.lines[i]!.exempt,
    line_total: totals.lines[i]!.total.toFixed(),
  }));
  return amounts(totals, lines, {
    global_discount_percent: global?.percent === undefined ? null : String(global.percent),
    global_discount_amount: global?.amount === undefined ? null : String(global.amount),
    global_discount_description: global ? invoice.global_discount_description : null,
  });
}

export interface ChargeLine {
  description: string;
  quantity: number;
  unit_price: number;
  exempt: boolean;
}

/** A debit note's charge (CodRef 3): its lines under the invoice's tax rate and treatment. */
export function chargeAmounts(invoice: TotalsOwner, items: ChargeLine[]): NoteAmounts {
  const totals = totalsOf(invoice, items);
  const lines = items.map((it, i): NoteLine => ({
    invoice_item_id: null,
    description: it.description,
    quantity: String(it.quantity),
    unit_price: String(it.unit_price),
    discount_percent: null,
    discount_amount: '0',
    exempt: totals.lines[i]!.exempt,
    line_total: totals.lines[i]!.total.toFixed(),
  }));
  return amounts(totals, lines, NO_GLOBAL_DISCOUNT);
}
