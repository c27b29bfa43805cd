import type { Queryable } from '../db/client.js';
import { AppError } from '../errors.js';
import * as q from './event-queries.js';
import type { ListEventsQuery } from './event-schemas.js';
import type { EventRecord } from '../events/emit.js';

export function eventNotFound(id: string): AppError {
  return new AppError('event_not_found', `No event ${id}.`);
}

/** The stored text parsed: the body its deliveries carried (docs/decisions.md §18). */
const asEvent = (row: q.StoredEvent) => JSON.parse(row.payload) as EventRecord;

/**
 * docs/decisions.md §18: a page of the merchant's events, newest first. `starting_after` must be one of
 * the merchant's events (422 naming it otherwise): an id from elsewhere is a mistake worth saying,
 * not an empty page.
 */
export async function listEvents(db: Queryable, merchantId: string, query: ListEventsQuery) {
  if (query.starting_after && !(await q.eventExists(db, merchantId, query.starting_after))) {
    throw AppError.validation([{ path: 'starting_after', message: 'must be the id of one of your events' }]);
  }
  const rows = await q.listEvents(db, merchantId, {
    before: query.starting_after,
    types: query.type,
    created_gte: query.created_gte,
    created_lt: query.created_lt,
    delivery_success: query.delivery_success,
    limit: query.limit + 1,
  });
  return { data: rows.slice(0, query.limit).map(asEvent), has_more: rows.length > query.limit };
}

export async function getEvent(db: Queryable, merchantId: string, id: string) {
  const row = await q.getEvent(db, merchantId, id);
  if (!row) throw eventNotFound(id);
  return asEvent(row);
}
