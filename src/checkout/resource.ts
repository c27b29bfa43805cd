import type { Queryable } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { iso } from '../http/schemas.js';
import type { InvoiceRow } from '../invoices/queries.js';
import { checkoutUrl } from './urls.js';
import * as q from './queries.js';
import type { CheckoutSessionResource, CheckoutStatus } from './schemas.js';

/**
 * A pending session past its deadline can no longer be paid: it reads as expired at once, before
 * the expiry job has cancelled its invoice.
 */
export function effectiveStatus(row: q.CheckoutRow, now: Date): CheckoutStatus {
  return row.status === 'pending' && row.expires_at <= now ? 'expired' : row.status;
}

/** The session as the API returns it and `checkout.*` events carry it (docs/decisions.md §14). */
export function checkoutResource(row: q.CheckoutRow, publicBase: string, now: Date = clock.now()): CheckoutSessionResource {
  return {
    checkout_id: row.id,
    checkout_url: checkoutUrl(publicBase, row.token),
    status: effectiveStatus(row, now),
    payment_status: row.payment_status,
    expires_at: iso(row.expires_at)!,
    external_reference: row.external_reference,
    completed_at: iso(row.completed_at),
    invoice_id: row.invoice_id,
  };
}

export async function getCheckoutStatus(db: Queryable, merchantId: string, id: string, publicBase: string): Promise<CheckoutSessionResource> {
  const row = await q.getSession(db, merchantId, id);
  if (!row) throw new AppError('checkout_not_found', `No checkout session ${id}.`);
  return checkoutResource(row, publicBase);
}

/**
 * A session POST /checkout made owns its invoice: the invoice exists for it and ends with it. Any
 * other session was opened from the invoice's hosted page (docs/decisions.md §11), leads back there, and
 * leaves the invoice as it is when it expires.
 */
export function ownsInvoice(invoice: Pick<InvoiceRow, 'source'>): boolean {
  return invoice.source === 'checkout';
}
