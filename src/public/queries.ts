import type { Queryable } from '../db/client.js';
import type { InvoiceStatus } from '../invoices/schemas.js';

export interface TokenInvoice {
  id: string;
  merchant_id: string;
  status: InvoiceStatus;
  locale: 'es' | 'en';
}

/** The invoice behind a public token, drafts included (the caller hides them). */
export async function invoiceByToken(db: Queryable, token: string): Promise<TokenInvoice | null> {
  const rows = await db<TokenInvoice[]>`SELECT id, merchant_id, status, locale FROM invoices WHERE public_token = ${token}`;
  return rows[0] ?? null;
}

/**
 * The first view: sent → viewed, guarded in the statement, so of any number of concurrent first
 * views exactly one matches (the others wait for its row lock, then find `viewed`). Null when the
 * invoice is not in `sent`.
 */
export async function markViewed(db: Queryable, token: string, now: Date): Promise<TokenInvoice | null> {
  const rows = await db<TokenInvoice[]>`
    UPDATE invoices SET status = 'viewed', last_viewed_at = ${now}, updated_at = ${now}
     WHERE public_token = ${token} AND status = 'sent'
    RETURNING id, merchant_id, status, locale`;
  return rows[0] ?? null;
}

/** Any later view: only `last_viewed_at` moves (updated_at follows changes of state, not views). */
export async function touchViewed(db: Queryable, token: string, now: Date): Promise<TokenInvoice | null> {
  const rows = await db<TokenInvoice[]>`
    UPDATE invoices SET last_viewed_at = ${now}
     WHERE public_token = ${token} AND status <> 'draft'
    RETURNING id, merchant_id, status, locale`;
  return rows[0] ?? null;
}
