import { z } from 'zod';
import { decimalPlaces } from '../money.js';
import { locales } from '../format.js';
import { createClientBody } from '../clients/schemas.js';
import { link, multiLine, oneLine, oneLineCheck, pagingQuery, rfc3339, timestamp, uuid } from '../http/schemas.js';

export const invoiceStatuses = ['draft', 'sent', 'viewed', 'paid', 'overdue', 'cancelled'] as const;
export type InvoiceStatus = (typeof invoiceStatuses)[number];

export const locale = z.enum(locales);
export type { Locale } from '../format.js';

function maxDecimals(n: number) {
  return (v: number) => decimalPlaces(v) <= n;
}

export const isoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD')
  .refine((s) => {
    const d = new Date(`${s}T00:00:00Z`);
    return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(s);
  }, 'must be a real calendar date')
  .meta({ format: 'date', example: '2026-12-01' });

const discountPercent = z
  .number()
  .gt(0, 'must be greater than 0 and less than 100')
  .lt(100, 'must be greater than 0 and less than 100')
  .refine(maxDecimals(2), 'at most 2 decimals');
const discountAmount = z.number().gt(0, 'must be greater than 0').max(1e12).refine(maxDecimals(4), 'at most 4 decimals');

/** At most one of the two ways of stating a discount. */
function oneDiscount(v: { discount_percent?: number | undefined; discount_amount?: number | undefined }, ctx: z.RefinementCtx) {
  if (v.discount_percent !== undefined && v.discount_amount !== undefined) {
    ctx.addIssue({ code: 'custom', path: ['discount_amount'], message: 'give discount_percent or discount_amount, not both' });
  }
}

export const invoiceItemInput = z
  .strictObject({
    description: multiLine(10).trim().min(1, 'must not be empty').max(1000).meta({ description: 'One line, or up to 10 line breaks (\n or \r\n)' }),
    quantity: z
      .number()
      .gt(0)
      .max(1_000_000)
      .refine(maxDecimals(4), 'at most 4 decimals')
      .default(1),
    unit_price: z.number().min(0).max(1e12).refine(maxDecimals(4), 'at most 4 decimals'),
    discount_percent: discountPercent.optional().meta({ description: "Percent off the line's gross amount (quantity × unit_price); not with discount_amount" }),
    discount_amount: discountAmount.optional().meta({ description: "Amount off the line's gross amount, at most that amount; not with discount_percent" }),
    exempt: z.boolean().default(false).meta({ description: 'An exempt line (IndExe 1): no tax on it. Every line of an is_tax_exempt invoice is exempt' }),
  })
  .superRefine(oneDiscount);

export const globalDiscountInput = z
  .strictObject({
    percent: discountPercent.optional(),
    amount: discountAmount.optional().meta({ description: 'At most the sum of the taxable lines (of the exempt ones on an is_tax_exempt invoice)' }),
    description: oneLine().trim().min(1, 'must not be empty').max(45, "at most 45 characters (the SII's GlosaDR)").optional(),
  })
  .superRefine((v, ctx) => {
    if ((v.percent === undefined) === (v.amount === undefined)) ctx.addIssue({ code: 'custom', path: ['percent'], message: 'give percent or amount, exactly one' });
  })
  .meta({ id: 'GlobalDiscountInput', description: 'A discount on the taxable lines (on the exempt lines of an is_tax_exempt invoice): the SII\'s DscRcgGlobal' });

// The SII's TpoDocRef: a tax document's type, or one of its codes of other documents (801 orden de
// compra … 820), HES, HEM, or SET for a certification case.
const REFERENCE_TYPES = new Set([
  ...['29', '30', '32', '33', '34', '35', '38', '39', '40', '41', '43', '45', '46', '48', '50', '52', '55', '56', '60', '61'],
  ...['101', '102', '103', '104', '105', '106', '108', '109', '110', '111', '112'],
  ...['801', '802', '803', '804', '805', '806', '807', '808', '809', '810', '811', '812', '813', '814', '815', '820'],
  ...['HES', 'HEM', 'SET'],
]);

export const documentReferenceInput = z
  .strictObject({
    type: z
      .union([z.string().superRefine(oneLineCheck), z.number().int()], { message: 'must be a string or an integer' })
      .transform((v) => String(v).trim().toUpperCase())
      .refine((v) => REFERENCE_TYPES.has(v), "must be one of the SII's reference types: 801 (orden de compra), 802 (nota de pedido), 803 (contrato), 804–815, 820, HES, HEM, SET or a tax document's type such as 33, 52 or 61")
      .meta({ description: "The SII's TpoDocRef: 801 orden de compra, 802 nota de pedido, 803 contrato, HES, HEM, SET (a certification case) or a DTE type", example: '801' }),
    folio: z
      .union([z.string().superRefine(oneLineCheck), z.number().int().min(0)], { message: 'must be a string or an integer' })
      .transform((v) => String(v).trim())
      .refine((v) => /^[0-9A-Za-z-]{1,18}$/.test(v), 'must be 1 to 18 letters, digits or dashes')
      .optional()
      .meta({ description: 'The referenced document\'s number; "0" by default for SET, required otherwise' }),
    date: isoDate.optional().meta({ description: "The referenced document's date; default the issue date" }),
    reason: oneLine().trim().min(1, 'must not be empty').max(90, "at most 90 characters (the SII's RazonRef)").optional(),
  })
  .superRefine((v, ctx) => {
    if (v.folio === undefined && v.type !== 'SET') ctx.addIssue({ code: 'custom', path: ['folio'], message: 'is required (only a SET reference defaults it to "0")' });
  })
  .meta({ id: 'DocumentReferenceInput' });
export type DocumentReferenceInput = z.output<typeof documentReferenceInput>;

export const documentReference = z
  .object({ type: z.string(), folio: z.string(), date: z.string(), reason: z.string().nullable() })
  .meta({ id: 'DocumentReference', description: "A reference to another document, the SII's Referencia" });

/** A note's own reference to its document is the SII's 40th line (docs/tax-documents.md). */
export const MAX_INVOICE_REFERENCES = 40;
export const MAX_NOTE_REFERENCES = 39;

export const createInvoiceBody = z
  .strictObject({
    client: createClientBody,
    issue_date: isoDate.optional().meta({ description: "Default: today in the merchant's time zone" }),
    due_date: isoDate.meta({ description: 'On or after issue_date' }),
    is_tax_exempt: z.boolean().default(false),
    tax_inclusive: z.boolean().default(false),
    tax_rate: z
      .number()
      .min(0)
      .max(100)
      .refine(maxDecimals(2), 'at most 2 decimals')
      .optional()
      .meta({ description: "Percent; default the merchant's rate (19). An invoice that gets a factura or boleta (docs/tax-documents.md) is sent only at 19, Chile's IVA" }),
    currency: z
      .string()
      .optional()
      .meta({ description: 'CLP, CLF, USD, EUR, GBP, ARS, BRL, COP, MXN or PEN; default the merchant base currency' }),
    items: z.array(invoiceItemInput).min(1, 'at least 1 item').max(200, 'at most 200 items'),
    global_discount: globalDiscountInput.optional(),
    references: z.array(documentReferenceInput).max(MAX_INVOICE_REFERENCES, `at most ${MAX_INVOICE_REFERENCES} references`).default([]),
    external_reference: oneLine().max(255).optional(),
    send_immediately: z.boolean().default(false),
    locale: locale.optional().meta({ description: "Language of PDF and e-mail; default the merchant's (es)" }),
  })
  .meta({ id: 'CreateInvoiceRequest' });
export type CreateInvoiceInput = z.output<typeof createInvoiceBody>;

export const bulkInvoicesBody = z.strictObject({
  invoices: z
    .array(z.unknown().meta({ description: 'Same shape as the POST /invoices body; each item is validated on its own' }))
    .min(1, 'at least 1 invoice')
    .max(50, 'at most 50 invoices'),
});

export const invoiceIdParams = z.strictObject({ invoice_id: uuid });

export const listInvoicesQuery = z.strictObject({
  ...pagingQuery,
  status: z.enum(invoiceStatuses).optional(),
  client_id: uuid.optional(),
  external_reference: z.string().max(255).optional(),
  updated_since: rfc3339.optional(),
});

export const invoiceItemResource = z.object({
  id: z.string(),
  product_id: z.string().nullable(),
  description: z.string(),
  quantity: z.string(),
  unit_price: z.string(),
  discount_percent: z.string().nullable(),
  discount_amount: z.string(),
  exempt: z.boolean(),
  line_total: z.string(),
});

/** docs/decisions.md §15: the credit note (type 61) that cancelled the invoice's DTE, or null. */
const creditNote = z
  .object({
    type: z.literal(61),
    folio: z.number().int(),
    status: z.enum(['pending', 'sent', 'accepted', 'accepted_with_objections', 'rejected']),
  })
  .nullable()
  .meta({ id: 'CancellingCreditNote', description: "The credit note (nota de crédito, type 61, CodRef 1 \"anula documento\") that cancelled the invoice's DTE, with its folio and its status at the SII; null when none was issued" });

export type CreditNoteStatus = NonNullable<z.infer<typeof creditNote>>['status'];

export const invoiceResource = z
  .object({
    id: z.string(),
    client_id: z.string(),
    client: z.object({
      id: z.string(),
      name: z.string(),
      email: z.string().nullable(),
      phone: z.string().nullable(),
      rut: z.string().nullable(),
      address: z.string().nullable(),
      giro: z.string().nullable(),
      comuna: z.string().nullable(),
      ciudad: z.string().nullable(),
    }),
    invoice_number: z.string().nullable(),
    external_reference: z.string().nullable(),
    status: z.enum(invoiceStatuses),
    currency: z.string(),
    exchange_rate: z.string().nullable(),
    base_currency: z.string().nullable(),
    issue_date: z.string(),
    due_date: z.string(),
    is_tax_exempt: z.boolean(),
    tax_inclusive: z.boolean(),
    tax_rate: z.string(),
    subtotal: z.string(),
    taxable_amount: z.string(),
    exempt_amount: z.string(),
    discount_total: z.string(),
    global_discount: z
      .object({ percent: z.string().nullable(), amount: z.string().nullable(), description: z.string().nullable() })
      .nullable()
      .meta({ description: 'The global discount as asked (a percent or an amount); discount_total is what it took off' }),
    references: z.array(documentReference),
    tax_total: z.string(),
    total: z.string(),
    amount_paid: z.string(),
    amount_credited: z.string().meta({ description: "The sum of the invoice's credit notes" }),
    amount_debited: z.string().meta({ description: "The sum of the invoice's debit notes" }),
    amount_due: z.string().meta({ description: 'total + amount_debited − amount_credited − amount_paid, never below 0' }),
    public_token: z.string(),
    public_url: z.string(),
    payment_proof_file_id: z.string().nullable(),
    dte_folio: z.number().int().nullable(),
    dte_type: z.number().int().nullable(),
    dte_status: z.string().nullable(),
    dte_track_id: z.string().nullable(),
    credit_note: creditNote,
    is_legacy: z.boolean(),
    payment_reference: z
      .object({ provider: z.string(), transaction_id: z.string(), paid_at: timestamp.nullable() })
      .nullable(),
    items: z.array(invoiceItemResource),
    created_at: timestamp,
    updated_at: timestamp,
    _links: z.object({ self: link, pdf: link, public: link }),
  })
  .meta({ id: 'Invoice' });
export type InvoiceResource = z.output<typeof invoiceResource>;

export const invoiceCreated = z
  .object({
    invoice_id: z.string(),
    status: z.enum(invoiceStatuses),
    total: z.string(),
    currency: z.string(),
    public_url: z.string(),
    client_id: z.string(),
    client_name: z.string(),
    created_at: timestamp,
    invoice_number: z.string().nullable(),
    external_reference: z.string().nullable(),
  })
  .meta({ id: 'InvoiceCreated' });

export const bulkResult = z.object({
  total: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  results: z.array(
    z.object({
      index: z.number().int(),
      success: z.boolean(),
      invoice: invoiceCreated.optional(),
      error: z.string().optional(),
      message: z.string().optional(),
      details: z.record(z.string(), z.unknown()).nullable().optional(),
    }),
  ),
});

export const invoiceStatusSummary = z.object({
  invoice_id: z.string(),
  invoice_number: z.string().nullable(),
  status: z.string(),
  total: z.string(),
  currency: z.string(),
  public_url: z.string(),
  issue_date: z.string(),
  due_date: z.string(),
  paid_at: timestamp.nullable(),
  reminders_sent: z.number().int(),
  last_viewed_at: timestamp.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});

// The transitions' requests and answers (transitions.ts).

export const sendQuery = z.strictObject({
  locale: locale.optional().meta({ description: "Language of the e-mail and PDF; default the invoice's own (set at create)" }),
});

export const sendResult = z
  .object({
    invoice_id: z.string(),
    invoice_number: z.string(),
    status: z.enum(invoiceStatuses),
    public_url: z.string(),
    sent_at: timestamp,
  })
  .meta({ id: 'InvoiceSent' });

export const remindBody = z.strictObject({
  custom_message: multiLine(50).trim().min(1, 'must not be empty').max(5000).optional().meta({
    description: 'Replaces the body of the reminder e-mail; blank lines separate paragraphs; at most 50 line breaks (\n or \r\n)',
  }),
});

export const reminderResource = z
  .object({ reminder_id: z.string(), invoice_id: z.string(), sent_at: timestamp, reminder_number: z.number().int() })
  .meta({ id: 'Reminder' });

export const markPaidBody = z.strictObject({
  payment_method: oneLine().trim().min(1).max(100).optional().meta({ description: 'Informational, e.g. transfer' }),
  paid_at: z.string().max(100).optional().meta({ description: 'Ignored: the payment is recorded at server time', deprecated: true }),
  notes: multiLine(50).max(1000).optional().meta({ description: 'At most 50 line breaks (\n or \r\n)' }),
  // 0 is a total too (an invoice of free lines); 4 decimals are the most any currency has (CLF),
  // so a body that no invoice could match is refused before the invoice is looked up.
  payment_amount: z
    .number()
    .min(0)
    .max(1e15)
    .refine(maxDecimals(4), 'at most 4 decimals')
    .optional()
    .meta({ description: "When given, must equal the invoice total at the currency's precision" }),
});

export const markPaidResult = z
  .object({
    invoice_id: z.string(),
    status: z.enum(invoiceStatuses),
    paid_at: timestamp,
    invoice_number: z.string().nullable(),
    payment_method: z.string().nullable(),
  })
  .meta({ id: 'InvoicePaid' });

export const cancelBody = z.strictObject({
  reason: oneLine().trim().max(500).optional(),
});

export const cancelResult = z
  .object({
    invoice_id: z.string(),
    status: z.enum(['cancelled', 'deleted']),
    cancelled_at: timestamp,
    invoice_number: z.string().nullable(),
    reason: z.string().nullable(),
    credit_note: creditNote,
  })
  .meta({ id: 'InvoiceCancelled' });
