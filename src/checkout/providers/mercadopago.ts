import { createHmac, timingSafeEqual } from 'node:crypto';
import { MercadoPagoConfig, Payment, Preference } from 'mercadopago';
import { AppConfig } from 'mercadopago/dist/utils/config/index.js';
import { clock } from '../../clock.js';
import { Decimal } from '../../money.js';
import { ProviderError, type Credentials, type Notification, type PaymentProvider, type PaymentResult } from './provider.js';

// A customer waits on the answer; a gateway slower than this is down for them. The SDK's own
// retries are off: our callers retry (POST /checkout with its Idempotency-Key, Mercado Pago its
// notifications).
const TIMEOUT_MS = 15_000;
const TITLE_MAX = 256;

/**
 * The SDK builds every URL from its static AppConfig.BASE_URL, so one process talks to one Mercado
 * Pago: the real API unless MERCADOPAGO_BASE_URL names another (a test's stand-in).
 */
export function setMercadoPagoBaseUrl(baseUrl: string | undefined): void {
  // Declared readonly, read on every request: the SDK's one switch of address.
  (AppConfig as { BASE_URL: string }).BASE_URL = (baseUrl ?? 'https://api.mercadopago.com').replace(/\/+$/, '');
}

function client(credentials: Credentials): MercadoPagoConfig {
  return new MercadoPagoConfig({ accessToken: credentials.access_token!, options: { timeout: TIMEOUT_MS, maxRetries: 0 } });
}

/** The SDK's call, with Mercado Pago's refusal of the access token told apart; anything else (5xx, timeout, no answer) is unavailability. */
async function asked<T>(call: Promise<T>): Promise<T> {
  return call.catch((err: unknown) => {
    const status = (err as { status?: unknown } | null)?.status;
    if (status === 401 || status === 403) throw new ProviderError('merchant_misconfigured', 'Mercado Pago refused the access token.');
    throw err;
  });
}

/** `ts=…,v1=…` as a map; a malformed header yields what it has. */
function signatureParts(header: string): Map<string, string> {
  return new Map(
    header.split(',').flatMap((part) => {
      const i = part.indexOf('=');
      return i > 0 ? [[part.slice(0, i).trim(), part.slice(i + 1).trim()] as [string, string]] : [];
    }),
  );
}

// A signed notification is good this long either side of our clock (docs/decisions.md §19): one captured
// on the way cannot be replayed later, and a clock a few minutes off still verifies.
const SIGNATURE_FRESH_MS = 10 * 60_000;

/** `ts` as an instant: seconds, or milliseconds when it has 13 digits; null when it is neither. */
function signedAt(ts: string): number | null {
  if (!/^\d{1,13}$/.test(ts)) return null;
  return ts.length === 13 ? Number(ts) : Number(ts) * 1000;
}

const STATUS: Record<string, PaymentResult['status']> = { approved: 'succeeded', rejected: 'failed', cancelled: 'failed' };
// Mercado Pago is still deciding these (a card under review, a cash payment not made yet, an
// authorisation not captured); refunded, charged back or in mediation are neither.
const UNDECIDED = new Set(['pending', 'in_process', 'authorized']);

/**
 * Mercado Pago Checkout Pro through the official SDK (docs/decisions.md §16): a preference per session
 * whose `init_point` the customer pays at; a payment counts only once Mercado Pago's signed
 * notification names it and a lookup confirms it, never on the browser's return. A session whose
 * notification never came is looked for among the payments filed under its reference before it
 * expires.
 */
export function mercadoPagoProvider(): PaymentProvider {
  return {
    name: 'mercadopago',
    simulatesDecline: false,
    credentialFields: ['access_token', 'webhook_secret'],
    async createSession(req) {
      const preference = await asked(
        new Preference(client(req.credentials)).create({
          body: {
            items: [
              {
                id: req.checkoutId,
                title: [...req.description].slice(0, TITLE_MAX).join(''),
                quantity: 1,
                unit_price: Number(req.amount),
                currency_id: req.currency,
              },
            ],
            payer: { email: req.customerEmail },
            external_reference: req.checkoutId,
            // Every outcome comes back to the checkout page, which looks the payment up and sends
            // the customer on to success_url or cancel_url as a Webpay return does (docs/decisions.md §11).
            back_urls: { success: req.pageUrl, failure: req.pageUrl, pending: req.pageUrl },
            auto_return: 'all',
            notification_url: req.notificationUrl,
            expires: true,
            expiration_date_to: req.expiresAt.toISOString(),
          },
        }),
      );
      if (!preference.id || !preference.init_point) throw new Error('Mercado Pago answered a preference without id or init_point');
      // A GET form replaces its action's query with its fields, so the query travels as fields.
      const url = new URL(preference.init_point);
      const fields = Object.fromEntries(url.searchParams);
      url.search = '';
      return { sessionId: preference.id, redirect: { url: url.href, method: 'get', fields } };
    },
    async confirmPayment() {
      // Never called: the notification decides (docs/decisions.md §16), not the customer's return.
      throw new ProviderError('invalid_provider', 'Mercado Pago payments are confirmed by notification.');
    },
    verifyNotification(n: Notification, credentials) {
      if (!n.signature || !credentials.webhook_secret) return false;
      const parts = signatureParts(n.signature);
      const ts = parts.get('ts');
      const v1 = parts.get('v1');
      if (!ts || !v1) return false;
      const at = signedAt(ts);
      if (at === null || Math.abs(clock.now().getTime() - at) > SIGNATURE_FRESH_MS) return false;
      // Mercado Pago's manifest: an alphanumeric id lowercased, a part left out when its value is absent.
      const id = /^[a-z0-9]+$/i.test(n.dataId) ? n.dataId.toLowerCase() : n.dataId;
      const manifest = `id:${id};${n.requestId ? `request-id:${n.requestId};` : ''}ts:${ts};`;
      const expected = createHmac('sha256', credentials.webhook_secret).update(manifest).digest();
      const given = Buffer.from(v1, 'hex');
      return given.length === expected.length && timingSafeEqual(given, expected);
    },
    async paymentStatus(session, credentials) {
      // Every attempt's preference carries our checkout id, so one search covers them all.
      const found = await asked(new Payment(client(credentials)).search({ options: { external_reference: session.checkoutId, status: 'approved' } }));
      // Another charge under our reference (another amount or currency) is not this checkout's.
      const paid = (found.results ?? []).find(
        (p) => p.status === 'approved' && p.currency_id === session.currency && new Decimal(p.transaction_amount ?? 0).eq(session.amount),
      );
      return paid?.id ? { status: 'succeeded', transactionId: String(paid.id), method: paid.payment_type_id ?? 'card' } : null;
    },
    async lookupPayment(paymentId, credentials) {
      const p = await asked(new Payment(client(credentials)).get({ id: paymentId }));
      const status = p.status ? STATUS[p.status] : undefined;
      const method = p.payment_type_id ?? 'card';
      return {
        checkoutId: p.external_reference ?? null,
        amount: new Decimal(p.transaction_amount ?? 0).toFixed(),
        currency: p.currency_id ?? '',
        result: status ? { status, transactionId: String(p.id ?? paymentId), method } : null,
        pending: !status && UNDECIDED.has(p.status ?? ''),
      };
    },
  };
}
