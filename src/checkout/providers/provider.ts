import type { ErrorCode } from '../../errors.js';

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
}

export interface ProviderSession {
  /** The provider's own reference to the session, kept on ours and handed back at payment. */
  sessionId: string;
}

/**
 * What the customer did on the hosted page. `decline` exists only where the provider simulates
 * payments (`simulatesDecline`): a real gateway decides declines itself.
 */
export type CustomerAction = 'pay' | 'decline';

export interface PaymentRequest {
  sessionId: string;
  amount: string;
  currency: string;
  action: CustomerAction;
}

export interface PaymentResult {
  status: 'succeeded' | 'failed';
  /** The provider's id of this attempt, recorded on the payment and the invoice's payment_reference. */
  transactionId: string;
  /** How the customer paid, as the provider names it (informational). */
  method: string;
}

/**
 * One payment gateway. Adapters throw ProviderError for the failures the API reports; anything
 * else they throw is taken for an unreachable gateway (503 `provider_unavailable`).
 */
export interface PaymentProvider {
  readonly name: string;
  /** The hosted page offers a "simulate a declined payment" button. */
  readonly simulatesDecline: boolean;
  createSession(req: SessionRequest): Promise<ProviderSession>;
  confirmPayment(req: PaymentRequest): Promise<PaymentResult>;
}

/** The catalogue codes a provider may answer with (decisions §11). */
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
