import type { Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { enqueueFirstAttempts, maxAttempts, type DeliveryDeps } from './delivery.js';
import { insertDeliveries, type DeliveryRow, type NewDelivery } from './delivery-queries.js';
import * as aq from './admin-queries.js';

// One call's work stays one modest transaction (a row and a job each): a longer outage is
// replayed in several calls, each picking up where the last stopped.
export const REPLAY_FAILED_MAX = 1000;

export function deliveryNotFound(id: string): AppError {
  return new AppError('webhook_delivery_not_found', `No webhook delivery ${id}.`);
}

function endpointNotFound(id: string): AppError {
  return new AppError('webhook_endpoint_not_found', `No webhook endpoint ${id}.`);
}

function refused(path: string, message: string): AppError {
  return AppError.validation([{ path, message }], 422, `Cannot replay: ${message}.`);
}

/** A new delivery of the same event with the same bytes, a fresh attempt budget, and a link back. */
function replayOf(d: DeliveryRow, deps: DeliveryDeps, now: Date): NewDelivery {
  return {
    id: newId(),
    merchant_id: d.merchant_id,
    endpoint_id: d.endpoint_id,
    event_id: d.event_id,
    event_type: d.event_type,
    payload: d.payload,
    max_attempts: maxAttempts(deps.config),
    is_test: false,
    replay_of: d.id,
    now,
  };
}

/**
 * Replays one delivery: a new delivery linked to it, whose first attempt is queued in the same
 * transaction. Test deliveries carry sample or sandbox data and are not replayed (a new test is
 * the way to resend one); a disabled endpoint would fail the replay unattempted, so it is refused
 * until re-enabled. A deleted endpoint takes its deliveries with it: those are not found.
 */
export async function replayDelivery(sql: Sql, deps: DeliveryDeps, deliveryId: string): Promise<DeliveryRow> {
  return sql.begin(async (tx) => {
    const source = await aq.lockDeliveryForReplay(tx, deliveryId);
    if (!source) throw deliveryNotFound(deliveryId);
    if (source.is_test) throw refused('delivery_id', 'it is a test delivery; send a new test to the endpoint instead');
    if (!source.endpoint_enabled) throw refused('endpoint_id', 'the endpoint is disabled; enable it first');
    const [created] = await insertDeliveries(tx, [replayOf(source, deps, clock.now())]);
    await enqueueFirstAttempts(tx, deps.boss, [created!]);
    return created!;
  });
}

export interface ReplayFailedResult {
  created: number;
  /** More failed deliveries wait: call again to replay the next batch. */
  has_more: boolean;
}

/**
 * Replays every failed delivery of an endpoint created since `since` that no replay superseded
 * yet, at most `limit` (≤ REPLAY_FAILED_MAX) per call, all in one transaction.
 */
export async function replayFailedDeliveries(sql: Sql, deps: DeliveryDeps, endpointId: string, since: Date, limit = REPLAY_FAILED_MAX): Promise<ReplayFailedResult> {
  const bound = Math.min(limit, REPLAY_FAILED_MAX);
  return sql.begin(async (tx) => {
    const endpoint = await aq.lockEndpointForReplay(tx, endpointId);
    if (!endpoint) throw endpointNotFound(endpointId);
    if (!endpoint.enabled) throw refused('endpoint_id', 'the endpoint is disabled; enable it first');
    const sources = await aq.lockFailedUnreplayed(tx, endpointId, since, bound + 1);
    const now = clock.now();
    const created = await insertDeliveries(tx, sources.slice(0, bound).map((d) => replayOf(d, deps, now)));
    await enqueueFirstAttempts(tx, deps.boss, created);
    return { created: created.length, has_more: sources.length > bound };
  });
}
