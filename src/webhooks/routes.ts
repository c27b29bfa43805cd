import { defineRoute } from '../http/route.js';
import * as s from './schemas.js';
import * as service from './service.js';
import { RECOVER_MAX, recoverEndpoint } from './recover.js';

// The spec: a malformed id on webhook routes is 422, where other resources answer 400.
const malformedIdStatus = 422;
const endpointExample = { url: 'https://example.com/webhooks/invoicing', description: 'ERP', events: ['invoice.paid', 'invoice.cancelled'] };

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
      'The URL must be https:// on port 443 or 8443 and must not resolve to a private, loopback, link-local, CGNAT or metadata address ' +
      '(400 webhook_endpoint_invalid). An account has at most 16 endpoints and registers a URL once: a 17th endpoint, or a URL ' +
      'another endpoint of the account already has, is 400 webhook_endpoint_invalid naming `url`. ' +
      'Deliveries are signed: `X-Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the secret>`.',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    body: s.createEndpointBody,
    response: { status: 201, description: 'The endpoint with its secret', schema: s.endpointWithSecret },
    errors: ['webhook_endpoint_invalid'],
    example: { body: endpointExample },
    // Resolving the host is outbound work: done before the transaction begins.
    prepare: ({ body, ctx }) => service.usableUrl(body.url, ctx),
    handler: async ({ body, auth, ctx, db, prepared }) => ({
      status: 201,
      body: await service.createEndpoint(db, auth.merchant.id, body, prepared, ctx),
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
    description:
      '`enabled: true` re-enables a disabled endpoint and clears its failure streak. A new `url` follows the rules of create; ' +
      'the URL of another endpoint of the account is 400 webhook_endpoint_invalid naming `url`.',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    params: s.endpointIdParams,
    malformedIdStatus,
    body: s.updateEndpointBody,
    response: { status: 200, description: 'The endpoint', schema: s.endpointResource },
    errors: ['webhook_endpoint_not_found', 'webhook_endpoint_invalid'],
    example: { body: { enabled: true } },
    prepare: async ({ body, ctx }) => (body.url === undefined ? undefined : service.usableUrl(body.url, ctx)),
    handler: async ({ params, body, auth, db, prepared }) => ({
      status: 200,
      body: await service.updateEndpoint(db, auth.merchant.id, params.endpoint_id, body, prepared),
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
      body: await service.rotateSecret(db, auth.merchant.id, params.endpoint_id, ctx),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/webhooks/endpoints/:endpoint_id/test',
    operationId: 'testWebhookEndpoint',
    summary: 'Deliver a sample event now (one attempt) and return the delivery',
    description:
      'Any event type may be simulated (default invoice.paid); the delivery has is_test true and max_attempts 1 and never counts toward disabling. ' +
      'The receiver has 10 s to answer (real deliveries: 15 s); a failed attempt gives `last_error`, a category. ' +
      'At most 2 test deliveries of an account are in flight at once: a third is 429 rate_limited with `Retry-After: 1`.',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    params: s.endpointIdParams,
    malformedIdStatus,
    body: s.testEndpointBody,
    response: { status: 200, description: 'The delivery after its attempt', schema: s.deliveryResource },
    errors: ['webhook_endpoint_not_found', 'rate_limited'],
    example: { body: { event: 'invoice.paid' } },
    // The attempt waits on the receiver: the handler commits its own short transactions around it.
    ownTransactions: true,
    handler: async ({ params, body, auth, ctx }) => ({
      status: 200,
      body: await service.testEndpoint(ctx.sql, auth.merchant.id, params.endpoint_id, body?.event, ctx),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/webhooks/endpoints/:endpoint_id/recover',
    operationId: 'recoverWebhookEndpoint',
    summary: 'Deliver again every event the endpoint missed in a time window',
    description:
      'Every event of the endpoint\'s subscription (its types, created since the endpoint was) in [since, until) that did not reach it — ' +
      'never delivered to it (emitted while it was disabled), or whose delivery failed or is still waiting for a retry, and that no replay delivered — ' +
      'is delivered again as a new delivery with a fresh attempt budget, due now; a delivery still waiting for a retry stops, so nothing arrives twice. ' +
      'A replay already under way is left to finish. `since` is at most EVENT_RETENTION_DAYS (default 30) ago, else 422 naming `since`. ' +
      `At most ${RECOVER_MAX} events per call, oldest first: \`has_more\` says to call again. ` +
      'A disabled endpoint is 422 naming `endpoint_id`: enable it first (PATCH enabled: true).',
    tag: 'Webhooks',
    scope: 'webhooks:manage',
    params: s.endpointIdParams,
    malformedIdStatus,
    body: s.recoverBody,
    idempotent: true,
    response: { status: 202, description: 'How many events are queued for delivery', schema: s.recoverResult },
    errors: ['webhook_endpoint_not_found'],
    example: { body: { since: '2026-11-20T00:00:00Z' } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 202,
      body: await recoverEndpoint(db, ctx, auth.merchant.id, params.endpoint_id, body),
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
