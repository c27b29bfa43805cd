import type { Queryable } from '../db/client.js';
import type { PaymentStatus } from './schemas.js';

export interface PaymentRow {
  id: string;
  merchant_id: string;
  invoice_id: string;
  invoice_number: string | null;
  amount: string;
  currency: string;
  method: string | null;
  provider: string;
  transaction_id: string;
  status: PaymentStatus;
  paid_at: Date | null;
  created_at: Date;
}

export interface PaymentFilters {
  invoice_id?: string;
  /** Inclusive lower bound on created_at (RFC 3339). */
  since?: string;
  /** Exclusive upper bound on created_at (RFC 3339). */
  until?: string;
}

const columns = (db: Queryable) => db`
  p.id, p.merchant_id, p.invoice_id, i.invoice_number, p.amount, p.currency, p.method, p.provider,
  p.transaction_id, p.status, p.paid_at, p.created_at`;

export async function getPayment(db: Queryable, merchantId: string, id: string): Promise<PaymentRow | null> {
  const rows = await db<PaymentRow[]>`
    SELECT ${columns(db)}
      FROM payments p LEFT JOIN invoices i ON i.id = p.invoice_id
     WHERE p.merchant_id = ${merchantId} AND p.id = ${id}`;
  return rows[0] ?? null;
}

/** Newest first (created_at, then id), the order of the payments_merchant_created index. */
export async function listPayments(db: Queryable, merchantId: string, f: PaymentFilters, limit: number, offset: number): Promise<PaymentRow[]> {
  return db<PaymentRow[]>`
    SELECT ${columns(db)}
      FROM payments p LEFT JOIN invoices i ON i.id = p.invoice_id
     WHERE p.merchant_id = ${merchantId}
       ${f.invoice_id ? db`AND p.invoice_id = ${f.invoice_id}` : db``}
       ${f.since ? db`AND p.created_at >= ${f.since}::timestamptz` : db``}
       ${f.until ? db`AND p.created_at < ${f.until}::timestamptz` : db``}
     ORDER BY p.created_at DESC, p.id DESC
     LIMIT ${limit} OFFSET ${offset}`;
}

export type NewPayment = Omit<PaymentRow, 'invoice_number'> & { notes: string | null };

export async function insertPayment(db: Queryable, p: NewPayment): Promise<void> {
  await db`
    INSERT INTO payments (id, merchant_id, invoice_id, amount, currency, method, notes, provider, transaction_id, status, paid_at, created_at)
    VALUES (${p.id}, ${p.merchant_id}, ${p.invoice_id}, ${p.amount}::numeric, ${p.currency}, ${p.method}, ${p.notes},
            ${p.provider}, ${p.transaction_id}, ${p.status}, ${p.paid_at}, ${p.created_at})`;
}

/** The gateway's payment is recorded already (a repeated return, a replayed notification). */
export async function paymentRecorded(db: Queryable, provider: string, transactionId: string): Promise<boolean> {
  const rows = await db`SELECT 1 FROM payments WHERE provider = ${provider} AND transaction_id = ${transactionId}`;
  return rows.length > 0;
}
