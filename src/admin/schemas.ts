import { z } from 'zod';
import { CURRENCY_RULE, Decimal, isCurrency } from '../money.js';
import { deliveryStatuses, eventType } from '../webhooks/schemas.js';
import { REPLAY_FAILED_MAX } from '../webhooks/replay.js';
import { paymentInstructionsInput, taxProfileInput } from '../merchants/service.js';
import { credentialsInput } from '../checkout/provider-settings.js';

export { createKeyInput, createMerchantInput } from '../merchants/service.js';
export { addCafInput, addCertificateInput, dteDocumentsInput, dteStatusInput } from '../dte/schemas.js';

// Inputs travel as JSON (no transformer): instants are RFC 3339 strings, turned into Dates here.
const instant = z.iso.datetime({ offset: true }).transform((s) => new Date(s));
const pageLimit = z.number().int().min(1).max(200).default(50);
const offset = z.number().int().min(0).default(0);
const cursor = z.string().min(1).max(200);
const deliveryStatus = z.enum(deliveryStatuses);

export const deliveryListInput = z.strictObject({
  merchant_id: z.uuid().optional(),
  endpoint_id: z.uuid().optional(),
  // One status, or several: the console's default "not delivered" is pending, retrying and failed.
  status: z
    .union([deliveryStatus, z.array(deliveryStatus).min(1).max(deliveryStatuses.length)])
    .transform((s) => (Array.isArray(s) ? s : [s]))
    .optional(),
  event_type: eventType.optional(),
  from: instant.optional(),
  to: instant.optional(),
  limit: pageLimit,
  cursor: cursor.optional(),
});
export type DeliveryListInput = z.output<typeof deliveryListInput>;

export const deliveryIdInput = z.strictObject({ delivery_id: z.uuid() });

export const replayFailedInput = z.strictObject({
  endpoint_id: z.uuid(),
  since: instant,
  limit: z.number().int().min(1).max(REPLAY_FAILED_MAX).default(REPLAY_FAILED_MAX),
});

export const endpointListInput = z.strictObject({
  merchant_id: z.uuid().optional(),
  enabled: z.boolean().optional(),
  limit: pageLimit,
  offset,
});
export type EndpointListInput = z.output<typeof endpointListInput>;

export const endpointIdInput = z.strictObject({ endpoint_id: z.uuid() });

export const eventListInput = z.strictObject({
  merchant_id: z.uuid().optional(),
  type: eventType.optional(),
  from: instant.optional(),
  to: instant.optional(),
  limit: pageLimit,
  cursor: cursor.optional(),
});
export type EventListInput = z.output<typeof eventListInput>;

export const eventIdInput = z.strictObject({ event_id: z.uuid() });

/** docs/decisions.md §16: the provider by name (an unknown one is `invalid_provider`) with its credentials, which no answer returns. */
export const setProviderInput = z.strictObject({
  merchant_id: z.uuid(),
  payment_provider: z.string().nullable(),
  ...credentialsInput.shape,
});

export const setTaxProfileInput = z.strictObject({
  merchant_id: z.uuid(),
  tax_profile: taxProfileInput.nullable(),
});

export const setPaymentInstructionsInput = z.strictObject({
  merchant_id: z.uuid(),
  payment_instructions: paymentInstructionsInput,
});

export const keyListInput = z.strictObject({ merchant_id: z.uuid().optional() }).default({});

export const keyIdInput = z.strictObject({ key_id: z.uuid() });

export const setRateInput = z.strictObject({
  merchant_id: z.uuid(),
  currency: z
    .string()
    .transform((c) => c.toUpperCase())
    .refine(isCurrency, CURRENCY_RULE),
  // A string keeps every digit a person typed; a number is accepted for convenience.
  rate: z
    .union([z.number(), z.string().regex(/^\d+(\.\d+)?$/, 'must be a positive decimal')])
    .transform((r) => new Decimal(r))
    .refine((r) => r.isFinite() && r.gt(0), 'must be a positive decimal')
    .transform((r) => r.toFixed()),
  date: z.iso.date().optional(),
});
export type SetRateInput = z.output<typeof setRateInput>;

export const rateListInput = z.strictObject({
  merchant_id: z.uuid(),
  currency: z
    .string()
    .transform((c) => c.toUpperCase())
    .refine(isCurrency, CURRENCY_RULE)
    .optional(),
  limit: pageLimit,
  offset,
});
export type RateListInput = z.output<typeof rateListInput>;
