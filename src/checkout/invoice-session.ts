import type { Sql } from '../db/client.js';
import { clock } from '../clock.js';
import { OPEN_STATUSES } from '../invoices/transition-queries.js';
import { getInvoiceWithItems, type InvoiceWithItems } from '../invoices/queries.js';
import type { InvoiceDeps } from '../invoices/transitions.js';
import { Decimal } from '../money.js';
import { providerFor } from './providers/registry.js';
import { chargingMerchant, loadCredentials } from './credentials.js';
import { expireCheckout, scheduleExpiry } from './expire.js';
import { newSession, openGatewaySession, type GatewayDeps } from './gateway-session.js';
import * as q from './queries.js';

/** How long a session can be paid, as for POST /checkout, the gateway's credentials, and what expiring one needs. */
export type InvoiceSessionDeps = InvoiceDeps & Pick<GatewayDeps, 'ttlSeconds' | 'secrets'>;

/** The session to send the customer to, or nothing to pay (paid, cancelled, nothing due, a merchant that cannot charge). */
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
 * docs/decisions.md §11: the hosted invoice page's Pay. The invoice's pending session while it can be
 * paid; otherwise a new one, opened as POST /checkout opens its own: the gateway is asked with no
 * transaction open, then one transaction expires a pending session past its deadline (its expiry
 * job may not have run yet) and inserts the new one, guarded in SQL on the invoice still being
 * open and having no pending session. A click that loses that race gets the winner's session, so
 * two clicks make one session; the gateway session the loser opened is never used and lapses.
 * Success and cancel lead back to `invoicePage`.
 */
export async function invoiceCheckout(
  sql: Sql,
  merchantId: string,
  invoiceId: string,
  invoicePage: string,
  deps: InvoiceSessionDeps,
): Promise<InvoiceCheckout> {
  const current = await q.pendingSessionOfInvoice(sql, merchantId, invoiceId);
  if (current && current.expires_at > clock.now()) return { kind: 'session', session: current };
  const [invoice, merchant] = await Promise.all([getInvoiceWithItems(sql, merchantId, invoiceId), chargingMerchant(sql, merchantId)]);
  const amount = invoice && amountDue(invoice);
  // As the page decides whether it shows Pay: a stale page's Pay leads back to it, which says why.
  if (!invoice || !merchant?.can_charge || !amount) return { kind: 'unpayable' };
  const description = describe(invoice);
  const provider = providerFor(merchant.payment_provider);
  const opened = await openGatewaySession(
    provider,
    await loadCredentials(sql, deps.secrets, merchantId, provider),
    { merchantId, amount, currency: invoice.currency, description, customerEmail: invoice.client_email },
    clock.now(),
    { ttlSeconds: deps.ttlSeconds, publicBase: deps.urls.publicBase },
  );
  return sql.begin(async (tx): Promise<InvoiceCheckout> => {
    const now = clock.now();
    const stale = await q.pendingSessionOfInvoice(tx, merchantId, invoiceId);
    if (stale && stale.expires_at <= now) await expireCheckout(tx, stale.id, now, deps);
    const row = await q.insertInvoiceSession(
      tx,
      newSession(opened, {
        merchant_id: merchantId,
        invoice_id: invoiceId,
        description,
        customer_name: invoice.client_name,
        customer_email: invoice.client_email,
        success_url: invoicePage,
        cancel_url: invoicePage,
        external_reference: invoice.external_reference,
        locale: invoice.locale,
        created_at: now,
      }),
    );
    if (row) {
      await scheduleExpiry(tx, deps.boss, row);
      return { kind: 'session', session: row };
    }
    const winner = await q.pendingSessionOfInvoice(tx, merchantId, invoiceId);
    return winner ? { kind: 'session', session: winner } : { kind: 'unpayable' };
  });
}
