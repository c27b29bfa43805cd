import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { iso } from '../http/schemas.js';
import { buildEvent, eventTypes, type EventType } from '../events/emit.js';
import { checkWebhookUrl } from './address-guard.js';
import { attemptDelivery, enqueueAttempt, maxAttempts, type DeliveryDeps } from './delivery.js';
import { sampleEventData } from './samples.js';
import { generateSecret, secretPrefix } from './secrets.js';
import { verifySignature, type VerifyResult } from './signature.js';
import type { CreateEndpointInput, DeliveryResource, EndpointResource, UpdateEndpointInput } from './schemas.js';
import * as q from './queries.js';

export function endpointResource(row: q.EndpointRow): EndpointResource {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events,
    enabled: row.enabled,
    secret_prefix: row.secret_prefix,
    consecutive_failures: row.consecutive_failures,
    disabled_at: iso(row.disabled_at),
    disabled_reason: row.disabled_reason,
    is_sandbox: row.is_sandbox,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export function deliveryResource(row: q.DeliveryRow): DeliveryResource {
  return {
    id: row.id,
    endpoint_id: row.endpoint_id,
    event_type: row.event_type,
    event_id: row.event_id,
    status: row.status,
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    next_retry_at: iso(row.next_retry_at),
    last_response_status: row.last_response_status,
    last_error: row.last_error,
    completed_at: iso(row.completed_at),
    is_test: row.is_test,
    created_at: iso(row.created_at)!,
  };
}

export function listEventTypes() {
  return { data: Object.entries(eventTypes).map(([type, description]) => ({ type, description })) };
}

function notFound(id: string): AppError {
  return new AppError('webhook_endpoint_not_found', `No webhook endpoint ${id}.`);
}

async function assertUsableUrl(url: string, deps: DeliveryDeps): Promise<string> {
  const check = await checkWebhookUrl(url, { allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_TARGETS });
  if (!check.ok) {
    throw new AppError('webhook_endpoint_invalid', `The endpoint URL cannot receive webhooks: ${check.reason}.`, {
      details: { errors: [{ path: 'url', message: check.reason }] },
    });
  }
  return check.url.toString();
}

export async function createEndpoint(db: Queryable, merchantId: string, input: CreateEndpointInput, deps: DeliveryDeps) {
  const url = await assertUsableUrl(input.url, deps);
  const secret = generateSecret();
  const row = await q.insertEndpoint(db, {
    id: newId(),
    merchant_id: merchantId,
    url,
    description: input.description ?? null,
    events: input.events ?? [],
    is_sandbox: input.is_sandbox ?? false,
    secret_encrypted: deps.secrets.seal(secret),
    secret_prefix: secretPrefix(secret),
    now: clock.now(),
  });
  return { ...endpointResource(row), secret };
}

export async function listEndpoints(db: Queryable, merchantId: string) {
  return { data: (await q.listEndpoints(db, merchantId)).map(endpointResource) };
}

export async function getEndpoint(db: Queryable, merchantId: string, id: string) {
  const row = await q.getEndpoint(db, merchantId, id);
  if (!row) throw notFound(id);
  return endpointResource(row);
}

export async function updateEndpoint(db: Queryable, merchantId: string, id: string, input: UpdateEndpointInput, deps: DeliveryDeps) {
  // The URL is part of the body: it is judged before existence (decisions §14).
  const url = input.url === undefined ? undefined : await assertUsableUrl(input.url, deps);
  const row = await q.updateEndpoint(db, merchantId, id, { ...input, url }, clock.now());
  if (!row) throw notFound(id);
  return endpointResource(row);
}

export async function deleteEndpoint(db: Queryable, merchantId: string, id: string): Promise<void> {
  if (!(await q.deleteEndpoint(db, merchantId, id))) throw notFound(id);
}

/** The old secret stops verifying the moment this commits (decisions §10). */
export async function rotateSecret(db: Queryable, merchantId: string, id: string, deps: DeliveryDeps) {
  const secret = generateSecret();
  const row = await q.replaceSecret(db, merchantId, id, deps.secrets.seal(secret), secretPrefix(secret), clock.now());
  if (!row) throw notFound(id);
  return { ...endpointResource(row), secret };
}

/**
 * A sample event delivered once, now, whatever the endpoint subscribes to: the answer is the
 * delivery after its only attempt. It never counts toward the endpoint's failures.
 */
export async function testEndpoint(db: Queryable, merchantId: string, id: string, type: EventType | undefined, deps: DeliveryDeps) {
  const endpoint = await q.getEndpoint(db, merchantId, id);
  if (!endpoint) throw notFound(id);
  const eventType = type ?? 'invoice.paid';
  const now = clock.now();
  const event = buildEvent(eventType, sampleEventData(eventType, now.toISOString()), true);
  const [delivery] = await q.insertDeliveries(db, [
    { id: newId(), merchant_id: merchantId, endpoint_id: id, event_id: event.id, event_type: eventType, payload: JSON.stringify(event), max_attempts: 1, is_test: true, replay_of: null, now },
  ]);
  const done = await attemptDelivery(db, (fn) => fn(db), deps, delivery!.id, 1);
  return deliveryResource(done ?? (await q.getDelivery(db, delivery!.id))!);
}

export function verify(signature: string, secret: string, payload: string | undefined): VerifyResult {
  return verifySignature(signature, secret, payload, Math.floor(clock.now().getTime() / 1000));
}

/** The body a sandbox endpoint receives says so: its deliveries are test deliveries. */
function payloadFor(eventText: string, isTest: boolean): string {
  if (!isTest) return eventText;
  return JSON.stringify({ ...(JSON.parse(eventText) as Record<string, unknown>), is_test: true });
}

/**
 * One delivery per subscribed, enabled endpoint, each with the job of its first attempt, in one
 * transaction. Run twice it creates nothing twice.
 */
export async function fanOutEvent(sql: Sql, deps: DeliveryDeps, eventId: string): Promise<number> {
  return sql.begin(async (tx) => {
    const event = await q.getEventText(tx, eventId);
    if (!event) return 0;
    const endpoints = await q.subscribedEndpoints(tx, event.merchant_id, event.type);
    const now = clock.now();
    const created = await q.insertDeliveries(
      tx,
      endpoints.map((e) => ({
        id: newId(),
        merchant_id: event.merchant_id,
        endpoint_id: e.id,
        event_id: event.id,
        event_type: event.type,
        payload: payloadFor(event.payload, e.is_sandbox),
        max_attempts: maxAttempts(deps.config),
        is_test: e.is_sandbox,
        replay_of: null,
        now,
      })),
    );
    for (const d of created) await enqueueAttempt(tx, deps.boss, d.id, 1, 0);
    return created.length;
  });
}
