// The OpenAPI 3.1 `webhooks` object: what each event's delivery to a merchant's endpoint carries
// (headers, body) and what the receiver's answer means. The bodies are the zod schemas of
// webhooks/event-schemas.ts, which reuse the resources' own, so the document names every field a
// receiver gets.
import { eventTypeNames, eventTypes, type EventType } from '../events/emit.js';
import { eventSchemas } from '../webhooks/event-schemas.js';
import { DEFAULT_RETRY_SCHEDULE, USER_AGENT } from '../webhooks/delivery.js';
import { DELIVERY_TIMEOUT_MS, RESPONSE_KEEP_BYTES, TEST_DELIVERY_TIMEOUT_MS } from '../webhooks/http-post.js';
import type { Parameter } from './openapi.js';
import { refName, toSchema, type JsonSchema } from './schema.js';

// The headers webhooks/delivery.ts sends with every attempt (docs/decisions.md §10); Content-Type is the
// request body's media type, which OpenAPI does not let a header parameter describe.
function deliveryHeaders(type: EventType): Parameter[] {
  return [
    {
      name: 'X-Webhook-Signature',
      in: 'header',
      required: true,
      description:
        '`t=<unix seconds>,v1=<hex>`: HMAC-SHA256 keyed with the whole endpoint secret (`whsec_…`) over `<t>.<raw body>`, the scheme of Stripe. Verify it on the raw bytes and reject timestamps more than 5 minutes old.',
      schema: { type: 'string', pattern: '^t=\\d+(,v1=[0-9a-f]{64})+$' },
    },
    {
      name: 'X-Webhook-Id',
      in: 'header',
      required: true,
      description: 'The event id (the body’s `id`); a delivery may arrive more than once: de-duplicate on it.',
      schema: { type: 'string', format: 'uuid' },
    },
    { name: 'X-Webhook-Event', in: 'header', required: true, description: 'The event type (the body’s `type`).', schema: { type: 'string', const: type } },
    { name: 'User-Agent', in: 'header', required: true, description: 'Names the sender.', schema: { type: 'string', example: USER_AGENT } },
  ];
}

const retriedAfter = {
  description: 'A failure, retried; a `Retry-After` header pushes the next attempt back at least that far.',
  headers: { 'Retry-After': { description: 'Seconds (or an HTTP date): the next attempt is not made sooner.', schema: { type: 'string' } } },
};

// docs/decisions.md §10: what the delivery code (webhooks/delivery.ts `judge`) makes of the answer.
const answers = {
  '2XX': {
    description: `Acknowledged: the delivery succeeded. Answer within ${DELIVERY_TIMEOUT_MS / 1000} s (a test event: ${TEST_DELIVERY_TIMEOUT_MS / 1000} s); the body is not read beyond its first ${RESPONSE_KEEP_BYTES / 1024} KB, kept with the attempt.`,
  },
  '410': {
    description:
      'Gone: the endpoint is disabled at once (`disabled_reason: gone`) and gets no more deliveries. To a sandbox endpoint or a test event it is a failure like any other.',
  },
  '429': retriedAfter,
  '503': retriedAfter,
  default: {
    description: `Any other answer (a redirect too: it is not followed), no answer within the time allowed, or no connection: a failure. A delivery is attempted up to ${DEFAULT_RETRY_SCHEDULE.length + 1} times (the guide's Webhooks section gives the schedule), a test event once.`,
  },
};

/** `invoice.reminder_sent` → `invoiceReminderSentWebhook` */
function operationId(type: EventType): string {
  return `${type.replace(/[._]([a-z])/g, (_, c: string) => c.toUpperCase())}Webhook`;
}

/**
 * One `post` per event type: the request we make to the merchant's endpoint. The event bodies are
 * added to `components` (as `InvoicePaidEvent` and so on).
 */
export function buildWebhooks(components: Record<string, JsonSchema>): Record<string, JsonSchema> {
  return Object.fromEntries(
    eventTypeNames.map((type) => [
      type,
      {
        post: {
          operationId: operationId(type),
          summary: eventTypes[type],
          description: `Sent to every enabled endpoint subscribed to \`${type}\` (an empty \`events\` list subscribes to all).`,
          // The receiver needs no API key: the signature header proves the sender.
          security: [],
          parameters: deliveryHeaders(type),
          requestBody: { required: true, content: { 'application/json': { schema: toSchema(eventSchemas[type], 'output', components) } } },
          responses: answers,
        },
      },
    ]),
  );
}

/** One event type as the reference pages list it, read back from the document's `webhooks`. */
export interface WebhookEntry {
  type: string;
  summary: string;
  /** The component of its body (`InvoicePaidEvent`). */
  body: string | undefined;
  headers: Parameter[];
  /** [status, what it means], 2XX first. */
  answers: [string, string][];
}

export function webhookEntries(doc: JsonSchema): WebhookEntry[] {
  return Object.entries((doc.webhooks ?? {}) as Record<string, { post: JsonSchema }>).map(([type, { post }]) => {
    const content = (post.requestBody as { content: Record<string, { schema: unknown }> }).content;
    return {
      type,
      summary: String(post.summary),
      body: refName(content['application/json']?.schema),
      headers: post.parameters as Parameter[],
      answers: Object.entries(post.responses as Record<string, { description: string }>)
        .map(([status, r]): [string, string] => [status, r.description])
        .sort(([a], [b]) => a.localeCompare(b)),
    };
  });
}
