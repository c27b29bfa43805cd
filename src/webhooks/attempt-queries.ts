import type { Queryable } from '../db/client.js';
import type { DeliveryRow, DeliveryStatus } from './delivery-queries.js';
import type { DeliveryErrorCategory } from './schemas.js';

export interface AttemptRow {
  id: string;
  delivery_id: string;
  attempt_number: number;
  started_at: Date;
  duration_ms: number;
  request_url: string;
  request_headers: Record<string, string>;
  response_status: number | null;
  response_body: string | null;
  error: string | null;
  error_category: DeliveryErrorCategory | null;
}

export type NewAttempt = AttemptRow;

export async function insertAttempt(db: Queryable, a: NewAttempt): Promise<void> {
  await db`
    INSERT INTO webhook_attempts (id, delivery_id, attempt_number, started_at, duration_ms, request_url, request_headers, response_status, response_body, error, error_category)
    VALUES (${a.id}, ${a.delivery_id}, ${a.attempt_number}, ${a.started_at}, ${a.duration_ms}, ${a.request_url},
            ${db.json(a.request_headers)}, ${a.response_status}, ${a.response_body}, ${a.error}, ${a.error_category})`;
}

export interface AttemptOutcome {
  status: DeliveryStatus;
  next_retry_at: Date | null;
  last_response_status: number | null;
  last_error: string | null;
  last_error_category: DeliveryErrorCategory | null;
  completed_at: Date | null;
}

/** Null when this attempt was already recorded (a run that lost its hold and came back late). */
export async function recordAttempt(db: Queryable, id: string, attempt: number, o: AttemptOutcome, now: Date): Promise<DeliveryRow | null> {
  const rows = await db<DeliveryRow[]>`
    UPDATE webhook_deliveries SET attempts = ${attempt}, status = ${o.status}, next_retry_at = ${o.next_retry_at},
           last_response_status = ${o.last_response_status}, last_error = ${o.last_error},
           last_error_category = ${o.last_error_category}, completed_at = ${o.completed_at},
           leased_until = NULL, updated_at = ${now}
     WHERE id = ${id} AND attempts = ${attempt - 1} AND status IN ('pending', 'retrying')
    RETURNING *`;
  return rows[0] ?? null;
}

/**
 * A successful attempt, recorded in one statement (so with no transaction of its own): the
 * delivery succeeds, the attempt is kept and, when it counts, the endpoint's failure streak ends.
 * The common outcome by far, and one round trip instead of five. Null when another run recorded
 * this attempt first (nothing is written then).
 */
export async function recordSuccessfulAttempt(
  db: Queryable,
  a: NewAttempt,
  endpoint: { id: string; counts: boolean },
  now: Date,
): Promise<DeliveryRow | null> {
  const rows = await db<DeliveryRow[]>`
    WITH d AS (
      UPDATE webhook_deliveries SET attempts = ${a.attempt_number}, status = 'success', next_retry_at = NULL,
             last_response_status = ${a.response_status}, last_error = NULL, last_error_category = NULL,
             completed_at = ${now}, leased_until = NULL, updated_at = ${now}
       WHERE id = ${a.delivery_id} AND attempts = ${a.attempt_number - 1} AND status IN ('pending', 'retrying')
      RETURNING *
    ), kept AS (
      INSERT INTO webhook_attempts (id, delivery_id, attempt_number, started_at, duration_ms, request_url, request_headers, response_status, response_body, error, error_category)
      SELECT ${a.id}, d.id, ${a.attempt_number}, ${a.started_at}, ${a.duration_ms}, ${a.request_url},
             ${db.json(a.request_headers)}, ${a.response_status}, ${a.response_body}, NULL, NULL
        FROM d
    ), healthy AS (
      UPDATE webhook_endpoints SET consecutive_failures = 0, failing_since = NULL, updated_at = ${now}
       WHERE id = ${endpoint.id} AND ${endpoint.counts} AND EXISTS (SELECT 1 FROM d)
         AND (consecutive_failures <> 0 OR failing_since IS NOT NULL)
    )
    SELECT * FROM d`;
  return rows[0] ?? null;
}

export async function listAttempts(db: Queryable, deliveryId: string): Promise<AttemptRow[]> {
  return db<AttemptRow[]>`SELECT * FROM webhook_attempts WHERE delivery_id = ${deliveryId} ORDER BY attempt_number`;
}
