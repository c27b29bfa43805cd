import { z } from 'zod';
import { oneLine, rfc3339, timestamp, uuid } from '../http/schemas.js';
import { eventTypeNames } from '../events/emit.js';

export const eventType = z.enum(eventTypeNames, { message: `must be one of: ${eventTypeNames.join(', ')}` });

// The https rule and the address checks answer 400 webhook_endpoint_invalid (docs/decisions.md §10),
// so the schema only bounds the string.
const endpointUrl = z.string().trim().min(1).max(2048).meta({ description: 'https:// URL that receives the events; its host must resolve to a public address', example: 'https://example.com/webhooks/invoicing' });
const description = oneLine().trim().max(500);
const events = z
  .array(eventType)
  .max(eventTypeNames.length * 2)
  .transform((list) => [...new Set(list)])
  .meta({ description: 'Event types to receive; an empty list means every type' });

export const createEndpointBody = z.strictObject({
  url: endpointUrl,
  description: description.optional(),
  events: events.optional(),
  is_sandbox: z.boolean().optional().meta({ description: 'Deliveries are marked test and never count toward disabling' }),
});
export type CreateEndpointInput = z.output<typeof createEndpointBody>;

export const updateEndpointBody = z.strictObject({
  url: endpointUrl.optional(),
  description: description.nullable().optional(),
  events: events.optional(),
  enabled: z.boolean().optional().meta({ description: 'true re-enables a disabled endpoint and clears its failure streak' }),
  is_sandbox: z.boolean().optional(),
});
export type UpdateEndpointInput = z.output<typeof updateEndpointBody>;

export const endpointIdParams = z.strictObject({ endpoint_id: uuid });

export const testEndpointBody = z
  .strictObject({ event: eventType.optional().meta({ description: 'Event type to simulate; default invoice.paid' }) })
  .optional();

export const verifySignatureBody = z.strictObject({
  signature: z.string().min(1).max(2000).meta({ description: 'The X-Webhook-Signature value', example: 't=1763781373,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd' }),
  secret: z.string().min(1).max(200).meta({ description: 'The endpoint signing secret (whsec_…)' }),
  payload: z.string().max(1024 * 1024).optional().meta({ description: 'The raw request body received; without it only format and timestamp are checked' }),
});

export const endpointResource = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string().nullable(),
    events: z.array(z.string()).meta({ description: 'Subscribed types; empty means every type' }),
    enabled: z.boolean(),
    secret_prefix: z.string().meta({ description: 'First 12 characters of the secret, to tell secrets apart' }),
    consecutive_failures: z.number().int(),
    disabled_at: timestamp.nullable(),
    disabled_reason: z.enum(['consecutive_failures', 'gone']).nullable(),
    is_sandbox: z.boolean(),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'WebhookEndpoint' });
export type EndpointResource = z.output<typeof endpointResource>;

export const endpointWithSecret = endpointResource
  .extend({ secret: z.string().meta({ description: 'Signing secret, shown only now', example: 'whsec_Q2h2b3N0YW5kby1lc3RvLWVzLXVuLWVqZW1wbG8' }) })
  .meta({ id: 'WebhookEndpointWithSecret' });

export const deliveryStatuses = ['pending', 'success', 'failed', 'retrying'] as const;

/**
 * What the API tells of a failed attempt (docs/decisions.md §10). Coarse on purpose: the raw socket error
 * ("connect ECONNREFUSED 203.0.113.7:5432") told a merchant which ports of a host answer, so it
 * is kept for support staff only.
 */
export const deliveryErrorCategories = [
  'timeout',
  'connection_refused',
  'connection_reset',
  'tls_error',
  'dns_error',
  'address_not_allowed',
  'redirect',
  'http_error',
] as const;
export type DeliveryErrorCategory = (typeof deliveryErrorCategories)[number];

export const deliveryResource = z
  .object({
    id: z.string(),
    endpoint_id: z.string(),
    event_type: z.string(),
    event_id: z.string(),
    status: z.enum(deliveryStatuses),
    attempts: z.number().int(),
    max_attempts: z.number().int(),
    next_retry_at: timestamp.nullable(),
    last_response_status: z.number().int().nullable(),
    last_error: z
      .enum(deliveryErrorCategories)
      .nullable()
      .meta({
        description:
          'Why the last attempt failed: timeout (no answer in time), connection_refused (no connection could be made), ' +
          'connection_reset (the connection broke), tls_error (handshake or certificate), dns_error (the host does not resolve), ' +
          'address_not_allowed (the URL, port or address is refused), redirect (a 3xx, never followed), ' +
          'http_error (any other non-2xx answer, 410 included). Null after a success or before any attempt.',
      }),
    completed_at: timestamp.nullable(),
    is_test: z.boolean(),
    created_at: timestamp,
  })
  .meta({ id: 'WebhookDelivery' });
export type DeliveryResource = z.output<typeof deliveryResource>;

export const eventTypeList = z.object({
  data: z.array(z.object({ type: z.string(), description: z.string() })),
});
export const endpointList = z.object({ data: z.array(endpointResource) });

export const verifyResult = z
  .object({
    valid: z.boolean(),
    message: z.string(),
    expected_signature: z.string().optional().meta({ description: 'The header we would have sent, when invalid and the payload was given' }),
  })
  .meta({ id: 'SignatureVerification' });

export const recoverBody = z
  .strictObject({
    since: rfc3339.meta({ description: 'Recover events created at or after this instant; at most EVENT_RETENTION_DAYS (default 30) ago' }),
    until: rfc3339.optional().meta({ description: 'Recover events created before this instant; default now' }),
  })
  .refine((b) => b.until === undefined || Date.parse(b.until) > Date.parse(b.since), { path: ['until'], message: 'must be later than since' });
export type RecoverInput = z.output<typeof recoverBody>;

export const recoverResult = z
  .object({
    events: z.number().int().meta({ description: 'Events queued for delivery again' }),
    has_more: z.boolean().meta({ description: 'More missed events wait in the window (at most 1000 are queued per call): call again' }),
  })
  .meta({ id: 'WebhookRecovery' });
