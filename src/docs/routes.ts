import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import type { RouteDef } from '../http/route.js';
import { API_PREFIX } from '../http/urls.js';
import { buildOpenApi } from './openapi.js';

/** The reference needs no key. It is built once: routes do not change while the process runs. */
export function registerDocs(app: FastifyInstance, ctx: AppContext, routes: RouteDef[]): void {
  const openapi = JSON.stringify(buildOpenApi(routes, ctx.config.publicBaseUrl));
  app.get(`${API_PREFIX}/docs/openapi.json`, async (_req, reply) => reply.type('application/json; charset=utf-8').send(openapi));
}
