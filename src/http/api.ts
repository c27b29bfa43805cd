import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors.js';
import type { AppContext } from '../context.js';
import { type AuthContext, ipAllowed } from './auth.js';
import { hitRateLimit, secondsUntilReset, type RateLimitState } from './rate-limit.js';
import { claimKey, completeKey, releaseKey, requestHash } from './idempotency.js';
import { parseOrThrow, unstorableJson } from './validation.js';
import { hasScope } from './scopes.js';
import { toAppError, envelope } from './envelope.js';
import type { RouteDef, RouteResult } from './route.js';

import { API_PREFIX as API_BASE } from './urls.js';

declare module 'fastify' {
  interface FastifyRequest {
    auth?: AuthContext;
    /** The route's path parameters, parsed once in the onRequest hook. */
    apiParams?: unknown;
  }
  interface FastifyContextConfig {
    routeDef?: RouteDef;
  }
}

function setRateHeaders(reply: FastifyReply, state: RateLimitState): void {
  reply.header('X-RateLimit-Limit', String(state.limit));
  reply.header('X-RateLimit-Remaining', String(state.remaining));
  reply.header('X-RateLimit-Reset', String(state.reset));
}

function rateLimitedError(state: RateLimitState): AppError {
  const wait = secondsUntilReset(state);
  return new AppError('rate_limited', `Rate limit of ${state.limit} requests per minute exceeded.`, { retry: `after_seconds:${wait}` });
}

/**
 * Checks in the order the decisions fix: key (401) → address (403) → rate limit (429) → scope (403).
 * Requests with no valid key are counted per client address, so they carry the headers too.
 */
/** Requests with no valid key count against the client address; over the limit is a 429. */
async function limitByAddress(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const state = await hitRateLimit(ctx.sql, `ip:${request.ip}`, ctx.config.RATE_LIMIT_PER_MINUTE);
  setRateHeaders(reply, state);
  if (state.exceeded) throw rateLimitedError(state);
}

async function authenticate(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, def: RouteDef | undefined): Promise<void> {
  const defaultLimit = ctx.config.RATE_LIMIT_PER_MINUTE;
  const header = request.headers['x-api-key'];
  const key = Array.isArray(header) ? header[0] : header;
  const byAddress = async (err: AppError): Promise<never> => {
    await limitByAddress(ctx, request, reply);
    throw err;
  };
  if (!def) return void (await byAddress(new AppError('route_not_found', `No route ${request.method} ${request.url.split('?')[0]}.`)));
  if (!key) return byAddress(new AppError('missing_api_key', 'Send your API key in the X-API-Key header.'));
  const auth = key.length <= 200 ? await ctx.keys.lookup(key) : null;
  if (!auth) return byAddress(new AppError('invalid_api_key', 'The API key is not valid or has been revoked.'));
  if (!ipAllowed(auth.allowedIps, request.ip)) {
    return byAddress(new AppError('ip_not_allowed', `Requests from ${request.ip} are not allowed for this key.`));
  }
  const state = await hitRateLimit(ctx.sql, `key:${auth.keyId}`, auth.rateLimit ?? defaultLimit);
  setRateHeaders(reply, state);
  if (state.exceeded) throw rateLimitedError(state);
  if (def.scope && !hasScope(auth.scopes, def.scope)) {
    throw new AppError('insufficient_scope', `This key lacks the scope ${def.scope}.`, { details: { required_scope: def.scope } });
  }
  request.auth = auth;
}

function serialize(result: RouteResult): string {
  return result.status === 204 ? '' : JSON.stringify(result.body);
}

function send(reply: FastifyReply, status: number, body: string, headers?: Record<string, string>): FastifyReply {
  if (headers) reply.headers(headers);
  if (status === 204) return reply.code(204).send();
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

async function runRoute(ctx: AppContext, def: RouteDef, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const auth = request.auth!;
  const params = request.apiParams ?? {};
  // Fastify parses text/plain by itself; the API takes JSON only (415, decisions §14).
  if (request.body !== undefined && !/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
    throw AppError.validation([{ path: 'body', message: 'Content-Type must be application/json' }], 415, 'Content-Type must be application/json.');
  }
  const badQuery = unstorableJson(request.query ?? {}, 'query');
  if (badQuery) throw AppError.validation([badQuery]);
  const query = def.query ? parseOrThrow(def.query, request.query ?? {}, 422, '', 'query') : {};
  const body = def.body ? parseOrThrow(def.body, request.body ?? {}) : undefined;
  const input = { params, query, body, auth, ctx };

  if (def.method === 'GET') {
    const result = await def.handler({ ...input, db: ctx.sql });
    if (Buffer.isBuffer(result.body)) {
      return reply.code(result.status).headers(result.headers ?? {}).send(result.body);
    }
    return send(reply, result.status, serialize(result), result.headers);
  }

  const idemHeader = request.headers['idempotency-key'];
  const idemKey = def.idempotent ? (Array.isArray(idemHeader) ? idemHeader[0] : idemHeader) : undefined;
  if (idemKey === undefined) {
    const result = await ctx.sql.begin((tx) => def.handler({ ...input, db: tx }));
    return send(reply, result.status, serialize(result), result.headers);
  }

  if (idemKey.length < 1 || idemKey.length > 255) {
    throw AppError.validation([{ path: 'Idempotency-Key', message: 'must be 1 to 255 characters' }]);
  }
  const merchantId = auth.merchant.id;
  // The route pattern with its parsed ids, so `/invoices/` and `/invoices` are one scope.
  const route = `${def.method} ${def.path.replace(/:(\w+)/g, (_, name: string) => String((params as Record<string, unknown>)[name]))}`;
  const claim = await claimKey(ctx.sql, merchantId, route, idemKey, requestHash(request.body));
  switch (claim.kind) {
    case 'in_progress':
      throw new AppError('idempotency_conflict', 'A request with this Idempotency-Key is still being processed.');
    case 'mismatch':
      throw AppError.validation(
        [{ path: 'Idempotency-Key', message: 'was already used with a different request body' }],
        422,
        'This Idempotency-Key was already used with a different request body.',
      );
    case 'replay':
      reply.header('Idempotent-Replayed', 'true');
      return send(reply, claim.status, claim.body);
  }
  try {
    let serialized = '';
    const result = await ctx.sql.begin(async (tx) => {
      const r = await def.handler({ ...input, db: tx });
      serialized = serialize(r);
      await completeKey(tx, merchantId, route, idemKey, r.status, serialized);
      return r;
    });
    return send(reply, result.status, serialized, result.headers);
  } catch (err) {
    const appErr = toAppError(err);
    // A request that began executing and ended in "not found" or "conflict" has an answer worth
    // replaying; anything else leaves the key free for a corrected retry.
    if (appErr.status === 404 || appErr.status === 409) {
      const body = JSON.stringify(envelope(appErr, request));
      await completeKey(ctx.sql, merchantId, route, idemKey, appErr.status, body);
      // The stored bytes themselves, so that a replay is byte-identical to this first answer.
      return send(reply, appErr.status, body);
    }
    await releaseKey(ctx.sql, merchantId, route, idemKey).catch(() => {});
    throw appErr;
  }
}

/** Registers the external API's routes with auth, scopes, rate limit, validation and idempotency. */
export function registerApi(app: FastifyInstance, ctx: AppContext, routes: RouteDef[]): void {
  app.addHook('onRequest', async (request, reply) => {
    // An API route is known by the route matched, not by the raw URL: `/api/v1/%65xternal/...`
    // reaches the same handler and must not skip authentication.
    const def = request.routeOptions.config.routeDef;
    if (!def) {
      const path = request.url.split('?')[0] ?? '';
      if (!path.startsWith(`${API_BASE}/`) && path !== API_BASE) return;
      // The reference (a route of its own with no RouteDef) needs no key, so it is counted per
      // address like any keyless request; an unknown path under the prefix, /docs included, is an
      // unknown route (404 with the rate-limit headers).
      if (request.routeOptions.url !== undefined) return limitByAddress(ctx, request, reply);
    }
    await authenticate(ctx, request, reply, def);
    // The path id is checked here, before Fastify parses the body, so a malformed id wins over a
    // body of the wrong type (decisions §14: scope → path id → body).
    if (def?.params) request.apiParams = parseOrThrow(def.params, request.params, def.malformedIdStatus ?? 400);
  });
  for (const def of routes) {
    app.route({
      method: def.method,
      url: API_BASE + def.path,
      config: { routeDef: def },
      handler: (request, reply) => runRoute(ctx, def, request, reply),
    });
  }
}
