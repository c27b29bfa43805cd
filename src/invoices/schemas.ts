import { z } from 'zod';
import { decimalPlaces } from '../money.js';
import { createClientBody } from '../clients/schemas.js';
import { link, pagingQuery, timestamp, uuid } from '../http/schemas.js';

export const invoiceStatuses = ['draft', 'sent', 'viewed', 'paid', 'overdue', 'cancelled'] as const;
export type InvoiceStatus = (typeof invoiceStatuses)[number];

export const locale = z.enum(['es', 'en']);
export type Locale = z.infer<typeof locale>;

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

export const invoiceItemInput = z.strictObject({
  description: z.string().trim().min(1, 'must not be empty').max(1000),
  quantity: z
    .number({ message: 'must be a number' })
    .gt(0)
    .max(1_000_000)
    .refine(maxDecimals(4), 'at most 4 decimals')
    .default(1),
  unit_price: z.number({ message: 'must be a number' }).min(0).max(1e12).refine(maxDecimals(4), 'at most 4 decimals'),
});

export const createInvoiceBody = z
  .strictObject({
    client: createClientBody,
    issue_date: isoDate.optional().meta({ description: "Default: today in the merchant's time zone" }),
    due_date: isoDate.meta({ description: 'On or after issue_date' }),
    is_tax_exempt: z.boolean().default(false),
    tax_inclusive: z.boolean().default(false),
    tax_rate: z
      .number({ message: 'must be a number' })
      .min(0)
      .max(100)
      .refine(maxDecimals(2), 'at most 2 decimals')
      .optional()
      .meta({ description: "Percent; default the merchant's rate (19)" }),
    currency: z
      .string()
      .optional()
      .meta({ description: 'CLP, CLF, USD, EUR, GBP, ARS, BRL, COP, MXN or PEN; default the merchant base currency' }),
    items: z.array(invoiceItemInput).min(1, 'at least 1 item').max(200, 'at most 200 items'),
    external_reference: z.string().max(255).optional(),
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
  updated_since: z.iso.datetime({ offset: true, message: 'must be an RFC 3339 timestamp' }).optional(),
});

export const invoiceItemResource = z.object({
  id: z.string(),
  product_id: z.string().nullable(),
  description: z.string(),
  quantity: z.string(),
  unit_price: z.string(),
  line_total: z.string(),
});

/** Decisions §15: the credit note (type 61) that cancelled the invoice's DTE, or null. */
const creditNote = z
  .object({
    type: z.literal(61),
    folio: z.number().int(),
    status: z.enum(['pending', 'sent', 'accepted', 'accepted_with_objections', 'rejected']),
  })
  .nullable()
  .meta({ id: 'CreditNote', description: "The credit note (nota de crédito, type 61, CodRef 1 \"anula documento\") that cancelled the invoice's DTE, with its folio and its status at the SII; null when none was issued" });

export type CreditNoteStatus = NonNullable<z.infer<typeof creditNote>>['status'];

export const invoiceResource = z
  .object({
    id: z.string(),
    client_id: z.string(),
    client: z.object({ id: z.string(), name: z.string(), email: z.string().nullable(), phone: z.string().nullable() }),
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
    tax_total: z.string(),
    total: z.string(),
    amount_paid: z.string(),
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
  custom_message: z.string().trim().min(1, 'must not be empty').max(5000).optional().meta({
    description: 'Replaces the body of the reminder e-mail; blank lines separate paragraphs',
  }),
});

export const reminderResource = z
  .object({ reminder_id: z.string(), invoice_id: z.string(), sent_at: timestamp, reminder_number: z.number().int() })
  .meta({ id: 'Reminder' });

export const markPaidBody = z.strictObject({
  payment_method: z.string().trim().min(1).max(100).optional().meta({ description: 'Informational, e.g. transfer' }),
  paid_at: z.string().max(100).optional().meta({ description: 'Ignored: the payment is recorded at server time', deprecated: true }),
  notes: z.string().max(1000).optional(),
  payment_amount: z
    .number({ message: 'must be a number' })
    .gt(0)
    .max(1e15)
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
  reason: z.string().trim().max(500).optional(),
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
