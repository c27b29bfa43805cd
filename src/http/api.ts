import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { AppError } from '../errors.js';
import type { AppContext } from './context.js';
import { type ApiKey, type AuthContext, ipAllowed } from './auth.js';
import { ConcurrencyLimiter } from './concurrency.js';
import { RateLimiter, secondsUntilReset, type RateLimitState } from './rate-limit.js';
import { isKeyTaken, lookupKey, requestHash, storeAnswer, type KeyLookup } from './idempotency.js';
import { pipelinedTransaction } from '../db/transaction.js';
import { parseOrThrow, unstorableJson } from './validation.js';
import { hasScope } from './scopes.js';
import { toAppError, envelope } from './envelope.js';
import type { RouteDef, RouteResult } from './route.js';
import { responseSerializer } from './response-schema.js';

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
  interface FastifyInstance {
    /** This process's share of the API's rate-limit counters; flushed on close. */
    rateLimiter: RateLimiter;
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

/** Requests with no valid key count against the client address; over the limit is a 429. */
async function limitByAddress(ctx: AppContext, limiter: RateLimiter, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const state = await limiter.hit(`ip:${request.ip}`, ctx.config.RATE_LIMIT_PER_MINUTE);
  setRateHeaders(reply, state);
  if (state.exceeded) throw rateLimitedError(state);
}

/** The route and the valid key of a request, or why it is refused before its key is counted. */
function admission(request: FastifyRequest, def: RouteDef | undefined, key: string | undefined, apiKey: ApiKey | null): AppError | [RouteDef, ApiKey] {
  if (!def) return new AppError('route_not_found', `No route ${request.method} ${request.url.split('?')[0]}.`);
  if (!key) return new AppError('missing_api_key', 'Send your API key in the X-API-Key header.');
  if (!apiKey) return new AppError('invalid_api_key', 'The API key is not valid or has been revoked.');
  if (!ipAllowed(apiKey.allowedIps, request.ip)) return new AppError('ip_not_allowed', `Requests from ${request.ip} are not allowed for this key.`);
  return [def, apiKey];
}

/**
 * Checks in the order the decisions fix: key (401) → address (403) → rate limit, then requests
 * in flight (429) → scope (403).
 */
async function authenticate(ctx: AppContext, limiter: RateLimiter, concurrency: ConcurrencyLimiter, request: FastifyRequest, reply: FastifyReply, route: RouteDef | undefined): Promise<void> {
  const header = request.headers['x-api-key'];
  const key = Array.isArray(header) ? header[0] : header;
  const admitted = admission(request, route, key, route && key && key.length <= 200 ? await ctx.keys.lookup(key) : null);
  if (admitted instanceof AppError) {
    await limitByAddress(ctx, limiter, request, reply);
    throw admitted;
  }
  const [def, apiKey] = admitted;
  const state = await limiter.hit(`key:${apiKey.keyId}`, apiKey.rateLimit ?? ctx.config.RATE_LIMIT_PER_MINUTE);
  setRateHeaders(reply, state);
  if (state.exceeded) throw rateLimitedError(state);
  const release = concurrency.acquire(apiKey.keyId);
  if (!release) {
    throw new AppError('rate_limited', `At most ${ctx.config.API_CONCURRENCY_PER_KEY} requests of one key may be in flight at once.`, {
      retry: 'after_seconds:1',
    });
  }
  // 'close' comes once the answer is written or the client has gone, whichever is first.
  reply.raw.once('close', release);
  if (def.scope && !hasScope(apiKey.scopes, def.scope)) {
    throw new AppError('insufficient_scope', `This key lacks the scope ${def.scope}.`, { details: { required_scope: def.scope } });
  }
  request.auth = { ...apiKey, rateLimitWindow: { limit: state.limit, remaining: state.remaining, reset: state.reset } };
}

/** The answer as its route's response schema writes it (responseSerializer). */
function serialize(def: RouteDef, result: RouteResult): string {
  if (result.status === 204) return '';
  return def.response.schema ? responseSerializer(def.response.schema)(result.body) : JSON.stringify(result.body);
}

function send(reply: FastifyReply, status: number, body: string, headers?: Record<string, string>): FastifyReply {
  if (headers) reply.headers(headers);
  if (status === 204) return reply.code(204).send();
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

type StoredAnswer = Exclude<KeyLookup, { kind: 'new' }>;

function answerStored(reply: FastifyReply, found: StoredAnswer): FastifyReply {
  switch (found.kind) {
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
      return send(reply, found.status, found.body);
  }
}

/** Thrown to roll back the work done beside the lookup of a key that was answered or is running. */
class KeyAnswered extends Error {
  constructor(readonly found: StoredAnswer) {
    super('the Idempotency-Key was answered or is running');
  }
}

async function lookUpAgain(ctx: AppContext, merchantId: string, route: string, key: string, hash: string): Promise<StoredAnswer> {
  const found = await lookupKey(ctx.sql, merchantId, route, key, hash);
  // Only an answer that expired in the meantime could be missing now: retrying is right then too.
  return found.kind === 'new' ? { kind: 'in_progress' } : found;
}

const NO_BODY = z.strictObject({});

async function runRoute(ctx: AppContext, def: RouteDef, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const auth = request.auth!;
  const params = request.apiParams ?? {};
  // Fastify parses text/plain by itself; the API takes JSON only (415, docs/decisions.md §14).
  if (request.body !== undefined && !/^application\/json\s*(;|$)/i.test(request.headers['content-type'] ?? '')) {
    throw AppError.validation([{ path: 'body', message: 'Content-Type must be application/json' }], 415, 'Content-Type must be application/json.');
  }
  const badQuery = unstorableJson(request.query ?? {}, 'query');
  if (badQuery) throw AppError.validation([badQuery]);
  // `?limit=10&limit=20` parses as a list; no parameter of this API takes one (a list of types is
  // comma-separated), so a repeated one is refused by name rather than as "not a number".
  const repeated = Object.entries(request.query ?? {}).filter(([, v]) => Array.isArray(v));
  if (repeated.length) throw AppError.validation(repeated.map(([name]) => ({ path: name || 'query', message: 'must be given once' })));
  const query = def.query ? parseOrThrow(def.query, request.query ?? {}, 422, '', 'query') : {};
  // A route that takes no body still refuses a field sent in one: a typo never passes unread
  // (docs/decisions.md §3). An empty object is no body.
  const body = def.body ? parseOrThrow(def.body, request.body ?? {}) : void parseOrThrow(NO_BODY, request.body ?? {});
  const input = { params, query, body, auth, ctx };

  if (def.method === 'GET' || def.ownTransactions) {
    const result = await def.handler({ ...input, db: ctx.sql, prepared: await def.prepare?.(input) });
    if (Buffer.isBuffer(result.body)) {
      return reply.code(result.status).headers(result.headers ?? {}).send(result.body);
    }
    return send(reply, result.status, serialize(def, result), result.headers);
  }

  const idemHeader = request.headers['idempotency-key'];
  const idemKey = def.idempotent ? (Array.isArray(idemHeader) ? idemHeader[0] : idemHeader) : undefined;
  if (idemKey === undefined) {
    const prepared = await def.prepare?.(input);
    const result = await pipelinedTransaction(ctx.sql, (tx) => def.handler({ ...input, db: tx, prepared }));
    return send(reply, result.status, serialize(def, result), result.headers);
  }

  if (idemKey.length < 1 || idemKey.length > 255) {
    throw AppError.validation([{ path: 'Idempotency-Key', message: 'must be 1 to 255 characters' }]);
  }
  const merchantId = auth.merchant.id;
  // The route pattern with its parsed ids, so `/invoices/` and `/invoices` are one scope.
  const route = `${def.method} ${def.path.replace(/:(\w+)/g, (_, name: string) => String((params as Record<string, unknown>)[name]))}`;
  const hash = requestHash(request.body);
  if (def.prepareOncePerKey) {
    // A key already answered (or running) is answered without calling out again; the lookup
    // inside the transaction below still decides a race between two new requests.
    const early = await lookupKey(ctx.sql, merchantId, route, idemKey, hash);
    if (early.kind !== 'new') return answerStored(reply, early);
  }
  const prepared = await def.prepare?.(input);
  let outcome: { result: RouteResult; serialized: string };
  try {
    outcome = await pipelinedTransaction(ctx.sql, async (tx) => {
      // The key's lookup and the route's work go out together, the lookup first: a new key (nearly
      // every request) then costs no round trip of its own. A key answered or running rolls the
      // work back, whatever it came to.
      const [key, work] = await Promise.allSettled([lookupKey(tx, merchantId, route, idemKey, hash), def.handler({ ...input, db: tx, prepared })]);
      if (key.status === 'rejected') throw key.reason;
      if (key.value.kind !== 'new') throw new KeyAnswered(key.value);
      if (work.status === 'rejected') throw work.reason;
      const result = work.value;
      const serialized = serialize(def, result);
      tx.commitWith(storeAnswer(tx, merchantId, route, idemKey, hash, result.status, serialized));
      return { result, serialized };
    });
  } catch (err) {
    if (err instanceof KeyAnswered) return answerStored(reply, err.found);
    // Another request stored its answer first; this one's work was rolled back.
    if (isKeyTaken(err)) return answerStored(reply, await lookUpAgain(ctx, merchantId, route, idemKey, hash));
    const appErr = toAppError(err);
    // docs/decisions.md §14: of the failures, only a conflict of a request that began executing is an
    // answer worth replaying; anything else (a 404 included) rolled back with nothing stored,
    // leaving the key free, so that failed requests cannot fill the table.
    if (appErr.status !== 409) throw appErr;
    const body = JSON.stringify(envelope(appErr, request));
    const found = await pipelinedTransaction(ctx.sql, async (tx) => {
      const again = await lookupKey(tx, merchantId, route, idemKey, hash);
      if (again.kind === 'new') tx.commitWith(storeAnswer(tx, merchantId, route, idemKey, hash, appErr.status, body));
      return again;
    });
    if (found.kind !== 'new') return answerStored(reply, found);
    // The stored bytes themselves, so that a replay is byte-identical to this first answer.
    return send(reply, appErr.status, body);
  }
  return send(reply, outcome.result.status, outcome.serialized, outcome.result.headers);
}

/** Registers the external API's routes with auth, scopes, rate limit, validation and idempotency. */
export function registerApi(app: FastifyInstance, ctx: AppContext, routes: RouteDef[]): void {
  const limiter = new RateLimiter(ctx.sql, (err) => app.log.warn({ err }, 'sharing rate-limit counts failed'));
  app.decorate('rateLimiter', limiter);
  const concurrency = new ConcurrencyLimiter(ctx.config.API_CONCURRENCY_PER_KEY);
  app.addHook('onClose', () => limiter.close());
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
      if (request.routeOptions.url !== undefined) return limitByAddress(ctx, limiter, request, reply);
    }
    await authenticate(ctx, limiter, concurrency, request, reply, def);
    // The path id is checked here, before Fastify parses the body, so a malformed id wins over a
    // body of the wrong type (docs/decisions.md §14: scope → path id → body).
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
