import { AppError } from '../../errors.js';
import { ProviderError, type PaymentProvider, type PaymentRequest, type PaymentResult, type ProviderSession, type SessionRequest } from './provider.js';
import { sandboxProvider } from './sandbox.js';

const providers = new Map<string, PaymentProvider>([[sandboxProvider.name, sandboxProvider]]);

/** Plugs a gateway in under its name; a merchant whose payment_provider has that name uses it. */
export function registerProvider(provider: PaymentProvider): void {
  providers.set(provider.name, provider);
}

/** The merchant's provider: none set is `provider_not_configured`, an unknown name `invalid_provider`. */
export function providerFor(name: string | null): PaymentProvider {
  if (name === null) {
    throw new AppError('provider_not_configured', 'This account has no payment provider configured; checkout is unavailable.');
  }
  const provider = providers.get(name);
  if (!provider) throw new AppError('invalid_provider', `The payment provider ${name} is not available.`, { details: { provider: name } });
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

export async function openSession(provider: PaymentProvider, req: SessionRequest): Promise<ProviderSession> {
  try {
    return await provider.createSession(req);
  } catch (err) {
    throw providerFailure(provider, err);
  }
}

export async function confirmPayment(provider: PaymentProvider, req: PaymentRequest): Promise<PaymentResult> {
  try {
    return await provider.confirmPayment(req);
  } catch (err) {
    throw providerFailure(provider, err);
  }
}
