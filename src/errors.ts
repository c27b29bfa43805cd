// The one error catalogue: HTTP, tRPC and jobs all speak these codes. What each code's `details`
// holds is typed beside the OpenAPI document, in src/docs/error-details.ts.
export const errorCatalogue = {
  checkout_not_found: { status: 404, retry: 'never' },
  client_already_exists: { status: 409, retry: 'never' },
  client_not_found: { status: 404, retry: 'never' },
  currency_conversion_failed: { status: 503, retry: 'after_seconds:300' },
  currency_not_supported: { status: 400, retry: 'never' },
  idempotency_conflict: { status: 409, retry: 'after_seconds:5' },
  insufficient_scope: { status: 403, retry: 'never' },
  invalid_api_key: { status: 401, retry: 'never' },
  invalid_provider: { status: 400, retry: 'never' },
  // A payment provider's notification whose signature does not verify with the merchant's secret.
  invalid_signature: { status: 401, retry: 'never' },
  invoice_already_paid: { status: 409, retry: 'never' },
  invoice_invalid_state: { status: 409, retry: 'never' },
  invoice_not_found: { status: 404, retry: 'never' },
  dte_not_found: { status: 404, retry: 'never' },
  credit_note_not_found: { status: 404, retry: 'never' },
  debit_note_not_found: { status: 404, retry: 'never' },
  invoice_not_sent: { status: 409, retry: 'never' },
  ip_not_allowed: { status: 403, retry: 'never' },
  // A payment provider refusing the account's credentials, or (docs/decisions.md §15) a tax document the
  // account cannot issue: no folios left of its type, or an expired signing certificate.
  merchant_misconfigured: { status: 400, retry: 'never' },
  missing_api_key: { status: 401, retry: 'never' },
  provider_credentials_missing: { status: 400, retry: 'never' },
  provider_not_configured: { status: 400, retry: 'never' },
  provider_session_expired: { status: 410, retry: 'safe' },
  provider_unavailable: { status: 503, retry: 'safe' },
  rate_limited: { status: 429, retry: 'after_seconds:60' },
  validation_error: { status: 422, retry: 'never' },
  webhook_endpoint_invalid: { status: 400, retry: 'never' },
  webhook_endpoint_not_found: { status: 404, retry: 'never' },
  webhook_delivery_not_found: { status: 404, retry: 'never' },
  event_not_found: { status: 404, retry: 'never' },
  payment_not_found: { status: 404, retry: 'never' },
  route_not_found: { status: 404, retry: 'never' },
  payload_too_large: { status: 413, retry: 'never' },
  request_timeout: { status: 408, retry: 'safe' },
  service_unavailable: { status: 503, retry: 'safe' },
  internal_error: { status: 500, retry: 'safe' },
} as const satisfies Record<string, { status: number; retry: string }>;

export type ErrorCode = keyof typeof errorCatalogue;

/** One entry of a validation error's `details.errors`: the field at fault and the rule it broke. */
export interface FieldError {
  path: string;
  message: string;
}

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
