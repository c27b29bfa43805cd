import type { Config } from '../../config.js';
import { AppError } from '../../errors.js';
import { mercadoPagoProvider, setMercadoPagoBaseUrl } from './mercadopago.js';
import {
  ProviderError,
  type Credentials,
  type NotifiedPayment,
  type PaymentProvider,
  type PaymentRequest,
  type PaymentResult,
  type ProviderSession,
  type SessionRequest,
  type StatusRequest,
} from './provider.js';
import { sandboxProvider } from './sandbox.js';
import { webpayProvider } from './webpay.js';

const providers = new Map<string, PaymentProvider>([
  [sandboxProvider.name, sandboxProvider],
  ['webpay', webpayProvider()],
  ['mercadopago', mercadoPagoProvider()],
]);

/** Plugs a gateway in under its name; a merchant whose payment_provider has that name uses it. */
export function registerProvider(provider: PaymentProvider): void {
  providers.set(provider.name, provider);
}

/** The gateways at the addresses the configuration names (WEBPAY_BASE_URL, MERCADOPAGO_BASE_URL); once per process. */
export function configureGateways(config: Pick<Config, 'WEBPAY_BASE_URL' | 'MERCADOPAGO_BASE_URL'>): void {
  registerProvider(webpayProvider(config.WEBPAY_BASE_URL));
  setMercadoPagoBaseUrl(config.MERCADOPAGO_BASE_URL);
}

/** The provider of that name; null for none or a name no gateway answers to. */
export function knownProvider(name: string | null): PaymentProvider | null {
  return name === null ? null : (providers.get(name) ?? null);
}

/** The merchant's provider: none set is `provider_not_configured`, an unknown name `invalid_provider`. */
export function providerFor(name: string | null): PaymentProvider {
  if (name === null) {
    throw new AppError('provider_not_configured', 'This account has no payment provider configured; checkout is unavailable.');
  }
  const provider = knownProvider(name);
  if (!provider) throw new AppError('invalid_provider', `The payment provider ${name} is not available: use one of ${[...providers.keys()].sort().join(', ')}.`, { details: { provider: name } });
  return provider;
}

/** The API's error for whatever an adapter threw. */
function providerFailure(provider: PaymentProvider, err: unknown): AppError {
  if (err instanceof ProviderError) return new AppError(err.code, err.message, { details: { provider: provider.name } });
  if (err instanceof AppError) return err;
  const unavailable = new AppError('provider_unavailable', `The payment provider ${provider.name} could not be reached; retry shortly.`, {
    details: { provider: provider.name },
  });
  // Kept for the log of the 503, never shown to the caller.
  return Object.assign(unavailable, { cause: err });
}

async function call<T>(provider: PaymentProvider, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw providerFailure(provider, err);
  }
}

export function openSession(provider: PaymentProvider, req: SessionRequest): Promise<ProviderSession> {
  return call(provider, () => provider.createSession(req));
}

export function confirmPayment(provider: PaymentProvider, req: PaymentRequest): Promise<PaymentResult> {
  return call(provider, () => provider.confirmPayment(req));
}

/** The session's payment at a gateway that can tell; null when it cannot or nothing was authorised. */
export function paymentStatus(provider: PaymentProvider, session: StatusRequest, credentials: Credentials): Promise<PaymentResult | null> {
  return call(provider, async () => (provider.paymentStatus ? provider.paymentStatus(session, credentials) : null));
}

export function lookupPayment(provider: PaymentProvider, paymentId: string, credentials: Credentials): Promise<NotifiedPayment> {
  return call(provider, async () => {
    if (!provider.lookupPayment) throw new ProviderError('invalid_provider', `${provider.name} reports no payments.`);
    return provider.lookupPayment(paymentId, credentials);
  });
}

/** The gateways that can say how a session's payment stands (asked before a session expires). */
export function statusProviders(): string[] {
  return [...providers.values()].filter((p) => p.paymentStatus).map((p) => p.name);
}
