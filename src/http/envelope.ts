import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import { isDatabaseUnavailable } from '../db/client.js';
import { clock } from '../clock.js';

export interface ErrorEnvelope {
  code: string;
  message: string;
  retry: string;
  details: Record<string, unknown> | null;
  request_id: string;
  path: string;
  timestamp: string;
}

/** Maps anything thrown in any layer (ours, Fastify's, the driver's) onto an AppError. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (isDatabaseUnavailable(err)) return new AppError('service_unavailable', 'The service is temporarily unavailable; retry shortly.');
  const e = err as { code?: string; statusCode?: number; message?: string };
  switch (e?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'Request body exceeds 1 MiB.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return AppError.validation([{ path: 'body', message: 'Content-Type must be application/json' }], 415, 'Content-Type must be application/json.');
    case 'FST_ERR_BAD_URL':
      return AppError.validation([{ path: 'path', message: 'malformed URL' }], 400, 'Malformed URL.');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return AppError.validation([{ path: 'path', message: 'path parameter too long' }], 400, 'A path parameter is too long.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return AppError.validation([{ path: 'body', message: 'malformed JSON body' }], 400, 'Malformed JSON body.');
  }
  if (e?.statusCode === 413) return new AppError('payload_too_large', 'Request too large.');
  if (e?.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
    return AppError.validation([{ path: 'request', message: 'malformed request' }], e.statusCode, 'Malformed request.');
  }
  return new AppError('internal_error', 'An unexpected error occurred. It has been logged.');
}

/** The one error shape; `path` is given without its query string. */
export function envelopeOf(err: AppError, requestId: string, path: string): ErrorEnvelope {
  return {
    code: err.code,
    message: err.message,
    retry: err.retry,
    details: err.details,
    request_id: requestId,
    path,
    timestamp: clock.now().toISOString(),
  };
}

export function envelope(err: AppError, request: FastifyRequest): ErrorEnvelope {
  return envelopeOf(err, String(request.id), request.url.split('?')[0] ?? request.url);
}

export function sendError(reply: FastifyReply, err: AppError): FastifyReply {
  const after = /^after_seconds:(\d+)$/.exec(err.retry);
  if (after && (err.status === 429 || err.status === 503 || err.code === 'idempotency_conflict')) {
    reply.header('Retry-After', after[1]);
  }
  return reply.code(err.status).type('application/json; charset=utf-8').send(envelope(err, reply.request));
}
