import type { Queryable } from '../db/client.js';

export interface StoredPdf {
  content: Buffer;
  sha256: string;
  /** What the file name is made of. */
  invoice: { id: string; invoice_number: string | null; status: string; locale: 'es' | 'en' };
}

/** The stored PDF of one of the merchant's invoices, in one round trip (the hot path). */
export async function storedPdfFor(db: Queryable, merchantId: string, invoiceId: string): Promise<StoredPdf | null> {
  const rows = await db<StoredPdf[]>`
    SELECT p.content, p.sha256,
           json_build_object('id', i.id, 'invoice_number', i.invoice_number, 'status', i.status, 'locale', i.locale) AS invoice
      FROM invoice_pdfs p JOIN invoices i ON i.id = p.invoice_id
     WHERE i.merchant_id = ${merchantId} AND p.invoice_id = ${invoiceId}`;
  return rows[0] ?? null;
}

/** Keeps the first rendering: a concurrent second one is dropped, never overwrites. True when this one is kept. */
export async function insertPdfIfAbsent(db: Queryable, invoiceId: string, content: Buffer, sha256: string, now: Date): Promise<boolean> {
  const rows = await db`
    INSERT INTO invoice_pdfs (invoice_id, content, sha256, created_at)
    VALUES (${invoiceId}, ${content}, ${sha256}, ${now})
    ON CONFLICT (invoice_id) DO NOTHING
    RETURNING invoice_id`;
  return rows.length > 0;
}

/** The merchant of an invoice, for a job that is handed only the invoice id. */
export async function invoiceMerchantId(db: Queryable, invoiceId: string): Promise<string | null> {
  const rows = await db<{ merchant_id: string }[]>`SELECT merchant_id FROM invoices WHERE id = ${invoiceId}`;
  return rows[0]?.merchant_id ?? null;
}
