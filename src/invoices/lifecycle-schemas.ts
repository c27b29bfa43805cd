import { z } from 'zod';
import { timestamp } from '../http/schemas.js';
import { creditNote, invoiceStatuses, locale } from './schemas.js';

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
