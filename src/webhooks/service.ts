import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { iso } from '../http/schemas.js';
import { invoiceUrls } from '../http/urls.js';
import { buildEvent, eventTypes, type EventType } from '../events/emit.js';
import { getEventTexts } from './event-queries.js';
import { checkWebhookUrl } from './address-guard.js';
import { attemptDelivery, enqueueFirstAttempts, maxAttempts, transactOn, type DeliveryDeps } from './delivery.js';
import { TEST_DELIVERY_TIMEOUT_MS } from './http-post.js';
import { sampleEventData } from './samples.js';
import { generateSecret, secretPrefix } from './secrets.js';
import { verifySignature, type VerifyResult } from './signature.js';
import type { CreateEndpointInput, DeliveryResource, EndpointResource, UpdateEndpointInput } from './schemas.js';
import * as eq from './endpoint-queries.js';
import * as dq from './delivery-queries.js';

// docs/decisions.md §10: Stripe's limit.
export const MAX_ENDPOINTS_PER_MERCHANT = 16;
// docs/decisions.md §10: each holds a request (and its client) open for up to the test timeout.
export const TEST_DELIVERIES_IN_FLIGHT = 2;
// A test delivery still pending this long after it was created lost the process making its
// attempt (which ends within the timeout): it no longer blocks the merchant's next test.
const TEST_IN_FLIGHT_SECONDS = TEST_DELIVERY_TIMEOUT_MS / 1000 + 10;

export function endpointResource(row: eq.EndpointRow): EndpointResource {
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

export function deliveryResource(row: dq.DeliveryRow): DeliveryResource {
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
    last_error: row.last_error_category,
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

function invalidUrl(message: string, reason: string): AppError {
  return new AppError('webhook_endpoint_invalid', message, { details: { errors: [{ path: 'url', message: reason }] } });
}

function duplicateUrl(): AppError {
  return invalidUrl('Another webhook endpoint of yours already has this URL.', 'is already the URL of another endpoint; a URL is registered once');
}

/**
 * The URL as it will be stored, normalised (so that one URL cannot be registered twice by
 * spelling it differently). It may resolve the host: routes call it before their transaction.
 */
export async function usableUrl(url: string, deps: DeliveryDeps): Promise<string> {
  const check = await checkWebhookUrl(url, { allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_TARGETS });
  if (!check.ok) throw invalidUrl(`The endpoint URL cannot receive webhooks: ${check.reason}.`, check.reason);
  return check.url.toString();
}

/** `url` comes from usableUrl. */
export async function createEndpoint(db: Queryable, merchantId: string, input: CreateEndpointInput, url: string, deps: DeliveryDeps) {
  await eq.lockMerchant(db, 'endpoints', merchantId);
  if ((await eq.countEndpoints(db, merchantId)) >= MAX_ENDPOINTS_PER_MERCHANT) {
    throw invalidUrl(
      `At most ${MAX_ENDPOINTS_PER_MERCHANT} webhook endpoints are allowed per account; delete one to register another.`,
      `cannot be registered: you already have ${MAX_ENDPOINTS_PER_MERCHANT} endpoints, the most allowed`,
    );
  }
  const secret = generateSecret();
  const row = await eq
    .insertEndpoint(db, {
      id: newId(),
      merchant_id: merchantId,
      url,
      description: input.description ?? null,
      events: input.events ?? [],
      is_sandbox: input.is_sandbox ?? false,
      secret_encrypted: deps.secrets.seal(secret),
      secret_prefix: secretPrefix(secret),
      now: clock.now(),
    })
    .catch((err: unknown) => {
      throw eq.isDuplicateUrl(err) ? duplicateUrl() : err;
    });
  return { ...endpointResource(row), secret };
}

export async function listEndpoints(db: Queryable, merchantId: string) {
  return { data: (await eq.listEndpoints(db, merchantId)).map(endpointResource) };
}

export async function getEndpoint(db: Queryable, merchantId: string, id: string) {
  const row = await eq.getEndpoint(db, merchantId, id);
  if (!row) throw notFound(id);
  return endpointResource(row);
}

/** `url` comes from usableUrl, called before existence is known (docs/decisions.md §14: body, then existence). */
export async function updateEndpoint(db: Queryable, merchantId: string, id: string, input: UpdateEndpointInput, url: string | undefined) {
  const row = await eq.updateEndpoint(db, merchantId, id, { ...input, url }, clock.now()).catch((err: unknown) => {
    throw eq.isDuplicateUrl(err) ? duplicateUrl() : err;
  });
  if (!row) throw notFound(id);
  return endpointResource(row);
}

export async function deleteEndpoint(db: Queryable, merchantId: string, id: string): Promise<void> {
  if (!(await eq.deleteEndpoint(db, merchantId, id))) throw notFound(id);
}

/** The old secret stops verifying the moment this commits (docs/decisions.md §10). */
export async function rotateSecret(db: Queryable, merchantId: string, id: string, deps: DeliveryDeps) {
  const secret = generateSecret();
  const row = await eq.replaceSecret(db, merchantId, id, deps.secrets.seal(secret), secretPrefix(secret), clock.now());
  if (!row) throw notFound(id);
  return { ...endpointResource(row), secret };
}

/**
 * A sample event delivered once, now, whatever the endpoint subscribes to: the answer is the
 * delivery after its only attempt. It never counts toward the endpoint's failures.
 * docs/decisions.md §10: the delivery is committed before the attempt and its outcome recorded after it,
 * each in a short transaction of its own, so a slow receiver holds no connection; the
 * merchant's deliveries in flight are counted in Postgres, shared by every web process.
 */
export async function testEndpoint(sql: Sql, merchantId: string, id: string, type: EventType | undefined, deps: DeliveryDeps) {
  const eventType = type ?? 'invoice.paid';
  const delivery = await sql.begin(async (tx) => {
    await eq.lockMerchant(tx, 'testDeliveries', merchantId);
    if (!(await eq.getEndpoint(tx, merchantId, id))) throw notFound(id);
    const now = clock.now();
    const inFlightSince = new Date(now.getTime() - TEST_IN_FLIGHT_SECONDS * 1000);
    await dq.abandonTestDeliveries(tx, merchantId, inFlightSince, now);
    if ((await dq.countTestDeliveriesInFlight(tx, merchantId, inFlightSince)) >= TEST_DELIVERIES_IN_FLIGHT) {
      throw new AppError('rate_limited', `At most ${TEST_DELIVERIES_IN_FLIGHT} test deliveries may be in flight at once; wait for one to finish.`, {
        retry: 'after_seconds:1',
      });
    }
    const event = buildEvent(eventType, sampleEventData(eventType, merchantId, now, invoiceUrls(deps.config)), true);
    return dq.insertTestDelivery(tx, { id: newId(), merchant_id: merchantId, endpoint_id: id, event_id: event.id, event_type: eventType, payload: JSON.stringify(event), now });
  });
  const done = await attemptDelivery(sql, transactOn(sql), deps, delivery.id, 1, TEST_DELIVERY_TIMEOUT_MS);
  return deliveryResource(done ?? (await dq.getDelivery(sql, delivery.id))!);
}

export function verify(signature: string, secret: string, payload: string | undefined): VerifyResult {
  return verifySignature(signature, secret, payload, Math.floor(clock.now().getTime() / 1000));
}

/** The body a sandbox endpoint receives says so: its deliveries are test deliveries. */
export function payloadFor(eventText: string, isTest: boolean): string {
  if (!isTest) return eventText;
  return JSON.stringify({ ...(JSON.parse(eventText) as Record<string, unknown>), is_test: true });
}

/**
 * One delivery per subscribed, enabled endpoint of each event, each with the job of its first
 * attempt, in one transaction for the whole batch: a burst of events costs a few statements per
 * batch, not per event, and wakes the delivery workers once. Run twice it creates nothing twice.
 */
export async function fanOutEvents(sql: Sql, deps: DeliveryDeps, eventIds: string[]): Promise<number> {
  return sql.begin(async (tx) => {
    const events = new Map((await getEventTexts(tx, eventIds)).map((e) => [e.id, e]));
    const subscribers = await eq.subscribersOf(tx, [...events.values()]);
    const now = clock.now();
    const created = await dq.insertDeliveries(
      tx,
      subscribers.map((s) => {
        const event = events.get(s.event_id)!;
        return {
          id: newId(),
          merchant_id: event.merchant_id,
          endpoint_id: s.endpoint_id,
          event_id: event.id,
          event_type: event.type,
          payload: payloadFor(event.payload, s.is_sandbox),
          max_attempts: maxAttempts(deps.config),
          is_test: s.is_sandbox,
          replay_of: null,
          now,
        };
      }),
    );
    await enqueueFirstAttempts(tx, deps.boss, created);
    return created.length;
  });
}
