import type { Queryable } from '../db/client.js';
import type { TokenInvoice } from '../invoices/queries.js';

/** The invoice behind a public token, drafts included (the caller hides them). */
export async function invoiceByToken(db: Queryable, token: string): Promise<TokenInvoice | null> {
  const rows = await db<TokenInvoice[]>`SELECT id, merchant_id, status, locale FROM invoices WHERE public_token = ${token}`;
  return rows[0] ?? null;
}
