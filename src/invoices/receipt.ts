import { z } from 'zod';
import type { QueuedEmail } from '../email-queue/queue.js';
import { iso } from '../http/schemas.js';
import { wireAmount } from '../money.js';
import type { InvoiceRow } from './queries.js';

/**
 * A receipt e-mail's payload: written by the pay transition, checked with this same schema by
 * the e-mail job (old jobs outlive deploys: the payload is checked, never trusted).
 */
export const receiptData = z.object({ payment_id: z.string(), amount: z.string(), paid_at: z.string() });
export type ReceiptData = z.infer<typeof receiptData>;

/** The receipt of the payment that paid `invoice`, once per payment. */
export function receiptEmail(invoice: InvoiceRow, paymentId: string, paidAt: Date): QueuedEmail {
  const data: ReceiptData = { payment_id: paymentId, amount: wireAmount(invoice.total, invoice.currency), paid_at: iso(paidAt)! };
  return {
    merchant_id: invoice.merchant_id,
    invoice_id: invoice.id,
    kind: 'receipt',
    dedupe_key: `receipt:${paymentId}`,
    to_address: invoice.client_email,
    locale: invoice.locale,
    data,
  };
}
