import { createHash, timingSafeEqual } from 'node:crypto';
import { initTRPC } from '@trpc/server';
import type { FastifyBaseLogger } from 'fastify';
import type { AppContext } from '../http/context.js';
import { AppError } from '../errors.js';
import type { DeliveryDeps } from '../webhooks/delivery.js';
import { appErrorOf, toTRPCError } from './errors.js';
import { adminLockedFor, recordAdminRefusal, REFUSALS_ALLOWED } from './throttle.js';

/** What a call starts with: the app's dependencies and the credential the caller presented. */
export interface AdminContext {
  app: AppContext;
  /** The Authorization header as sent; undefined when there was none. */
  authorization: string | undefined;
  /**
   * The HTTP request's client address, its logger and a way to set a response header; absent for
   * in-process callers (createCaller), which no guesser can reach and so are not throttled.
   */
  http?: {
    address: string;
    log: Pick<FastifyBaseLogger, 'warn'>;
    header(name: string, value: string): void;
    /** A refused token is counted once per HTTP request, however many calls a batch holds. */
    refusalCounted: boolean;
  };
}

const t = initTRPC.context<AdminContext>().create({
  // Never a stack trace in an answer, whatever NODE_ENV says.
  isDev: false,
  // Every error carries the catalogue's code, retry advice and details next to tRPC's own data.
  errorFormatter({ shape, error }) {
    const app = appErrorOf(error);
    return { ...shape, message: app.message, data: { ...shape.data, appCode: app.code, retry: app.retry, details: app.details } };
  },
});

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/** Services throw AppError; callers (HTTP or createCaller) get the tRPC code the catalogue implies. */
const catalogueErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok) throw toTRPCError(result.error);
  return result;
});

// Digests have one length whatever was sent, so the comparison's time says nothing about the token.
function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

function bearer(header: string | undefined): string | null {
  const m = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? '');
  return m?.[1] ?? null;
}

/** The token check: a locked address is refused before its token is looked at (docs/decisions.md §19). */
const requireAdmin = t.middleware(async ({ ctx, next }) => {
  const expected = ctx.app.config.ADMIN_TOKEN;
  // No token configured: the admin interface does not exist (the HTTP routes are not even registered).
  if (!expected) throw new AppError('route_not_found', 'No admin interface is configured.');
  const http = ctx.http;
  if (http) {
    const wait = await adminLockedFor(ctx.app.sql, http.address);
    if (wait !== null) {
      http.header('Retry-After', String(wait));
      throw new AppError('rate_limited', `Too many refused admin tokens from ${http.address}: try again in ${wait} seconds.`, {
        retry: `after_seconds:${wait}`,
      });
    }
  }
  const given = bearer(ctx.authorization);
  const refusal =
    given === null
      ? new AppError('missing_api_key', 'Send the admin token as Authorization: Bearer <ADMIN_TOKEN>.')
      : !timingSafeEqual(digest(given), digest(expected))
        ? new AppError('invalid_api_key', 'The admin token is not valid.')
        : null;
  if (refusal) {
    if (http && !http.refusalCounted) {
      http.refusalCounted = true;
      if (await recordAdminRefusal(ctx.app.sql, http.address)) {
        http.log.warn({ address: http.address }, `admin token refused ${REFUSALS_ALLOWED} times within a minute from ${http.address}: address locked for a minute`);
      }
    }
    throw refusal;
  }
  const deps: DeliveryDeps = ctx.app;
  return next({ ctx: { db: ctx.app.sql, deps } });
});

export const adminProcedure = t.procedure.use(catalogueErrors).use(requireAdmin);
