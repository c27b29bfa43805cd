import type { AppContext } from '../context.js';
import { defineRoute } from '../http/route.js';
import type { DeliveryDeps } from './delivery.js';
import * as s from './schemas.js';
import * as service from './service.js';

function deliveryDeps(ctx: AppContext): DeliveryDeps {
  return { config: ctx.config, boss: ctx.boss, secrets: ctx.secrets };
}

// The spec: a malformed id on webhook routes is 422, where other resources answer 400.
const malformedIdStatus = 422;
const endpointExample = { url: 'https://erp.example.cl/webhooks/invoicing', description: 'ERP', events: ['invoice.paid', 'invoice.cancelled'] };

export const webhookRoutes = [
  defineRoute({
    method: 'GET',
    path: '/webhooks/events',
    operationId: 'listWebhookEventTypes',
    summary: 'Event types an endpoint can subscribe to',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    response: { status: 200, description: 'Every event type with its description', schema: s.eventTypeList },
    errors: [],
    handler: async () => ({ status: 200, body: service.listEventTypes() }),
  }),
  defineRoute({
    method: 'POST',
    path: '/webhooks/endpoints',
    operationId: 'createWebhookEndpoint',
    summary: 'Register an endpoint; the signing secret is shown only in this answer',
    description:
      'The URL must be https:// and must not resolve to a private, loopback, link-local, CGNAT or metadata address ' +
      '(400 webhook_endpoint_invalid). Deliveries are signed: `X-Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the secret>`.',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    body: s.createEndpointBody,
    response: { status: 201, description: 'The endpoint with its secret', schema: s.endpointWithSecret },
    errors: ['webhook_endpoint_invalid'],
    example: { body: endpointExample },
    handler: async ({ body, auth, ctx, db }) => ({
      status: 201,
      body: await service.createEndpoint(db, auth.merchant.id, body, deliveryDeps(ctx)),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/webhooks/endpoints',
    operationId: 'listWebhookEndpoints',
    summary: 'Every endpoint of the merchant (no secrets)',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    response: { status: 200, description: 'All endpoints, oldest first', schema: s.endpointList },
    errors: [],
    handler: async ({ auth, db }) => ({ status: 200, body: await service.listEndpoints(db, auth.merchant.id) }),
  }),
  defineRoute({
    method: 'GET',
    path: '/webhooks/endpoints/:endpoint_id',
    operationId: 'getWebhookEndpoint',
    summary: 'Get an endpoint',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    params: s.endpointIdParams,
    malformedIdStatus,
    response: { status: 200, description: 'The endpoint', schema: s.endpointResource },
    errors: ['webhook_endpoint_not_found'],
    handler: async ({ params, auth, db }) => ({ status: 200, body: await service.getEndpoint(db, auth.merchant.id, params.endpoint_id) }),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/webhooks/endpoints/:endpoint_id',
    operationId: 'updateWebhookEndpoint',
    summary: 'Update an endpoint (only the fields given change)',
    description: '`enabled: true` re-enables a disabled endpoint and clears its failure streak.',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    params: s.endpointIdParams,
    malformedIdStatus,
    body: s.updateEndpointBody,
    response: { status: 200, description: 'The endpoint', schema: s.endpointResource },
    errors: ['webhook_endpoint_not_found', 'webhook_endpoint_invalid'],
    example: { body: { enabled: true } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 200,
      body: await service.updateEndpoint(db, auth.merchant.id, params.endpoint_id, body, deliveryDeps(ctx)),
    }),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/webhooks/endpoints/:endpoint_id',
    operationId: 'deleteWebhookEndpoint',
    summary: 'Delete an endpoint; its waiting deliveries stop',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    params: s.endpointIdParams,
    malformedIdStatus,
    response: { status: 204, description: 'Deleted (no body)' },
    errors: ['webhook_endpoint_not_found'],
    handler: async ({ params, auth, db }) => {
      await service.deleteEndpoint(db, auth.merchant.id, params.endpoint_id);
      return { status: 204, body: null };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/webhooks/endpoints/:endpoint_id/rotate-secret',
    operationId: 'rotateWebhookSecret',
    summary: 'Replace the signing secret; the old one is invalid at once',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    params: s.endpointIdParams,
    malformedIdStatus,
    response: { status: 200, description: 'The endpoint with its new secret', schema: s.endpointWithSecret },
    errors: ['webhook_endpoint_not_found'],
    handler: async ({ params, auth, ctx, db }) => ({
      status: 200,
      body: await service.rotateSecret(db, auth.merchant.id, params.endpoint_id, deliveryDeps(ctx)),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/webhooks/endpoints/:endpoint_id/test',
    operationId: 'testWebhookEndpoint',
    summary: 'Deliver a sample event now (one attempt) and return the delivery',
    description: 'Any event type may be simulated (default invoice.paid); the delivery has is_test true and max_attempts 1 and never counts toward disabling.',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    params: s.endpointIdParams,
    malformedIdStatus,
    body: s.testEndpointBody,
    response: { status: 200, description: 'The delivery after its attempt', schema: s.deliveryResource },
    errors: ['webhook_endpoint_not_found'],
    example: { body: { event: 'invoice.paid' } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 200,
      body: await service.testEndpoint(db, auth.merchant.id, params.endpoint_id, body?.event, deliveryDeps(ctx)),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/webhooks/verify-signature',
    operationId: 'verifyWebhookSignature',
    summary: 'Check a signature header against a secret (debugging; 24-hour tolerance)',
    description: 'Give `payload`, the raw body received, to check the HMAC; without it only the format and the timestamp are checked and the answer is valid: false.',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    body: s.verifySignatureBody,
    response: { status: 200, description: 'Whether the signature is valid, and why not', schema: s.verifyResult },
    errors: [],
    example: { body: { signature: 't=1763781373,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd', secret: 'whsec_…', payload: '{"id":"…"}' } },
    handler: async ({ body }) => ({ status: 200, body: service.verify(body.signature, body.secret, body.payload) }),
  }),
];
