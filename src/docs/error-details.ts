import { z } from 'zod';
import type { ErrorCode, FieldError } from '../errors.js';
import { scopes } from '../http/scopes.js';
import { invoiceStatuses } from '../invoices/schemas.js';

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
  .meta({ id: 'FieldError' }) satisfies z.ZodType<FieldError>;

const fieldErrors = z.object({
  errors: z.array(fieldError).meta({ description: 'Every bad field, each `{ path, message }`' }),
});

const providerDetails = z.object({ provider: z.string().meta({ description: "The account's payment provider", example: 'sandbox' }) });

const invoiceState = <S extends z.ZodType>(status: S) =>
  z.object({ status: status.meta({ description: "The invoice's status now" }) });

/** Each code's `details`, as the OpenAPI document and the reference state it. */
export const errorDetails = {
  checkout_not_found: noDetails,
  client_already_exists: z.object({ email: z.string().meta({ description: 'The e-mail another client of yours already has, as sent', example: 'pagos@andes.cl' }) }),
  client_not_found: noDetails,
  currency_conversion_failed: z.object({
      currency: z.string().meta({ description: 'The currency of the invoice', example: 'USD' }),
      base_currency: z.string().meta({ description: "Your account's base currency", example: 'CLP' }),
      date: z.string().meta({ format: 'date', description: 'The issue date whose rate is missing (YYYY-MM-DD)', example: '2026-11-22' }),
    }),
  currency_not_supported: z.object({ currency: z.string().meta({ description: 'The currency as sent', example: 'XYZ' }) }),
  idempotency_conflict: noDetails,
  insufficient_scope: z.object({ required_scope: z.enum(scopes).meta({ description: 'The scope the route needs', example: 'invoices:read' }) }),
  invalid_api_key: noDetails,
  invalid_provider: providerDetails,
  // A payment provider's notification whose signature does not verify with the merchant's secret.
  invalid_signature: noDetails,
  invoice_already_paid: invoiceState(z.literal('paid')),
  invoice_invalid_state: invoiceState(z.enum(invoiceStatuses).meta({ example: 'cancelled' })).extend({
      payment_in_progress: z
        .literal(true)
        .optional()
        .meta({ description: 'Present when a customer is paying the invoice on its checkout page right now: retry once that payment has ended' }),
    }),
  invoice_not_found: noDetails,
  dte_not_found: noDetails,
  credit_note_not_found: noDetails,
  debit_note_not_found: noDetails,
  invoice_not_sent: invoiceState(z.literal('draft')),
  ip_not_allowed: noDetails,
  // A payment provider refusing the account's credentials, or (docs/decisions.md §15) a tax document the
  // account cannot issue: no folios left of its type, or an expired signing certificate.
  merchant_misconfigured: z.union([
      providerDetails,
      z.object({ dte_type: z.number().int().meta({ description: 'The tax-document type (33, 34) the account cannot issue', example: 33 }) }),
    ]).meta({ example: { provider: 'sandbox' } }),
  missing_api_key: noDetails,
  provider_credentials_missing: providerDetails,
  provider_not_configured: noDetails,
  provider_session_expired: providerDetails,
  provider_unavailable: providerDetails,
  rate_limited: noDetails,
  validation_error: fieldErrors,
  // The same list as validation_error: the URL is the field at fault.
  webhook_endpoint_invalid: fieldErrors.meta({ example: { errors: [{ path: 'url', message: 'URL must use https://' }] } }),
  webhook_endpoint_not_found: noDetails,
  webhook_delivery_not_found: noDetails,
  event_not_found: noDetails,
  payment_not_found: noDetails,
  route_not_found: noDetails,
  payload_too_large: noDetails,
  request_timeout: noDetails,
  service_unavailable: noDetails,
  internal_error: noDetails,
} satisfies Record<ErrorCode, z.ZodType>;
