import { createHash, timingSafeEqual } from 'node:crypto';
import { initTRPC } from '@trpc/server';
import type { AppContext } from '../context.js';
import { AppError } from '../errors.js';
import type { DeliveryDeps } from '../webhooks/delivery.js';
import { appErrorOf, toTRPCError } from './errors.js';

/** What a call starts with: the app's dependencies and the credential the caller presented. */
export interface AdminContext {
  app: AppContext;
  /** The Authorization header as sent; undefined when there was none. */
  authorization: string | undefined;
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

const requireAdmin = t.middleware(({ ctx, next }) => {
  const expected = ctx.app.config.ADMIN_TOKEN;
  // No token configured: the admin interface does not exist (the HTTP routes are not even registered).
  if (!expected) throw new AppError('route_not_found', 'No admin interface is configured.');
  const given = bearer(ctx.authorization);
  if (given === null) throw new AppError('missing_api_key', 'Send the admin token as Authorization: Bearer <ADMIN_TOKEN>.');
  if (!timingSafeEqual(digest(given), digest(expected))) throw new AppError('invalid_api_key', 'The admin token is not valid.');
  const deps: DeliveryDeps = ctx.app;
  return next({ ctx: { db: ctx.app.sql, deps } });
});

export const adminProcedure = t.procedure.use(catalogueErrors).use(requireAdmin);
