import type { ErrorCode } from '../../errors.js';

/** A merchant's settings for one gateway (commerce code, keys, secrets), opened from their sealed row. */
export type Credentials = Readonly<Record<string, string>>;

/** What a provider is told when a session opens: enough to show and charge the right amount. */
export interface SessionRequest {
  checkoutId: string;
  merchantId: string;
  /** Decimal string at the currency's precision. */
  amount: string;
  currency: string;
  description: string;
  customerEmail: string;
  expiresAt: Date;
  /** Counts the gateway sessions opened for this checkout, from 1: one that ended unpaid is replaced. */
  attempt: number;
  /** The hosted checkout page: the customer comes back here (a redirect gateway's back URLs). */
  pageUrl: string;
  /** Where a redirect gateway sends the customer back with its verdict (GET). */
  returnUrl: string;
  /** Where a notifying gateway reports payments (POST), naming the merchant. */
  notificationUrl: string;
  credentials: Credentials;
}

/** Where the customer pays at a gateway's own page: a form the hosted page submits there. */
export interface GatewayRedirect {
  url: string;
  method: 'get' | 'post';
  fields: Record<string, string>;
}

export interface ProviderSession {
  /** The provider's own reference to the session, kept on ours and handed back at payment. */
  sessionId: string;
  /** Absent for a provider that takes payment on our page (sandbox). */
  redirect?: GatewayRedirect;
  /** Our reference at the gateway (Webpay's buy order), when it keeps one. */
  reference?: string;
}

/**
 * What the customer did on the hosted page. `decline` exists only where the provider simulates
 * payments (`simulatesDecline`): a real gateway decides declines itself. `return` is the customer
 * back from a redirect gateway's page: the provider confirms (commits) what happened there.
 */
export type CustomerAction = 'pay' | 'decline' | 'return';

export interface PaymentRequest {
  sessionId: string;
  amount: string;
  currency: string;
  action: CustomerAction;
  credentials?: Credentials;
}

export interface PaymentResult {
  status: 'succeeded' | 'failed';
  /** The provider's id of this attempt, recorded on the payment and the invoice's payment_reference. */
  transactionId: string;
  /** How the customer paid, as the provider names it (informational). */
  method: string;
}

/** A session whose customer never came back, as the gateway is asked about it before it expires. */
export interface StatusRequest {
  /** The gateway session (Webpay's token). */
  sessionId: string;
  /** Our checkout: the reference a gateway files its payments under (Mercado Pago's external_reference). */
  checkoutId: string;
  amount: string;
  currency: string;
}

/** A notification as it arrived, reduced to what verifying it needs. */
export interface Notification {
  /** The notified resource's id, as the notification URL's query names it (`data.id`). */
  dataId: string;
  /** The kind of resource (`payment`, `merchant_order`, ...). */
  type: string | null;
  signature: string | null;
  requestId: string | null;
}

/** A payment a gateway reported, looked up at the gateway: `result` null while it is undecided. */
export interface NotifiedPayment {
  checkoutId: string | null;
  amount: string;
  currency: string;
  result: PaymentResult | null;
  /** With no result: the gateway is still deciding it (Mercado Pago's pending, in_process, authorized). */
  pending: boolean;
}

/**
 * One payment gateway. Adapters throw ProviderError for the failures the API reports; anything
 * else they throw is taken for an unreachable gateway (503 `provider_unavailable`). Three shapes
 * share it: the sandbox takes payment on our page (`confirmPayment` with pay or decline); Webpay
 * sends the customer to `redirect` and commits on their return (`confirmPayment` with return),
 * with `paymentStatus` for a return that never came; Mercado Pago sends the customer to
 * `redirect` and reports payments by notification (`verifyNotification`, `lookupPayment`), with
 * `paymentStatus` for a notification that never came.
 */
export interface PaymentProvider {
  readonly name: string;
  /** The hosted page offers a "simulate a declined payment" button. */
  readonly simulatesDecline: boolean;
  /** The credential fields a merchant sets for it (none: nothing to set). */
  readonly credentialFields?: readonly string[];
  createSession(req: SessionRequest): Promise<ProviderSession>;
  confirmPayment(req: PaymentRequest): Promise<PaymentResult>;
  /** The session's payment the gateway authorised, for its amount: null while there is none. */
  paymentStatus?(session: StatusRequest, credentials: Credentials): Promise<PaymentResult | null>;
  /** The notification was signed with the merchant's secret. */
  verifyNotification?(notification: Notification, credentials: Credentials): boolean;
  lookupPayment?(paymentId: string, credentials: Credentials): Promise<NotifiedPayment>;
}

/** The catalogue codes a provider may answer with (docs/decisions.md §11, §16). */
export type ProviderErrorCode = Extract<
  ErrorCode,
  'provider_unavailable' | 'provider_session_expired' | 'provider_credentials_missing' | 'merchant_misconfigured' | 'invalid_provider'
>;

export class ProviderError extends Error {
  override name = 'ProviderError';
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
  ) {
    super(message);
  }
}
