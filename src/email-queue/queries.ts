import type { Queryable } from '../db/client.js';
import type { Locale } from '../format.js';

/** What an e-mail is about; a credit or debit note's e-mail carries the note. */
export type EmailKind = 'invoice' | 'reminder' | 'receipt' | 'endpoint_disabled' | 'credit_note' | 'debit_note';

export interface EmailRow {
  id: string;
  merchant_id: string;
  invoice_id: string | null;
  kind: EmailKind;
  dedupe_key: string;
  to_address: string;
  locale: Locale;
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
