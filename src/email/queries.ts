import type { Queryable, Tx } from '../db/client.js';

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

/** Another run of the same e-mail holds its row: it is delivering right now. */
export class EmailInFlightError extends Error {
  constructor(id: string) {
    super(`e-mail ${id} is being delivered by another run; retry once it is done`);
    this.name = 'EmailInFlightError';
  }
}

const LOCK_NOT_AVAILABLE = '55P03';

/**
 * Locks the row until `tx` ends; throws EmailInFlightError at once, instead of waiting, when
 * another run holds it. A run that dies releases it with its connection.
 */
export async function lockEmail(tx: Tx, id: string): Promise<EmailRow | null> {
  try {
    const rows = await tx<EmailRow[]>`SELECT * FROM emails WHERE id = ${id} FOR UPDATE NOWAIT`;
    return rows[0] ?? null;
  } catch (err) {
    if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) throw new EmailInFlightError(id);
    throw err;
  }
}

/** Counted and committed before the message goes out, so a crash mid-send still shows it. */
export async function startAttempt(db: Queryable, id: string): Promise<EmailRow | null> {
  const rows = await db<EmailRow[]>`
    UPDATE emails SET attempts = attempts + 1 WHERE id = ${id} AND status = 'queued' RETURNING *`;
  return rows[0] ?? null;
}

/** Final: the message lost its reason before it went out; `reason` says which. */
export async function markSkipped(db: Queryable, id: string, reason: string): Promise<void> {
  await db`UPDATE emails SET status = 'skipped', last_error = ${reason} WHERE id = ${id} AND status = 'queued'`;
}

export async function markSent(db: Queryable, id: string, subject: string, providerId: string, at: Date): Promise<void> {
  await db`
    UPDATE emails SET status = 'sent', subject = ${subject}, provider_message_id = ${providerId}, sent_at = ${at}, last_error = NULL
     WHERE id = ${id}`;
}

export async function recordFailure(db: Queryable, id: string, error: string, final: boolean): Promise<void> {
  await db`
    UPDATE emails SET last_error = ${error.slice(0, 1000)}, status = CASE WHEN ${final} THEN 'failed' ELSE status END
     WHERE id = ${id} AND status = 'queued'`;
}
