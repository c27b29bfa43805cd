import type { Queryable } from '../db/client.js';

export interface EmailRow {
  id: string;
  merchant_id: string;
  invoice_id: string | null;
  kind: 'invoice' | 'reminder' | 'receipt' | 'endpoint_disabled';
  dedupe_key: string;
  to_address: string;
  locale: 'es' | 'en';
  data: Record<string, unknown>;
  status: 'queued' | 'sent' | 'failed' | 'skipped';
  subject: string | null;
  attempts: number;
  provider_message_id: string | null;
  last_error: string | null;
  created_at: Date;
  sent_at: Date | null;
  /** While a run is delivering the message: until when its claim holds. */
  sending_until: Date | null;
}

export type NewEmail = Pick<EmailRow, 'id' | 'merchant_id' | 'invoice_id' | 'kind' | 'dedupe_key' | 'to_address' | 'locale' | 'data' | 'created_at'>;

/** Null when a message for the same cause already exists. */
export async function insertEmail(db: Queryable, e: NewEmail): Promise<EmailRow | null> {
  const rows = await db<EmailRow[]>`
    INSERT INTO emails (id, merchant_id, invoice_id, kind, dedupe_key, to_address, locale, data, status, created_at)
    VALUES (${e.id}, ${e.merchant_id}, ${e.invoice_id}, ${e.kind}, ${e.dedupe_key}, ${e.to_address}, ${e.locale},
            ${db.json(e.data as never)}, 'queued', ${e.created_at})
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING *`;
  return rows[0] ?? null;
}

/** Another run of the same e-mail holds a live claim on its row: it is delivering right now. */
export class EmailInFlightError extends Error {
  constructor(id: string) {
    super(`e-mail ${id} is being delivered by another run; retry once it is done`);
    this.name = 'EmailInFlightError';
  }
}

export async function findEmail(db: Queryable, id: string): Promise<EmailRow | null> {
  const rows = await db<EmailRow[]>`SELECT * FROM emails WHERE id = ${id}`;
  return rows[0] ?? null;
}

/**
 * The common case of a run's claim in one statement: the row is queued, nobody's claim is live,
 * and its invoice has not made it stale (a reminder of a paid or cancelled invoice, the invoice
 * e-mail of a cancelled one). Counts the attempt. Null otherwise, and then the caller finds out
 * which. The returned `sending_until` is the run's token for recording its outcome: it is cut to
 * milliseconds so that it survives the round trip through a JavaScript Date.
 */
export async function claimFreshEmail(db: Queryable, id: string, seconds: number): Promise<EmailRow | null> {
  const rows = await db<EmailRow[]>`
    UPDATE emails e SET sending_until = date_trunc('milliseconds', now()) + make_interval(secs => ${seconds}),
                        attempts = attempts + 1
     WHERE e.id = ${id} AND e.status = 'queued' AND (e.sending_until IS NULL OR e.sending_until < now())
       AND NOT EXISTS (
         SELECT 1 FROM invoices i
          WHERE i.id = e.invoice_id AND i.merchant_id = e.merchant_id
            AND ((e.kind = 'reminder' AND i.status IN ('paid', 'cancelled')) OR (e.kind = 'invoice' AND i.status = 'cancelled')))
    RETURNING *`;
  return rows[0] ?? null;
}

/** Extends a live claim of this run (`lease` is its token); the new token, or null when lost. */
export async function renewEmailClaim(db: Queryable, id: string, lease: Date, seconds: number): Promise<Date | null> {
  const rows = await db<{ sending_until: Date }[]>`
    UPDATE emails SET sending_until = date_trunc('milliseconds', now()) + make_interval(secs => ${seconds})
     WHERE id = ${id} AND status = 'queued' AND sending_until = ${lease}
    RETURNING sending_until`;
  return rows[0]?.sending_until ?? null;
}

/**
 * Final: the message lost its reason before it went out; `reason` says which. Never while another
 * run's claim is live: that run may already have handed the message over. False when not skipped.
 */
export async function markSkipped(db: Queryable, id: string, reason: string): Promise<boolean> {
  const rows = await db`
    UPDATE emails SET status = 'skipped', last_error = ${reason}, sending_until = NULL
     WHERE id = ${id} AND status = 'queued' AND (sending_until IS NULL OR sending_until < now())
    RETURNING id`;
  return rows.length > 0;
}

/**
 * Records the delivery made under the claim `lease`. Also when that claim ran out, unless another
 * run has a live claim of its own (it will record its outcome): the message did go out, and
 * leaving the row queued would have it sent again. False when it was not recorded.
 */
export async function markSent(db: Queryable, id: string, lease: Date, subject: string, providerId: string, at: Date): Promise<boolean> {
  const rows = await db`
    UPDATE emails SET status = 'sent', subject = ${subject}, provider_message_id = ${providerId}, sent_at = ${at},
                      last_error = NULL, sending_until = NULL
     WHERE id = ${id} AND status = 'queued'
       AND (sending_until = ${lease} OR sending_until IS NULL OR sending_until < now())
    RETURNING id`;
  return rows.length > 0;
}

/**
 * Records a failed attempt, and ends the claim so that the retry need not wait for it to run
 * out. Only by the run whose claim `lease` still is: a run that lost its claim must not erase what
 * a later run did. False when it was not recorded.
 */
export async function recordFailure(db: Queryable, id: string, lease: Date, error: string, final: boolean): Promise<boolean> {
  const rows = await db`
    UPDATE emails SET last_error = ${error.slice(0, 1000)}, status = CASE WHEN ${final} THEN 'failed' ELSE status END,
                      sending_until = NULL
     WHERE id = ${id} AND status = 'queued' AND sending_until = ${lease}
    RETURNING id`;
  return rows.length > 0;
}
