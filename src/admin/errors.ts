import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import { AppError } from '../errors.js';
import { toAppError } from '../http/envelope.js';
import { fieldErrors } from '../http/validation.js';

type TRPCCode = TRPCError['code'];

// The catalogue's HTTP statuses, read as tRPC codes. A bad request is BAD_REQUEST whatever status
// the REST API would give it (400, 415 or 422).
const codeByStatus: Partial<Record<number, TRPCCode>> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'BAD_REQUEST',
  422: 'BAD_REQUEST',
  429: 'TOO_MANY_REQUESTS',
  503: 'SERVICE_UNAVAILABLE',
};

function trpcCodeOf(err: AppError): TRPCCode {
  return codeByStatus[err.status] ?? (err.status < 500 ? 'BAD_REQUEST' : 'INTERNAL_SERVER_ERROR');
}

/**
 * The catalogue error behind any tRPC error: ours as thrown, zod's input errors as a
 * validation_error naming each field, anything unexpected as internal_error (or
 * service_unavailable when the database is away) with no internals in its message.
 */
export function appErrorOf(error: TRPCError): AppError {
  const cause = error.cause;
  if (cause instanceof AppError) return cause;
  if (cause instanceof z.ZodError) return AppError.validation(fieldErrors(cause, ''));
  switch (error.code) {
    case 'INTERNAL_SERVER_ERROR':
      return toAppError(cause ?? error);
    case 'NOT_FOUND':
      return new AppError('route_not_found', error.message);
    case 'PAYLOAD_TOO_LARGE':
      return new AppError('payload_too_large', error.message);
    default:
      return AppError.validation([{ path: 'request', message: error.message }], 400, error.message);
  }
}

/** A procedure's failure as the tRPC error its catalogue code calls for. */
export function toTRPCError(error: TRPCError): TRPCError {
  const app = appErrorOf(error);
  return new TRPCError({ code: trpcCodeOf(app), message: app.message, cause: app });
}
