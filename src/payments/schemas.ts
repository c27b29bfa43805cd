import { z } from 'zod';
import { pagingQuery, rfc3339, timestamp, uuid } from '../http/schemas.js';

export const paymentStatuses = ['succeeded', 'failed'] as const;
export type PaymentStatus = (typeof paymentStatuses)[number];

export const paymentIdParams = z.strictObject({ payment_id: uuid });

export const listPaymentsQuery = z
  .strictObject({
    ...pagingQuery,
    invoice_id: uuid.optional().meta({ description: 'Only payments of this invoice' }),
    since: rfc3339.optional().meta({ description: 'Only payments recorded at or after this instant (created_at ≥ since)' }),
    until: rfc3339.optional().meta({ description: 'Only payments recorded before this instant (created_at < until)' }),
  })
  .refine((q) => q.since === undefined || q.until === undefined || Date.parse(q.until) > Date.parse(q.since), {
    path: ['until'],
    message: 'must be later than since',
  });
export type ListPaymentsQuery = z.output<typeof listPaymentsQuery>;

export const paymentResource = z
  .object({
    id: z.string(),
    invoice_id: z.string(),
    invoice_number: z.string().nullable(),
    amount: z.string().meta({ description: "Decimal string: two decimals, four for CLF", example: '11900.00' }),
    currency: z.string(),
    method: z.string().nullable().meta({ description: 'As given when the payment was recorded (informational)' }),
    provider: z.string().meta({ description: '`manual` for mark-paid, otherwise the payment provider (e.g. `sandbox`)' }),
    transaction_id: z.string(),
    status: z.enum(paymentStatuses),
    paid_at: timestamp.nullable().meta({ description: 'Null for a failed payment' }),
    created_at: timestamp,
  })
  .meta({ id: 'Payment' });
export type PaymentResource = z.output<typeof paymentResource>;
