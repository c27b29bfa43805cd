// A credit or debit note is e-mailed to the client with its PDF and, when it has one, its DTE
// (docs/decisions.md §17), as the invoice was.
import type { PgBoss } from 'pg-boss';
import { z } from 'zod';
import type { Queryable } from '../db/client.js';
import type { NoteKind, NoteRow } from './note-queries.js';
import type { InvoiceRow } from './queries.js';
import { queueEmail } from '../email-queue/queue.js';
import type { EmailKind } from '../email-queue/queries.js';

/** The e-mail kind of each kind of note. */
const KINDS = { credit: 'credit_note', debit: 'debit_note' } as const satisfies Record<NoteKind, EmailKind>;

/** The note an e-mail of a note's kind is about, or null for an e-mail of another kind. */
export function noteKindOf(kind: string): NoteKind | null {
  return kind === KINDS.credit ? 'credit' : kind === KINDS.debit ? 'debit' : null;
}

/** A note e-mail's row data: which of its invoice's notes it carries. */
export const noteEmailData = z.object({ note_id: z.uuid() });

/**
 * The note's e-mail, queued in the transaction that issued it; once per note. Only an invoice of
 * the API has one: a checkout's invoice got no e-mail, and its customer none of its notes either.
 */
export async function queueNoteEmail(db: Queryable, boss: PgBoss, invoice: InvoiceRow, note: NoteRow): Promise<void> {
  if (invoice.source !== 'api') return;
  await queueEmail(db, boss, {
    merchant_id: invoice.merchant_id,
    invoice_id: invoice.id,
    kind: KINDS[note.kind],
    dedupe_key: `note:${note.id}`,
    to_address: invoice.client_email,
    locale: invoice.locale,
    data: { note_id: note.id },
  });
}
