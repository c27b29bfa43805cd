import { z } from 'zod';
import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock, dateInZone } from '../clock.js';
import { iso, page } from '../http/schemas.js';
import * as merchants from '../merchants/service.js';
import { getMerchant } from '../merchants/queries.js';
import { setRate } from '../rates/service.js';
import { getEventText } from '../webhooks/event-queries.js';
import type { DeliveryDeps } from '../webhooks/delivery.js';
import { endpointResource, listEventTypes } from '../webhooks/service.js';
import { deliveryNotFound, replayDelivery } from '../webhooks/replay.js';
import { findEndpoint, updateEndpoint, type EndpointRow } from '../webhooks/endpoint-queries.js';
import { listAttempts, type AttemptRow } from '../webhooks/attempt-queries.js';
import * as aq from '../webhooks/admin-queries.js';
import * as q from './queries.js';
import type { DeliveryListInput, EndpointListInput, EventListInput, RateListInput, SetRateInput } from './schemas.js';

// ─── Keyset pages ────────────────────────────────────────────────────────────
// Newest-first lists page by position, not offset: rows arriving meanwhile neither repeat nor
// hide older ones. The cursor is the last row's (created_at, id), opaque to callers.

const cursorParts = z.tuple([z.iso.datetime(), z.uuid()]);

function encodeCursor(k: aq.Keyset): string {
  return Buffer.from(`${k.sort_at}|${k.id}`, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string | undefined): aq.Keyset | undefined {
  if (cursor === undefined) return undefined;
  const parsed = cursorParts.safeParse(Buffer.from(cursor, 'base64url').toString('utf8').split('|'));
  if (!parsed.success) throw AppError.validation([{ path: 'cursor', message: 'is not a cursor this list returned' }], 400);
  return { sort_at: parsed.data[0], id: parsed.data[1] };
}

/** Callers fetch one row more than the page: when it came, another page follows. */
function keysetPage<R extends aq.Keyset, V>(rows: R[], limit: number, view: (r: R) => V): { data: V[]; next_cursor: string | null } {
  const shown = rows.slice(0, limit);
  const last = shown.at(-1);
  return { data: shown.map(view), next_cursor: rows.length > limit && last ? encodeCursor(last) : null };
}

// ─── Views: what support staff see (never a secret) ─────────────────────────

function deliveryView(d: Omit<aq.DeliverySummary, 'sort_at'>) {
  return {
    id: d.id,
    merchant_id: d.merchant_id,
    merchant_name: d.merchant_name,
    endpoint_id: d.endpoint_id,
    endpoint_url: d.endpoint_url,
    event_id: d.event_id,
    event_type: d.event_type,
    status: d.status,
    attempts: d.attempts,
    max_attempts: d.max_attempts,
    next_retry_at: iso(d.next_retry_at),
    last_response_status: d.last_response_status,
    // Support staff see the raw error the API hides, with the category merchants see.
    last_error: d.last_error,
    last_error_category: d.last_error_category,
    completed_at: iso(d.completed_at),
    is_test: d.is_test,
    replay_of: d.replay_of,
    created_at: iso(d.created_at)!,
    updated_at: iso(d.updated_at)!,
  };
}

function attemptView(a: AttemptRow) {
  return {
    attempt_number: a.attempt_number,
    started_at: iso(a.started_at)!,
    duration_ms: a.duration_ms,
    request_url: a.request_url,
    request_headers: a.request_headers,
    response_status: a.response_status,
    response_body: a.response_body,
    error: a.error,
    error_category: a.error_category,
  };
}

/** With the merchant's name: support staff recognise merchants by name, not by id. */
function endpointView(e: EndpointRow, merchantName: string) {
  return { ...endpointResource(e), merchant_id: e.merchant_id, merchant_name: merchantName, failing_since: iso(e.failing_since) };
}

// ─── Deliveries ──────────────────────────────────────────────────────────────

export async function listDeliveries(db: Queryable, input: DeliveryListInput) {
  const { cursor, limit, ...filters } = input;
  const rows = await aq.findDeliveries(db, { ...filters, before: decodeCursor(cursor), limit: limit + 1 });
  return keysetPage(rows, limit, deliveryView);
}

/** One delivery with the exact body it sends, every attempt, its endpoint and any replays of it. */
export async function getDelivery(db: Queryable, id: string) {
  const d = await aq.findDelivery(db, id);
  if (!d) throw deliveryNotFound(id);
  const [attempts, replays, endpoint] = await Promise.all([listAttempts(db, id), aq.findReplaysOf(db, id), findEndpoint(db, d.endpoint_id)]);
  return {
    ...deliveryView(d),
    payload: d.payload,
    endpoint: endpoint ? endpointView(endpoint, d.merchant_name) : null,
    // `attempts` stays the count, as in every delivery; this is each attempt as it was made.
    attempt_log: attempts.map(attemptView),
    replays: replays.map(deliveryView),
  };
}

async function summary(db: Queryable, id: string) {
  const d = await aq.findDelivery(db, id);
  if (!d) throw deliveryNotFound(id);
  return deliveryView(d);
}

export async function replay(sql: Sql, deps: DeliveryDeps, deliveryId: string) {
  const created = await replayDelivery(sql, deps, deliveryId);
  return summary(sql, created.id);
}

// ─── Endpoints ───────────────────────────────────────────────────────────────

export async function listEndpoints(db: Queryable, input: EndpointListInput) {
  const rows = await aq.findEndpoints(db, { ...input, limit: input.limit + 1 });
  return page(
    rows.map((r) => endpointView(r, r.merchant_name)),
    input.limit,
    input.offset,
  );
}

/** Support's switch: enabling clears the failure streak and the disabled marks (updateEndpoint). */
export async function setEndpointEnabled(db: Queryable, id: string, enabled: boolean) {
  const row = await updateEndpoint(db, null, id, { enabled }, clock.now());
  if (!row) throw new AppError('webhook_endpoint_not_found', `No webhook endpoint ${id}.`);
  const merchant = await getMerchant(db, row.merchant_id);
  return endpointView(row, merchant?.name ?? '');
}

// ─── Events ──────────────────────────────────────────────────────────────────

function eventNotFound(id: string): AppError {
  return new AppError('event_not_found', `No event ${id}.`);
}

function eventView(e: Omit<aq.EventSummary, 'sort_at'>) {
  return { id: e.id, merchant_id: e.merchant_id, merchant_name: e.merchant_name, type: e.type, created_at: iso(e.created_at)! };
}

export async function listEvents(db: Queryable, input: EventListInput) {
  const { cursor, limit, ...filters } = input;
  const rows = await aq.findEvents(db, { ...filters, before: decodeCursor(cursor), limit: limit + 1 });
  return keysetPage(rows, limit, eventView);
}

/** The event as stored (the object receivers get) and every delivery made of it. */
export async function getEvent(db: Queryable, id: string) {
  const event = await getEventText(db, id);
  if (!event) throw eventNotFound(id);
  const [merchant, deliveries] = await Promise.all([getMerchant(db, event.merchant_id), aq.findDeliveriesOfEvent(db, id)]);
  return {
    ...eventView({ ...event, merchant_name: merchant?.name ?? '' }),
    payload: JSON.parse(event.payload) as Record<string, unknown>,
    deliveries: deliveries.map(deliveryView),
  };
}

export function eventTypes() {
  return listEventTypes().data;
}

// ─── Merchants and rates ─────────────────────────────────────────────────────

/** The merchant and its invoice counter are written together. */
export async function createMerchant(sql: Sql, input: Parameters<typeof merchants.createMerchant>[1]) {
  return sql.begin((tx) => merchants.createMerchant(tx, input));
}

function noSuchMerchant(): AppError {
  return AppError.validation([{ path: 'merchant_id', message: 'no such merchant' }]);
}

/** As `cli rates set`: the date defaults to the merchant's today. */
export async function setExchangeRate(db: Queryable, input: SetRateInput) {
  const merchant = await getMerchant(db, input.merchant_id);
  if (!merchant) throw noSuchMerchant();
  const date = input.date ?? dateInZone(clock.now(), merchant.timezone);
  await setRate(db, merchant.id, input.currency, date, input.rate);
  return { merchant_id: merchant.id, currency: input.currency, date, rate: input.rate };
}

export async function listExchangeRates(db: Queryable, input: RateListInput) {
  if (!(await getMerchant(db, input.merchant_id))) throw noSuchMerchant();
  const rows = await q.listRates(db, input.merchant_id, input.currency, input.limit + 1, input.offset);
  return page(
    rows.map((r) => ({ merchant_id: r.merchant_id, currency: r.currency, date: r.rate_date, rate: r.rate, created_at: iso(r.created_at)! })),
    input.limit,
    input.offset,
  );
}
