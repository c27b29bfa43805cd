import { z } from 'zod';
import { pagingQuery, rfc3339, timestamp, uuid } from '../http/schemas.js';
import { checkoutSession } from '../checkout/schemas.js';
import { clientResource } from '../clients/schemas.js';
import { creditNoteResource, debitNoteResource } from '../invoices/note-schemas.js';
import { invoiceResource, reminderResource } from '../invoices/schemas.js';
import { paymentResource } from '../payments/schemas.js';
import { eventTypeNames, eventTypes, type EventType } from '../events/emit.js';

// docs/decisions.md §10: `data.object` is the resource as its GET returns it, so each event's data reuses
// the schema that documents that GET's answer.
const invoiceData = z.object({ object: invoiceResource });
const clientData = z.object({ object: clientResource });
const checkoutData = z.object({ object: checkoutSession });
const paymentData = z.object({ object: paymentResource });

/** `data` of each event type: the resource, and what else the event tells (the reminder sent). */
const eventData = {
  'invoice.created': invoiceData,
  'invoice.sent': invoiceData,
  'invoice.viewed': invoiceData,
  'invoice.overdue': invoiceData,
  'invoice.reminder_sent': z.object({ object: invoiceResource, reminder: reminderResource }),
  'invoice.paid': invoiceData,
  'invoice.cancelled': invoiceData,
  'invoice.dte_accepted': invoiceData,
  'invoice.dte_rejected': invoiceData,
  'credit_note.created': z.object({ object: creditNoteResource }),
  'debit_note.created': z.object({ object: debitNoteResource }),
  'client.created': clientData,
  'client.updated': clientData,
  'checkout.completed': checkoutData,
  'checkout.expired': checkoutData,
  'payment.succeeded': paymentData,
  'payment.failed': paymentData,
} satisfies Record<EventType, z.ZodObject<{ object: z.ZodType }>>;

/** The `data` of an event of this type; test events (webhooks/samples.ts) are typed by it. */
export type EventData<T extends EventType> = z.output<(typeof eventData)[T]>;

/** The fields of a type's `data`, each with the component it holds: `[['object', 'Invoice'], ['reminder', 'Reminder']]`. */
export function eventDataFields(type: EventType): [string, string][] {
  return Object.entries(eventData[type].shape).map(([field, schema]) => [field, String(schema.meta()?.id)]);
}

/** `invoice.reminder_sent` → `InvoiceReminderSentEvent`: the component name of its body. */
export function eventSchemaName(type: EventType): string {
  return `${type.replace(/(?:^|[._])([a-z])/g, (_, c: string) => c.toUpperCase())}Event`;
}

/** The body a receiver gets for an event of this type (docs/decisions.md §10), as `buildEvent` writes it. */
function eventSchema(type: EventType) {
  return z
    .object({
      id: z.string().meta({ format: 'uuid', description: 'The event id, also sent as X-Webhook-Id: de-duplicate on it' }),
      type: z.literal(type).meta({ description: `Always \`${type}\`; also sent as X-Webhook-Event` }),
      created_at: timestamp.meta({ description: 'When the change happened; order events by it, not by arrival' }),
      api_version: z.literal('v1').meta({ description: 'Always `v1`, the version of the API whose resources `data` holds' }),
      is_test: z.boolean().meta({ description: 'True for a test event (POST /webhooks/endpoints/{endpoint_id}/test) and for every delivery to a sandbox endpoint' }),
      data: eventData[type],
    })
    .meta({ id: eventSchemaName(type), description: eventTypes[type] });
}

export const eventSchemas = Object.fromEntries(eventTypeNames.map((type) => [type, eventSchema(type)])) as Record<EventType, ReturnType<typeof eventSchema>>;

// ─── The events API (docs/decisions.md §18) ──────────────────────────────────────────

/**
 * An event as GET /events answers it: the stored body, which is the body of its deliveries to
 * every endpoint that is not a sandbox (a sandbox's say `is_test: true`). `data` is served as
 * stored, not through the schema of its type: an event written before a resource gained or lost
 * a field must still read back as it was delivered. Each type's `data` is documented with its
 * webhook (`InvoicePaidEvent` and the others).
 */
export const eventResource = z
  .object({
    id: z.string().meta({ format: 'uuid', description: 'The event id (UUIDv7: ordered by time), also sent as X-Webhook-Id' }),
    type: z.enum(eventTypeNames),
    created_at: timestamp,
    api_version: z.literal('v1'),
    is_test: z.boolean().meta({ description: 'False: stored events are real; deliveries to a sandbox endpoint carry true' }),
    data: z
      .record(z.string(), z.unknown())
      .meta({ description: '`{ object: the resource as its GET returned it then }`, and for invoice.reminder_sent `reminder`: as the webhook of this type documents it (`InvoicePaidEvent`, …)' }),
  })
  .meta({ id: 'Event', description: 'An event exactly as its webhook deliveries carry it' });

export const eventList = z.object({
  data: z.array(eventResource).meta({ description: 'Newest first (by id)' }),
  has_more: z.boolean().meta({ description: 'More events follow: pass the last id as `starting_after`' }),
});

/** `invoice.paid,invoice.sent` → the types, each known; an unknown one is a 422 naming `type`. */
const typeFilter = z.string().transform((value, ctx) => {
  const types = [...new Set(value.split(',').map((t) => t.trim()))];
  const unknown = types.filter((t) => !(eventTypeNames as string[]).includes(t));
  if (unknown.length > 0) {
    ctx.addIssue({ code: 'custom', message: `unknown event type ${unknown.map((t) => JSON.stringify(t)).join(', ')}; must be one of: ${eventTypeNames.join(', ')}`, input: value });
    return z.NEVER;
  }
  return types as EventType[];
});

export const listEventsQuery = z
  .strictObject({
    limit: pagingQuery.limit,
    starting_after: z.uuid({ message: 'must be an event id (a UUID)' }).optional().meta({ description: 'An event id of yours: the page after it (older events)' }),
    type: typeFilter.optional().meta({ description: 'One event type or a comma-separated list', example: 'invoice.paid,invoice.cancelled' }),
    created_gte: rfc3339.optional().meta({ description: 'Only events created at or after this instant' }),
    created_lt: rfc3339.optional().meta({ description: 'Only events created before this instant' }),
    delivery_success: z
      .enum(['true', 'false'], { message: 'must be true or false' })
      .transform((v) => v === 'true')
      .optional()
      .meta({
        description:
          'false: events some endpoint of yours has not received yet or gave up on (a delivery not successful, and no replay of it that was); ' +
          'true: events every endpoint they were sent to received. An endpoint disabled when the event happened was sent nothing and counts for neither ' +
          '(POST /webhooks/endpoints/{endpoint_id}/recover sends it such events)',
      }),
  })
  .refine((q) => q.created_gte === undefined || q.created_lt === undefined || Date.parse(q.created_lt) > Date.parse(q.created_gte), {
    path: ['created_lt'],
    message: 'must be later than created_gte',
  });
export type ListEventsQuery = z.output<typeof listEventsQuery>;

export const eventIdParams = z.strictObject({ event_id: uuid });
