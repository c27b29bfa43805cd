import { z } from 'zod';
import type { Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import type { InvoiceDeps } from '../invoices/transitions.js';
import { Decimal } from '../money.js';
import type { SecretBox } from '../secret-box.js';
import { loadCredentials } from './credentials.js';
import { knownProvider, lookupPayment, providerFor } from './providers/registry.js';
import { ProviderError, type Credentials, type Notification, type PaymentProvider } from './providers/provider.js';
import { recordedPaymentStatus, type CheckoutRow } from './queries.js';
import { applyNotifiedPayment } from './pay.js';

export type NotificationOutcome = 'applied' | 'ignored';

function notFound(): AppError {
  return new AppError('route_not_found', 'No such notification address.');
}

function unsigned(provider: PaymentProvider): AppError {
  return new AppError('invalid_signature', `The notification is not signed with this account's ${provider.name} secret.`);
}

/**
 * A gateway's notification to one merchant (docs/decisions.md §16): verified with the merchant's secret
 * for that gateway (401 `invalid_signature` otherwise), then the payment it names is looked up
 * at the gateway, never taken from the notification, and applied to the session its reference
 * names. Other topics, undecided payments and foreign references are acknowledged and ignored.
 */
export async function receiveNotification(
  sql: Sql,
  secrets: SecretBox,
  providerName: string,
  merchantId: string,
  notification: Notification,
  deps: InvoiceDeps,
): Promise<NotificationOutcome> {
  let provider: PaymentProvider;
  try {
    provider = providerFor(providerName);
  } catch {
    throw notFound();
  }
  if (!provider.verifyNotification || !z.uuid().safeParse(merchantId).success) throw notFound();
  let credentials: Credentials;
  try {
    credentials = await loadCredentials(sql, secrets, merchantId, provider);
  } catch {
    // No secret to verify with: nothing this account sent us can be trusted.
    throw unsigned(provider);
  }
  if (!provider.verifyNotification(notification, credentials)) throw unsigned(provider);
  if (notification.type !== 'payment') return 'ignored';
  const notified = await lookupPayment(provider, notification.dataId, credentials);
  if (!notified.result || !notified.checkoutId || !z.uuid().safeParse(notified.checkoutId).success) return 'ignored';
  const applied = await applyNotifiedPayment(sql, merchantId, provider, notified.checkoutId, notified, notified.result, deps);
  return applied ? 'applied' : 'ignored';
}

/**
 * What the payment a back URL names proved, for this session: this checkout's payment approved or
 * declined (and applied), or still being decided at the gateway; null when it proves nothing (an
 * unknown id, another checkout's payment, an undecided status of another kind, or a gateway that
 * could not be asked).
 */
export type ReturnedPayment = 'succeeded' | 'failed' | 'pending' | null;

/**
 * The customer back on the checkout page from a gateway's page, with the id of the payment made
 * there (Mercado Pago's `payment_id`), before or after the gateway's notification. The return is
 * no proof (docs/decisions.md §16): a payment recorded for this session's invoice already speaks for
 * itself; otherwise, while the session is pending, the payment is looked up at the gateway and
 * applied exactly as its notification would be. A payment of another checkout changes nothing; a
 * gateway that cannot be asked leaves the decision to the notification.
 */
export async function settleReturnedPayment(sql: Sql, secrets: SecretBox, s: CheckoutRow, paymentId: string, deps: InvoiceDeps): Promise<ReturnedPayment> {
  const provider = knownProvider(s.provider);
  if (!provider?.lookupPayment) return null;
  const recorded = await recordedPaymentStatus(sql, s, paymentId);
  if (recorded) return recorded;
  if (s.status !== 'pending') return null;
  try {
    const credentials = await loadCredentials(sql, secrets, s.merchant_id, provider);
    const returned = await lookupPayment(provider, paymentId, credentials);
    // Another checkout's payment, or a charge of another amount under this one's reference.
    if (returned.checkoutId !== s.id || returned.currency !== s.currency || !new Decimal(s.amount).eq(returned.amount)) return null;
    if (!returned.result) return returned.pending ? 'pending' : null;
    await applyNotifiedPayment(sql, s.merchant_id, provider, s.id, returned, returned.result, deps);
    return returned.result.status;
  } catch (err) {
    if (err instanceof ProviderError || err instanceof AppError) return null;
    throw err;
  }
}
