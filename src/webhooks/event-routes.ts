import { defineRoute } from '../http/route.js';
import * as s from './event-schemas.js';
import * as service from './event-service.js';

export const eventRoutes = [
  defineRoute({
    method: 'GET',
    path: '/events',
    operationId: 'listEvents',
    summary: 'List events, newest first',
    description:
      'Every event of the account within the retention (EVENT_RETENTION_DAYS, default 30 days), ordered by id (UUIDv7, so by time), newest first; ' +
      'each exactly the body its webhook deliveries carry. Page with `starting_after`, the last id of a page (one of your events, else 422 naming it). ' +
      '`created_gte` (inclusive) and `created_lt` (exclusive) filter on created_at. `delivery_success=false` finds what to redeliver: ' +
      'POST /webhooks/endpoints/{endpoint_id}/recover sends it again.',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    query: s.listEventsQuery,
    response: { status: 200, description: 'A page of events', schema: s.eventList },
    errors: [],
    example: { query: 'limit=20&type=invoice.paid,invoice.cancelled&delivery_success=false' },
    handler: async ({ query, auth, db }) => ({ status: 200, body: await service.listEvents(db, auth.merchant.id, query) }),
  }),
  defineRoute({
    method: 'GET',
    path: '/events/:event_id',
    operationId: 'getEvent',
    summary: 'Get an event',
    description: 'The event exactly as its webhook deliveries carry it. An event older than the retention is gone: 404 event_not_found.',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    // A malformed id is 400, as on every route outside /webhooks (api-spec "Errors", note 1).
    params: s.eventIdParams,
    response: { status: 200, description: 'The event', schema: s.eventResource },
    errors: ['event_not_found'],
    handler: async ({ params, auth, db }) => ({ status: 200, body: await service.getEvent(db, auth.merchant.id, params.event_id) }),
  }),
];
