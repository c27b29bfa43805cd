import { z } from 'zod';
import type { ErrorCode } from '../errors.js';
import type { Scope } from './scopes.js';
import type { AuthContext } from './auth.js';
import type { AppContext } from './context.js';
import type { Queryable, Tx } from '../db/client.js';

export interface RouteResult<T = unknown> {
  status: number;
  /** JSON-serialised through the route's response schema, except a Buffer (a GET's file), sent as is with the Content-Type of `headers`. */
  body: T;
  headers?: Record<string, string>;
}

/**
 * What a handler answers: the output of its response schema, so that a body the document does not
 * describe fails to compile; a route without one answers a file (Buffer) or nothing (204).
 */
export type ResponseBody<S extends z.ZodType> = [S] extends [z.ZodNever] ? Buffer | null : z.output<S>;

/** What a route knows of its request before any transaction begins. */
export interface RequestInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  auth: AuthContext;
  ctx: AppContext;
}

export interface HandlerInput<P, Q, B, R = undefined> extends RequestInput<P, Q, B> {
  /**
   * A transaction for routes that change data (method ≠ GET); the pool for reads and for
   * routes with `ownTransactions`.
   */
  db: Queryable;
  /** What `prepare` returned, before the transaction began. */
  prepared: R;
}

/**
 * One description of a route: it validates requests, checks scope, and feeds the OpenAPI
 * document and llms.txt, so the docs cannot drift from what is enforced.
 */
export interface RouteDef<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  R = unknown,
  S extends z.ZodType = z.ZodType,
> {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Fastify-style path relative to the API base, e.g. `/invoices/:invoice_id`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  /** null: any valid key. */
  scope: Scope | null;
  params?: P;
  query?: Q;
  body?: B;
  /** Status for a malformed path id: the spec says 400 on most resources, 422 on webhooks. */
  malformedIdStatus?: 400 | 422;
  idempotent?: boolean;
  /**
   * Outbound work (an exchange-rate provider, a payment gateway) done on the pool before the
   * request's transaction begins, so that no connection or transaction waits on another
   * service (docs/decisions.md §10). It runs once the request is valid. What it returns is the handler's
   * `prepared`.
   */
  prepare?(input: RequestInput<z.output<P>, z.output<Q>, z.output<B>>): Promise<R>;
  /**
   * `prepare` leaves something behind outside (a gateway session): on an idempotent route it then
   * runs only for a key not answered yet, at the cost of one more lookup. Without this, a repeat
   * re-runs it, which must be harmless (rates already fetched are read from the table).
   */
  prepareOncePerKey?: true;
  /**
   * The handler calls out itself (a test webhook delivery): it is given the pool, not a
   * transaction, and commits its own short transactions around the call. Never idempotent.
   */
  ownTransactions?: true;
  response: { status: number; description: string; schema?: S; contentType?: string };
  errors: ErrorCode[];
  /** For llms.txt's curl example. */
  example?: { body?: unknown; query?: string; params?: Record<string, string> };
  handler(input: HandlerInput<z.output<P>, z.output<Q>, z.output<B>, R>): Promise<RouteResult<ResponseBody<S>>>;
}

export function defineRoute<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType, R = undefined, S extends z.ZodType = z.ZodNever>(
  def: RouteDef<P, Q, B, R, S>,
): RouteDef {
  return def as unknown as RouteDef;
}

export type { Tx };
