import { z } from 'zod';
import { scopes } from './http/scopes.js';
import { invoiceStatuses } from './invoices/schemas.js';

// What `details` holds, per code. The OpenAPI document types each code's envelope with these, so
// a typed client can read `details.email` of a client_already_exists; every throw site of a code
// must build exactly this shape (test/openapi-errors.test.ts checks the answers against them).
const noDetails = z.null().meta({ description: 'Always null: this code carries no details' });

const fieldError = z
  .object({
    path: z.string().meta({
      description:
        'The field in dot and bracket form (`items[0].unit_price`, `client.email`), a missing one too; `body`, `query`, `path`, `request` or a header name (`Idempotency-Key`) when the fault is not one field',
      example: 'items[0].unit_price',
    }),
    message: z.string().meta({ example: 'must be a number' }),
  })
  .meta({ id: 'FieldError' });

const fieldErrors = z.object({
  errors: z.array(fieldError).meta({ description: 'Every bad field, each `{ path, message }`' }),
});

const providerDetails = z.object({ provider: z.string().meta({ description: "The account's payment provider", example: 'sandbox' }) });

const invoiceState = <S extends z.ZodType>(status: S) =>
  z.object({ status: status.meta({ description: "The invoice's status now" }) });

// The one error catalogue: HTTP, tRPC and jobs all speak these codes.
export const errorCatalogue = {
  checkout_not_found: { status: 404, retry: 'never', details: noDetails },
  client_already_exists: {
    status: 409,
    retry: 'never',
    details: z.object({ email: z.string().meta({ description: 'The e-mail another client of yours already has, as sent', example: 'pagos@andes.cl' }) }),
  },
  client_not_found: { status: 404, retry: 'never', details: noDetails },
  currency_conversion_failed: {
    status: 503,
    retry: 'after_seconds:300',
    details: z.object({
      currency: z.string().meta({ description: 'The currency of the invoice', example: 'USD' }),
      base_currency: z.string().meta({ description: "Your account's base currency", example: 'CLP' }),
      date: z.string().meta({ format: 'date', description: 'The issue date whose rate is missing (YYYY-MM-DD)', example: '2026-11-22' }),
    }),
  },
  currency_not_supported: {
    status: 400,
    retry: 'never',
    details: z.object({ currency: z.string().meta({ description: 'The currency as sent', example: 'XYZ' }) }),
  },
  idempotency_conflict: { status: 409, retry: 'after_seconds:5', details: noDetails },
  insufficient_scope: {
    status: 403,
    retry: 'never',
    details: z.object({ required_scope: z.enum(scopes).meta({ description: 'The scope the route needs', example: 'invoices:read' }) }),
  },
  invalid_api_key: { status: 401, retry: 'never', details: noDetails },
  invalid_provider: { status: 400, retry: 'never', details: providerDetails },
  // A payment provider's notification whose signature does not verify with the merchant's secret.
  invalid_signature: { status: 401, retry: 'never', details: noDetails },
  invoice_already_paid: { status: 409, retry: 'never', details: invoiceState(z.literal('paid')) },
  invoice_invalid_state: {
    status: 409,
    retry: 'never',
    details: invoiceState(z.enum(invoiceStatuses).meta({ example: 'cancelled' })).extend({
      payment_in_progress: z
        .literal(true)
        .optional()
        .meta({ description: 'Present when a customer is paying the invoice on its checkout page right now: retry once that payment has ended' }),
    }),
  },
  invoice_not_found: { status: 404, retry: 'never', details: noDetails },
  dte_not_found: { status: 404, retry: 'never', details: noDetails },
  credit_note_not_found: { status: 404, retry: 'never', details: noDetails },
  debit_note_not_found: { status: 404, retry: 'never', details: noDetails },
  invoice_not_sent: { status: 409, retry: 'never', details: invoiceState(z.literal('draft')) },
  ip_not_allowed: { status: 403, retry: 'never', details: noDetails },
  // A payment provider refusing the account's credentials, or (docs/decisions.md §15) a tax document the
  // account cannot issue: no folios left of its type, or an expired signing certificate.
  merchant_misconfigured: {
    status: 400,
    retry: 'never',
    details: z.union([
      providerDetails,
      z.object({ dte_type: z.number().int().meta({ description: 'The tax-document type (33, 34) the account cannot issue', example: 33 }) }),
    ]).meta({ example: { provider: 'sandbox' } }),
  },
  missing_api_key: { status: 401, retry: 'never', details: noDetails },
  provider_credentials_missing: { status: 400, retry: 'never', details: providerDetails },
  provider_not_configured: { status: 400, retry: 'never', details: noDetails },
  provider_session_expired: { status: 410, retry: 'safe', details: providerDetails },
  provider_unavailable: { status: 503, retry: 'safe', details: providerDetails },
  rate_limited: { status: 429, retry: 'after_seconds:60', details: noDetails },
  validation_error: { status: 422, retry: 'never', details: fieldErrors },
  // The same list as validation_error: the URL is the field at fault.
  webhook_endpoint_invalid: {
    status: 400,
    retry: 'never',
    details: fieldErrors.meta({ example: { errors: [{ path: 'url', message: 'URL must use https://' }] } }),
  },
  webhook_endpoint_not_found: { status: 404, retry: 'never', details: noDetails },
  webhook_delivery_not_found: { status: 404, retry: 'never', details: noDetails },
  event_not_found: { status: 404, retry: 'never', details: noDetails },
  payment_not_found: { status: 404, retry: 'never', details: noDetails },
  route_not_found: { status: 404, retry: 'never', details: noDetails },
  payload_too_large: { status: 413, retry: 'never', details: noDetails },
  request_timeout: { status: 408, retry: 'safe', details: noDetails },
  service_unavailable: { status: 503, retry: 'safe', details: noDetails },
  internal_error: { status: 500, retry: 'safe', details: noDetails },
} as const satisfies Record<string, { status: number; retry: string; details: z.ZodType }>;

export type ErrorCode = keyof typeof errorCatalogue;

/** One entry of a validation error's `details.errors`. */
export type FieldError = z.output<typeof fieldError>;

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retry: string;
  readonly details: Record<string, unknown> | null;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { details?: Record<string, unknown> | null; status?: number; retry?: string } = {},
  ) {
    super(message);
    this.code = code;
    this.status = opts.status ?? errorCatalogue[code].status;
    this.retry = opts.retry ?? errorCatalogue[code].retry;
    this.details = opts.details ?? null;
  }

  static validation(errors: FieldError[], status = 422, message?: string): AppError {
    const first = errors[0];
    return new AppError(
      'validation_error',
      message ?? (first ? `Invalid ${first.path || 'request'}: ${first.message}` : 'Invalid request'),
      { details: { errors }, status },
    );
  }
}
