import { registerProvider } from '../../src/checkout/providers/registry.js';
import type { PaymentProvider, SessionRequest } from '../../src/checkout/providers/provider.js';
import { sandboxProvider } from '../../src/checkout/providers/sandbox.js';
import type { TestApp } from './app.js';

// The checkout request most tests start from: each call a customer of its own.
export const SUCCESS = 'https://shop.example/orders/1/paid';
export const CANCEL = 'https://shop.example/orders/1';

let seq = 0;

export function checkoutBody(extra: Record<string, unknown> = {}): Record<string, any> {
  seq += 1;
  return {
    amount: 11900,
    description: 'Pedido 1001',
    customer_email: `comprador${seq}@example.cl`,
    customer_name: `Comprador ${seq}`,
    success_url: SUCCESS,
    cancel_url: CANCEL,
    ...extra,
  };
}

/**
 * A registered gateway that pays as the sandbox does, and whose answers a test decides: down
 * (`failure`), or a confirmation held at a gate (holdConfirmations). `observe` sees each call
 * first, for tests that record what the app held while it called out.
 */
export function gatedProvider(
  name: string,
  observe: { createSession?(req: SessionRequest): Promise<void>; confirmPayment?(): Promise<void> } = {},
) {
  const state = {
    failure: null as Error | null,
    gate: null as Promise<void> | null,
    entered: () => {},
  };
  const provider: PaymentProvider = {
    name,
    simulatesDecline: false,
    async createSession(req) {
      await observe.createSession?.(req);
      if (state.failure) throw state.failure;
      return { sessionId: `${name}_${req.checkoutId}` };
    },
    async confirmPayment(req) {
      await observe.confirmPayment?.();
      state.entered();
      if (state.gate) await state.gate;
      if (state.failure) throw state.failure;
      return sandboxProvider.confirmPayment(req);
    },
  };
  registerProvider(provider);
  return state;
}

/** Holds the gateway's confirmations until `open`; `entered` resolves when one reaches it. */
export function holdConfirmations(gateway: { gate: Promise<void> | null; entered: () => void }) {
  let open!: () => void;
  gateway.gate = new Promise<void>((r) => (open = r));
  const entered = new Promise<void>((r) => (gateway.entered = r));
  return { entered, open: () => open() };
}

/** The hosted checkout page's form for `action` (pay or decline), or null when it has none. */
export function checkoutFormOf(html: string, action: 'pay' | 'decline'): { action: string; csrf: string } | null {
  const m = [...html.matchAll(/<form method="post" action="([^"]+)">\s*<input type="hidden" name="csrf_token" value="([^"]+)">/g)].find((f) =>
    f[1]!.endsWith(`/${action}`),
  );
  return m ? { action: m[1]!, csrf: m[2]! } : null;
}

/** The hosted checkout page's form, submitted as the customer's browser would (not an API call). */
export async function submitCheckoutForm(h: TestApp, checkoutUrl: string, action: 'pay' | 'decline'): Promise<void> {
  const page = await h.app.inject({ url: new URL(checkoutUrl).pathname });
  const form = checkoutFormOf(page.body, action);
  if (!form) throw new Error(`no ${action} form on the checkout page`);
  const res = await h.app.inject({
    method: 'POST',
    url: new URL(form.action, checkoutUrl).pathname,
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', origin: 'null' },
    payload: new URLSearchParams({ csrf_token: form.csrf }).toString(),
  });
  if (res.statusCode !== 303) throw new Error(`${action}: ${res.statusCode}`);
}
