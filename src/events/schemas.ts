import { z } from 'zod';
import { timestamp } from '../http/schemas.js';
import { checkoutSession } from '../checkout/schemas.js';
import { clientResource } from '../clients/schemas.js';
import { creditNoteResource, debitNoteResource } from '../invoices/note-schemas.js';
import { invoiceResource, reminderResource } from '../invoices/schemas.js';
import { paymentResource } from '../payments/schemas.js';
import { eventTypeNames, eventTypes, type EventType } from './emit.js';

// Decisions §10: `data.object` is the resource as its GET returns it, so each event's data reuses
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

/** The body a receiver gets for an event of this type (decisions §10), as `buildEvent` writes it. */
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
