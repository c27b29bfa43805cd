import type { Queryable } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { enqueueFirstAttempts, maxAttempts, type DeliveryDeps } from './delivery.js';
import { payloadFor } from './service.js';
import type { RecoverInput } from './schemas.js';
import * as eq from './endpoint-queries.js';
import * as dq from './delivery-queries.js';

// One call's work stays one modest transaction (a delivery and a job per event), as the admin
// replay's: a longer outage is recovered in several calls, `has_more` saying so; each picks up
// where the last stopped, since what it sent is in flight or delivered by then.
export const RECOVER_MAX = 1000;

const DAY_MS = 86_400_000;

function refused(path: string, message: string): AppError {
  return AppError.validation([{ path, message }], 422, `Cannot recover: ${message}.`);
}

/**
 * docs/decisions.md §18: every event of the endpoint's subscription in [since, until) that did not reach
 * it is delivered again as a new attempt, due now, through the delivery job fan-out uses. An
 * event with an original delivery gets a replay of it (the same bytes, linked by `replay_of`);
 * an event with none (emitted while the endpoint was disabled) gets its first delivery, built as
 * fan-out builds it. Runs in the route's transaction.
 */
export async function recoverEndpoint(db: Queryable, deps: DeliveryDeps, merchantId: string, endpointId: string, input: RecoverInput) {
  const now = clock.now();
  const since = new Date(input.since);
  const until = input.until ? new Date(input.until) : now;
  // The body's rules first, then existence (docs/decisions.md §14).
  const retentionDays = deps.config.EVENT_RETENTION_DAYS;
  if (since.getTime() < now.getTime() - retentionDays * DAY_MS) {
    throw refused('since', `must be within the last ${retentionDays} days: older events are not kept`);
  }
  // A given `until` is later than `since` (the body's schema); the default one, now, may not be.
  if (until <= since) throw refused('since', 'must be in the past');

  // One recover of a merchant at a time: two at once would both find the same missed events.
  await eq.lockMerchant(db, 'recover', merchantId);
  const endpoint = await eq.getEndpoint(db, merchantId, endpointId);
  if (!endpoint) throw new AppError('webhook_endpoint_not_found', `No webhook endpoint ${endpointId}.`);
  // Its deliveries would fail unattempted (the worker skips disabled endpoints), as the admin
  // replay says too.
  if (!endpoint.enabled) throw refused('endpoint_id', 'the endpoint is disabled; enable it first (PATCH enabled: true)');

  const missed = await dq.missedEvents(db, endpoint, { since, until, limit: RECOVER_MAX + 1 });
  const batch = missed.slice(0, RECOVER_MAX);
  await dq.supersedeDeliveries(
    db,
    batch.flatMap((ev) => (ev.original && ev.original.status !== 'failed' ? [ev.original.id] : [])),
    now,
  );
  const created = await dq.insertDeliveries(
    db,
    batch.map((ev) => ({
      id: newId(),
      merchant_id: merchantId,
      endpoint_id: endpoint.id,
      event_id: ev.id,
      event_type: ev.type,
      payload: ev.original?.payload ?? payloadFor(ev.payload, endpoint.is_sandbox),
      max_attempts: maxAttempts(deps.config),
      is_test: ev.original?.is_test ?? endpoint.is_sandbox,
      replay_of: ev.original?.id ?? null,
      now,
    })),
  );
  await enqueueFirstAttempts(db, deps.boss, created);
  return { events: created.length, has_more: missed.length > RECOVER_MAX };
}
