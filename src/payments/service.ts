import type { Queryable } from '../db/client.js';
import { AppError } from '../errors.js';
import { iso } from '../http/schemas.js';
import { wireAmount } from '../money.js';
import * as q from './queries.js';
import type { PaymentResource } from './schemas.js';

export type { PaymentRow } from './queries.js';
export type { PaymentResource } from './schemas.js';

/** The Payment of docs/decisions.md §12, as GET /payments/{id} returns it and `payment.*` events carry it. */
export function paymentResource(row: q.PaymentRow): PaymentResource {
  return {
    id: row.id,
    invoice_id: row.invoice_id,
    invoice_number: row.invoice_number,
    amount: wireAmount(row.amount, row.currency),
    currency: row.currency,
    method: row.method,
    provider: row.provider,
    transaction_id: row.transaction_id,
    status: row.status,
    paid_at: iso(row.paid_at),
    created_at: iso(row.created_at)!,
  };
}

/**
 * One payment of the merchant as a resource; 404 `payment_not_found` when absent or another
 * merchant's. Works inside a transaction too (webhook payloads built where the payment is written).
 */
export async function getPaymentResource(db: Queryable, merchantId: string, id: string): Promise<PaymentResource> {
  const row = await q.getPayment(db, merchantId, id);
  if (!row) throw new AppError('payment_not_found', `No payment ${id}.`);
  return paymentResource(row);
}

/** limit + 1 rows, for `page()` to tell whether another page exists. */
export async function listPayments(db: Queryable, merchantId: string, f: q.PaymentFilters, limit: number, offset: number): Promise<PaymentResource[]> {
  const rows = await q.listPayments(db, merchantId, f, limit + 1, offset);
  return rows.map(paymentResource);
}
