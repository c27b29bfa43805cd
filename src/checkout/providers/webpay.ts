import { Environment, Options, WebpayPlus } from 'transbank-sdk';
import { Decimal } from '../../money.js';
import { ProviderError, type Credentials, type PaymentProvider, type PaymentResult } from './provider.js';

// Webpay answers in seconds; the SDK's default of ten minutes would hold a customer's request
// (and a checkout's retry) for as long.
const TIMEOUT_MS = 15_000;
// Webpay's limit on the buy order (ApiConstants.BUY_ORDER_LENGTH).
const BUY_ORDER_MAX = 26;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Our checkout at Webpay: its 128-bit id in base62 (22 characters, where a UUID takes 36) and the
 * attempt, since Webpay wants a buy order of its own for each transaction.
 */
export function buyOrder(checkoutId: string, attempt: number): string {
  let n = BigInt(`0x${checkoutId.replaceAll('-', '')}`);
  let digits = '';
  for (let i = 0; i < 22; i++) {
    digits = BASE62[Number(n % 62n)] + digits;
    n /= 62n;
  }
  const order = `${digits}-${attempt}`;
  if (order.length > BUY_ORDER_MAX) throw new Error(`buy order ${order} is over ${BUY_ORDER_MAX} characters`);
  return order;
}

/** The HTTP status a TransbankError carries only in its message (the SDK keeps no field for it). */
function httpStatus(err: unknown): number | null {
  const m = err instanceof Error ? /status code (\d{3})/.exec(err.message) : null;
  return m ? Number(m[1]) : null;
}

/**
 * The SDK's call, with what Webpay's refusals mean to the API told apart (`expiredOn`: the statuses
 * that say the transaction ended there); anything else (5xx, timeout, no answer) is unavailability.
 */
async function asked<T>(call: Promise<T>, expiredOn: readonly number[] = []): Promise<T> {
  return call.catch((err: unknown) => {
    const status = httpStatus(err);
    if (status === 401 || status === 403) throw new ProviderError('merchant_misconfigured', 'Webpay refused the commerce code or API key.');
    if (status !== null && expiredOn.includes(status)) {
      throw new ProviderError('provider_session_expired', 'The Webpay transaction ended before it was paid.');
    }
    throw err;
  });
}

interface WebpayAnswer {
  status?: string;
  amount?: number;
  response_code?: number;
  payment_type_code?: string;
  authorization_code?: string;
}

/** AUTHORIZED with response code 0 is a payment; every other final status is a decline. */
function outcome(token: string, answer: WebpayAnswer): PaymentResult {
  const paid = answer.status === 'AUTHORIZED' && answer.response_code === 0;
  // VD débito, VN crédito, VC/SI/S2/NC cuotas, VP prepago: Webpay's own codes.
  const method = answer.payment_type_code === 'VD' ? 'debit_card' : answer.payment_type_code === 'VP' ? 'prepaid_card' : 'credit_card';
  return { status: paid ? 'succeeded' : 'failed', transactionId: token, method };
}

/** The transaction's status once committed (AUTHORIZED, FAILED, or reversed since); null while it never was. */
async function committedStatus(tx: InstanceType<typeof WebpayPlus.Transaction>, token: string): Promise<WebpayAnswer | null> {
  const answer = (await asked(
    tx.status(token).catch((err: unknown) => (httpStatus(err) === 422 || httpStatus(err) === 404 ? null : Promise.reject(err))),
  )) as WebpayAnswer | null;
  return answer?.status && answer.status !== 'INITIALIZED' ? answer : null;
}

/**
 * Transbank Webpay Plus through the official SDK (docs/decisions.md §16). A session is a transaction
 * created with our buy order and return URL; the hosted page posts `token_ws` to Webpay's form;
 * the customer's return commits it. `baseUrl` is Transbank's production host unless
 * WEBPAY_BASE_URL names another (the integration host, or a test's stand-in).
 */
export function webpayProvider(baseUrl: string = Environment.Production): PaymentProvider {
  const base = baseUrl.replace(/\/+$/, '');
  const transaction = (c: Credentials) => new WebpayPlus.Transaction(new Options(c.commerce_code!, c.api_key!, base, TIMEOUT_MS));
  return {
    name: 'webpay',
    simulatesDecline: false,
    credentialFields: ['commerce_code', 'api_key'],
    async createSession(req) {
      // Webpay charges whole pesos only.
      if (req.currency !== 'CLP' || !new Decimal(req.amount).isInteger()) {
        throw new ProviderError('merchant_misconfigured', 'Webpay Plus takes whole amounts in CLP only.');
      }
      const order = buyOrder(req.checkoutId, req.attempt);
      const created = (await asked(transaction(req.credentials).create(order, req.checkoutId, Number(req.amount), req.returnUrl))) as {
        token?: string;
        url?: string;
      };
      if (!created.token || !created.url) throw new Error('Webpay answered a create without token or url');
      return { sessionId: created.token, reference: order, redirect: { url: created.url, method: 'post', fields: { token_ws: created.token } } };
    },
    async confirmPayment(req) {
      const tx = transaction(req.credentials ?? {});
      try {
        // Webpay answers 422 to a commit of a transaction that timed out, was aborted, or is too old.
        return outcome(req.sessionId, (await asked(tx.commit(req.sessionId), [404, 422])) as WebpayAnswer);
      } catch (err) {
        if (!(err instanceof ProviderError && err.code === 'provider_session_expired')) throw err;
        // A transaction already committed is refused the same way: a commit whose answer was lost
        // (a timeout, a reset) made its payment all the same. Webpay's status tells the two apart.
        const done = await committedStatus(tx, req.sessionId);
        if (done) return outcome(req.sessionId, done);
        throw err;
      }
    },
    async paymentStatus({ sessionId: token }, credentials) {
      // INITIALIZED: never committed, so never charged (Webpay reverses what is not committed); 422:
      // too old for Webpay to tell (over 7 days), or never created there: nothing to apply.
      const answer = await committedStatus(transaction(credentials), token);
      return answer?.status === 'AUTHORIZED' ? outcome(token, answer) : null;
    },
  };
}
