import type { Sql } from '../db/client.js';
import { clock } from '../clock.js';
import { newId, randomToken } from '../ids.js';
import { enqueue, queues } from '../queue/boss.js';
import { getMerchant } from '../merchants/queries.js';
import { OPEN_STATUSES } from '../invoices/lifecycle-queries.js';
import { getInvoice, type InvoiceWithItems } from '../invoices/queries.js';
import type { InvoiceDeps } from '../invoices/service.js';
import { Decimal } from '../money.js';
import { openSession, providerFor } from './providers/registry.js';
import { expireCheckout } from './service.js';
import * as q from './queries.js';

export interface InvoiceSessionDeps extends InvoiceDeps {
  /** How long a session can be paid (CHECKOUT_TTL_SECONDS), as for POST /checkout. */
  ttlSeconds: number;
}

/** The session to send the customer to, or nothing to pay (paid, cancelled, nothing due, no provider). */
export type InvoiceCheckout = { kind: 'session'; session: q.CheckoutRow } | { kind: 'unpayable' };

// The session's description column, and what a gateway's page shows of it.
const DESCRIPTION_MAX = 1000;

/** What is being paid, as the checkout page and the gateway show it: the invoice's items. */
function describe(invoice: InvoiceWithItems): string {
  // Counted in code points, so a cut never splits a character in two.
  const chars = [...invoice.items.map((it) => it.description).join('\n')];
  return chars.length <= DESCRIPTION_MAX ? chars.join('') : `${chars.slice(0, DESCRIPTION_MAX - 1).join('')}…`;
}

/** The amount still due of an invoice the customer can pay now, or null. */
export function amountDue(invoice: Pick<InvoiceWithItems, 'status' | 'total' | 'amount_paid'>): string | null {
  if (!(OPEN_STATUSES as readonly string[]).includes(invoice.status)) return null;
  const due = new Decimal(invoice.total).minus(invoice.amount_paid);
  return due.gt(0) ? due.toFixed() : null;
}

/**
 * Decisions §11: the hosted invoice page's Pay. The invoice's pending session while it can be
 * paid; otherwise a new one, opened as POST /checkout opens its own: the gateway is asked with no
 * transaction open, then one transaction expires a pending session past its deadline (its expiry
 * job may not have run yet) and inserts the new one, guarded in SQL on the invoice still being
 * open and having no pending session. A click that loses that race gets the winner's session, so
 * two clicks make one session; the gateway session the loser opened is never used and lapses.
 * Success and cancel lead back to the invoice page.
 */
export async function invoiceCheckout(sql: Sql, merchantId: string, invoiceId: string, deps: InvoiceSessionDeps): Promise<InvoiceCheckout> {
  const current = await q.pendingSessionOfInvoice(sql, merchantId, invoiceId);
  if (current && current.expires_at > clock.now()) return { kind: 'session', session: current };
  const [invoice, merchant] = await Promise.all([getInvoice(sql, merchantId, invoiceId), getMerchant(sql, merchantId)]);
  const amount = invoice && amountDue(invoice);
  if (!invoice || !merchant?.payment_provider || !amount) return { kind: 'unpayable' };
  const provider = providerFor(merchant.payment_provider);
  const checkoutId = newId();
  const description = describe(invoice);
  const expiresAt = new Date(clock.now().getTime() + deps.ttlSeconds * 1000);
  const opened = await openSession(provider, {
    checkoutId,
    merchantId,
    amount,
    currency: invoice.currency,
    description,
    customerEmail: invoice.client_email,
    expiresAt,
  });
  const page = `${deps.urls.publicBase}/i/${invoice.public_token}`;
  return sql.begin(async (tx): Promise<InvoiceCheckout> => {
    const now = clock.now();
    const stale = await q.pendingSessionOfInvoice(tx, merchantId, invoiceId);
    if (stale && stale.expires_at <= now) await expireCheckout(tx, stale.id, now, deps);
    const row = await q.insertInvoiceSession(tx, {
      id: checkoutId,
      merchant_id: merchantId,
      invoice_id: invoiceId,
      token: randomToken(),
      csrf_token: randomToken(),
      amount,
      currency: invoice.currency,
      description,
      customer_name: invoice.client_name,
      customer_email: invoice.client_email,
      success_url: page,
      cancel_url: page,
      external_reference: invoice.external_reference,
      locale: invoice.locale,
      provider: provider.name,
      provider_session_id: opened.sessionId,
      expires_at: expiresAt,
      created_at: now,
    });
    if (row) {
      await enqueue(deps.boss, tx, queues.checkoutExpire.name, { checkout_id: row.id }, { startAfter: expiresAt, singletonKey: row.id });
      return { kind: 'session', session: row };
    }
    const winner = await q.pendingSessionOfInvoice(tx, merchantId, invoiceId);
    return winner ? { kind: 'session', session: winner } : { kind: 'unpayable' };
  });
}
