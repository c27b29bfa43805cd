import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../http/context.js';
import { invoiceUrls } from '../http/urls.js';
import { receiveNotification } from './notifications.js';

function first(v: unknown): string | null {
  const one = Array.isArray(v) ? v[0] : v;
  return typeof one === 'string' && one.length > 0 ? one : typeof one === 'number' ? String(one) : null;
}

/**
 * `POST /providers/{provider}/notifications/{merchant_id}`: where a gateway reports a merchant's
 * payments (docs/decisions.md §16; the notification URL of each Mercado Pago preference). No API key: the
 * signature is the credential. Errors answer in the one envelope, as the API's do.
 */
export function registerProviderNotifications(app: FastifyInstance, ctx: AppContext): void {
  const deps = { urls: invoiceUrls(ctx.config), boss: ctx.boss };
  app.post<{ Params: { provider: string; merchant_id: string }; Querystring: Record<string, unknown> }>(
    '/providers/:provider/notifications/:merchant_id',
    async (request, reply) => {
      const body = (request.body ?? {}) as { type?: unknown; data?: { id?: unknown } };
      const query = request.query;
      // The signature covers the id as the URL's query carries it; the body's is a fallback only for reading.
      const dataId = first(query['data.id']) ?? first(body.data?.id) ?? '';
      const outcome = await receiveNotification(
        ctx.sql,
        ctx.secrets,
        request.params.provider,
        request.params.merchant_id,
        {
          dataId,
          type: first(query.type) ?? first(body.type),
          signature: first(request.headers['x-signature']),
          requestId: first(request.headers['x-request-id']),
        },
        deps,
      );
      return reply.code(200).send({ received: true, outcome });
    },
  );
}
