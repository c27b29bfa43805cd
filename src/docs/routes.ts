import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../http/context.js';
import type { RouteDef } from '../http/route.js';
import { API_PREFIX } from '../http/urls.js';
import { guide } from './guide.js';
import { renderHtml } from './html.js';
import { buildLlmsTxt } from './llms.js';
import { buildOpenApi, type PublicRoute } from './openapi.js';

/** The reference itself: served under the API prefix, no key needed (api.ts skips `/docs`). */
export const docsRoutes: PublicRoute[] = [
  {
    method: 'GET',
    path: '/docs',
    operationId: 'getReferencePage',
    summary: 'This reference as an HTML page',
    description: 'A self-contained page rendered from the OpenAPI document: guide, every operation with its parameters, body, responses and a curl example.',
    tag: 'Reference',
    contentType: 'text/html; charset=utf-8',
  },
  {
    method: 'GET',
    path: '/docs/openapi.json',
    operationId: 'getOpenApiDocument',
    summary: 'The OpenAPI 3.1 document',
    description: 'Generated from the same route definitions that validate requests, so it cannot drift from what the API enforces.',
    tag: 'Reference',
    contentType: 'application/json; charset=utf-8',
  },
  {
    method: 'GET',
    path: '/docs/llms.txt',
    operationId: 'getLlmsTxt',
    summary: 'The whole reference as plain text for language models',
    description: 'Markdown text: authentication, scopes, errors, idempotency, limits, paging, then every route with its fields, errors and a curl example.',
    tag: 'Reference',
    contentType: 'text/plain; charset=utf-8',
  },
];

const HTML_HEADERS = {
  // Inline CSS only: no script, no external resource.
  'Content-Security-Policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/** Builds the three documents once (routes do not change while the process runs) and serves them. */
export function registerDocs(app: FastifyInstance, ctx: AppContext, routes: RouteDef[]): void {
  const publicBaseUrl = ctx.config.publicBaseUrl;
  const doc = buildOpenApi(routes, publicBaseUrl, docsRoutes);
  const bodies: Record<string, string> = {
    '/docs/openapi.json': JSON.stringify(doc),
    '/docs/llms.txt': buildLlmsTxt(routes, docsRoutes, doc, publicBaseUrl),
    '/docs': renderHtml(doc, guide({ baseUrl: publicBaseUrl + API_PREFIX, routes, publicPaths: docsRoutes.map((r) => r.path) }), publicBaseUrl + API_PREFIX),
  };
  for (const r of docsRoutes) {
    const body = bodies[r.path];
    if (body === undefined) throw new Error(`No document for ${r.path}`);
    const headers = { 'Cache-Control': 'public, max-age=300', ...(r.contentType.startsWith('text/html') ? HTML_HEADERS : { 'X-Content-Type-Options': 'nosniff' }) };
    app.route({
      method: r.method,
      url: API_PREFIX + r.path,
      handler: async (_req, reply) => reply.headers(headers).type(r.contentType).send(body),
    });
  }
}
