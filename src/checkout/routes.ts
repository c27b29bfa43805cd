import { defineRoute } from '../http/route.js';
import type { AppContext } from '../http/context.js';
import { invoiceDeps } from '../invoices/routes.js';
import * as s from './schemas.js';
import { createCheckout, openCheckout, type OpeningDeps } from './open.js';
import { getCheckoutStatus } from './resource.js';

function openingDeps(ctx: AppContext): OpeningDeps {
  return {
    ttlSeconds: ctx.config.CHECKOUT_TTL_SECONDS,
    exchangeRatesUrl: ctx.config.EXCHANGE_RATES_URL,
    publicBase: ctx.config.publicBaseUrl,
    secrets: ctx.secrets,
  };
}

export const checkoutRoutes = [
  defineRoute({
    method: 'POST',
    path: '/checkout',
    operationId: 'createCheckout',
    summary: 'Create a checkout session (a hosted payment page)',
    description:
      'Reuses the client with `customer_email` (ignoring case) or creates one, creates an invoice of one tax-inclusive item ' +
      "(`description`, quantity 1, unit price `amount`, the account's tax rate, due today) and sends it at once: it gets its " +
      'number, but no e-mail. Send the customer to `checkout_url`: paying there records the payment, marks the invoice paid, ' +
      'completes the session and redirects (303) to `success_url`; a declined payment or the cancel link redirects to ' +
      '`cancel_url` and leaves the session pending. At `expires_at` (24 hours by default) a pending session expires and its ' +
      'invoice is cancelled. Events: `invoice.created`, `invoice.sent`; later `payment.succeeded`, `invoice.paid` and ' +
      '`checkout.completed`, or `payment.failed`, or `checkout.expired` with `invoice.cancelled`. ' +
      'Needs a payment provider on the account (`can_charge` in GET /me), else 400 `provider_not_configured` and nothing is created. ' +
      '`provider_unavailable` (503) created nothing either: retry with the same Idempotency-Key.',
    tag: 'Checkout',
    scope: 'checkout:create',
    idempotent: true,
    body: s.createCheckoutBody,
    response: { status: 201, description: 'The session was created, pending', schema: s.checkoutSession },
    errors: [
      'provider_not_configured',
      'invalid_provider',
      'provider_credentials_missing',
      'merchant_misconfigured',
      'provider_unavailable',
      'currency_not_supported',
      'currency_conversion_failed',
      'idempotency_conflict',
    ],
    example: {
      body: {
        amount: 11900,
        currency: 'CLP',
        description: 'Pedido 1001',
        customer_email: 'pagos@losandes.cl',
        customer_name: 'Comercial Los Andes',
        success_url: 'https://shop.example.cl/orders/1001/paid',
        cancel_url: 'https://shop.example.cl/orders/1001',
        external_reference: 'order-1001',
      },
    },
    prepare: ({ body, auth, ctx }) => openCheckout(ctx.sql, auth.merchant, body, openingDeps(ctx)),
    // A repeat must not open another session at the gateway.
    prepareOncePerKey: true,
    handler: async ({ body, auth, ctx, db, prepared }) => ({
      status: 201,
      body: await createCheckout(db, auth.merchant, body, prepared, invoiceDeps(ctx)),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/checkout/:checkout_id/status',
    operationId: 'getCheckoutStatus',
    summary: 'Get the status of a checkout session',
    description:
      '`status` is pending, completed or expired (a pending session past `expires_at` reads as expired); `payment_status` is ' +
      'unpaid, paid, or failed after a declined attempt (the customer may still pay while the session is pending).',
    tag: 'Checkout',
    scope: 'checkout:create',
    params: s.checkoutIdParams,
    response: { status: 200, description: 'The session', schema: s.checkoutSession },
    errors: ['checkout_not_found'],
    handler: async ({ params, auth, ctx, db }) => ({
      status: 200,
      body: await getCheckoutStatus(db, auth.merchant.id, params.checkout_id, ctx.config.publicBaseUrl),
    }),
  }),
];
