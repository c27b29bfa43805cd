import type { Queryable } from '../db/client.js';
import type { NoteAmounts, NoteLine } from './note-amounts.js';
import type { DocumentReference } from './queries.js';

export type NoteKind = 'credit' | 'debit';
export type CreditNoteReason = 'cancel' | 'correct_text' | 'return';
export type DebitNoteReason = 'cancel' | 'charge';

export type NoteItemRow = NoteLine & { id: string };

/** A note as stored: its amounts (as note-amounts.ts works them out) and what the API shows of it. */
export interface NoteRow extends Omit<NoteAmounts, 'lines'> {
  id: string;
  merchant_id: string;
  invoice_id: string;
  kind: NoteKind;
  number: string;
  reason: CreditNoteReason | DebitNoteReason;
  description: string;
  cancels_note_id: string | null;
  cancelled_by_id: string | null;
  references: DocumentReference[];
  dte_type: 56 | 61 | null;
  dte_folio: number | null;
  dte_status: 'pending' | 'sent' | 'accepted' | 'accepted_with_objections' | 'rejected' | null;
  dte_track_id: string | null;
  created_at: Date;
  /** The invoice's, which the note's amounts are in. */
  currency: string;
  items: NoteItemRow[];
}

const NOTE_PREFIX: Record<NoteKind, string> = { credit: 'CN-', debit: 'DN-' };

/** The next number of the kind, gapless per merchant: the counter row stays locked until the transaction ends. */
export async function takeNoteNumber(db: Queryable, merchantId: string, kind: NoteKind): Promise<string> {
  const [row] = await db<{ last_number: string }[]>`
    INSERT INTO note_counters (merchant_id, kind, last_number) VALUES (${merchantId}, ${kind}, 1)
    ON CONFLICT (merchant_id, kind) DO UPDATE SET last_number = note_counters.last_number + 1
    RETURNING last_number::text`;
  return `${NOTE_PREFIX[kind]}${row!.last_number.padStart(6, '0')}`;
}

/** A note to insert: what it is, and its amounts as note-amounts.ts works them out. */
export type NewNote = Pick<NoteRow, 'id' | 'merchant_id' | 'invoice_id' | 'kind' | 'number' | 'reason' | 'description' | 'cancels_note_id' | 'references' | 'created_at'> & {
  amounts: NoteAmounts;
};

const noteSelect = (db: Queryable) => db`
  n.*, i.currency,
  coalesce((SELECT json_agg(json_build_object(
      'id', it.id, 'invoice_item_id', it.invoice_item_id, 'description', it.description,
      'quantity', it.quantity::text, 'unit_price', it.unit_price::text, 'discount_percent', it.discount_percent::text,
      'discount_amount', it.discount_amount::text, 'exempt', it.exempt, 'line_total', it.line_total::text)
      ORDER BY it.position)
    FROM invoice_note_items it WHERE it.note_id = n.id), '[]'::json) AS items`;

/** The note and its lines in one statement, read back as getNote reads it. */
export async function insertNote(db: Queryable, n: NewNote, itemIds: string[]): Promise<void> {
  const a = n.amounts;
  const lines = a.lines;
  await db`
    WITH note AS (
      INSERT INTO invoice_notes (id, merchant_id, invoice_id, kind, number, reason, description, cancels_note_id,
                                 global_discount_percent, global_discount_amount, global_discount_description,
                                 subtotal, taxable_amount, exempt_amount, discount_total, tax_total, total, "references",
                                 created_at, updated_at)
      VALUES (${n.id}, ${n.merchant_id}, ${n.invoice_id}, ${n.kind}, ${n.number}, ${n.reason}, ${n.description}, ${n.cancels_note_id},
              ${a.global_discount_percent}::numeric, ${a.global_discount_amount}::numeric, ${a.global_discount_description},
              ${a.subtotal}::numeric, ${a.taxable_amount}::numeric, ${a.exempt_amount}::numeric, ${a.discount_total}::numeric,
              ${a.tax_total}::numeric, ${a.total}::numeric, ${JSON.stringify(n.references)}::text::jsonb, ${n.created_at}, ${n.created_at})
      RETURNING id
    )
    INSERT INTO invoice_note_items (id, note_id, position, invoice_item_id, description, quantity, unit_price,
                                    discount_percent, discount_amount, exempt, line_total)
    SELECT it.id, note.id, it.position, it.invoice_item_id, it.description, it.quantity, it.unit_price,
           it.discount_percent, it.discount_amount, it.exempt, it.line_total
      FROM note,
           unnest(${itemIds}::uuid[], ${lines.map((_, i) => i)}::int[], ${lines.map((l) => l.invoice_item_id)}::uuid[],
                  ${lines.map((l) => l.description)}::text[], ${lines.map((l) => l.quantity)}::numeric[],
                  ${lines.map((l) => l.unit_price)}::numeric[], ${lines.map((l) => l.discount_percent)}::numeric[],
                  ${lines.map((l) => l.discount_amount)}::numeric[], ${lines.map((l) => String(l.exempt))}::text[]::boolean[],
                  ${lines.map((l) => l.line_total)}::numeric[])
             AS it (id, position, invoice_item_id, description, quantity, unit_price, discount_percent, discount_amount, exempt, line_total)`;
}

export async function getNote(db: Queryable, merchantId: string, kind: NoteKind, id: string): Promise<NoteRow | null> {
  const rows = await db<NoteRow[]>`
    SELECT ${noteSelect(db)} FROM invoice_notes n JOIN invoices i ON i.id = n.invoice_id
     WHERE n.merchant_id = ${merchantId} AND n.kind = ${kind} AND n.id = ${id}`;
  return rows[0] ?? null;
}

/** The invoice's notes of the kind, oldest first: a few per invoice at most, so no paging. */
export async function listNotes(db: Queryable, merchantId: string, invoiceId: string, kind: NoteKind): Promise<NoteRow[]> {
  return db<NoteRow[]>`
    SELECT ${noteSelect(db)} FROM invoice_notes n JOIN invoices i ON i.id = n.invoice_id
     WHERE n.merchant_id = ${merchantId} AND n.invoice_id = ${invoiceId} AND n.kind = ${kind}
     ORDER BY n.created_at, n.number`;
}

/** How much of each of the invoice's lines its standing return credit notes have taken back. */
export async function returnedQuantities(db: Queryable, invoiceId: string): Promise<Map<string, string>> {
  const rows = await db<{ invoice_item_id: string; quantity: string }[]>`
    SELECT it.invoice_item_id, sum(it.quantity)::text AS quantity
      FROM invoice_note_items it JOIN invoice_notes n ON n.id = it.note_id
     WHERE n.invoice_id = ${invoiceId} AND n.kind = 'credit' AND n.reason = 'return' AND n.cancelled_by_id IS NULL
     GROUP BY it.invoice_item_id`;
  return new Map(rows.map((r) => [r.invoice_item_id, r.quantity]));
}

/** What the invoice's notes add up to moves by these amounts. */
export async function adjustNoteTotals(db: Queryable, invoiceId: string, credited: string, debited: string, now: Date): Promise<void> {
  await db`
    UPDATE invoices SET amount_credited = amount_credited + ${credited}::numeric, amount_debited = amount_debited + ${debited}::numeric,
                        updated_at = ${now}
     WHERE id = ${invoiceId}`;
}

/** A standing return or text credit note, marked cancelled by the debit note; false when it is not one (any more). */
export async function markNoteCancelled(db: Queryable, creditNoteId: string, debitNoteId: string, now: Date): Promise<boolean> {
  const rows = await db`
    UPDATE invoice_notes SET cancelled_by_id = ${debitNoteId}, updated_at = ${now}
     WHERE id = ${creditNoteId} AND kind = 'credit' AND reason IN ('return', 'correct_text') AND cancelled_by_id IS NULL
    RETURNING id`;
  return rows.length > 0;
}

/** The credit note locked for the transaction, so two debit notes cannot both cancel it. */
export async function lockNote(db: Queryable, merchantId: string, id: string): Promise<void> {
  await db`SELECT 1 FROM invoice_notes WHERE merchant_id = ${merchantId} AND id = ${id} FOR UPDATE`;
}

/** Whether the merchant has the note, and its signed EnvioDTE when it has one. */
export async function noteDteXml(db: Queryable, merchantId: string, kind: NoteKind, id: string): Promise<{ envio_xml: Buffer | null; dte_type: number | null; dte_folio: number | null } | null> {
  const rows = await db<{ envio_xml: Buffer | null; dte_type: number | null; dte_folio: number | null }[]>`
    SELECT envio_xml, dte_type, dte_folio FROM invoice_notes WHERE merchant_id = ${merchantId} AND kind = ${kind} AND id = ${id}`;
  return rows[0] ?? null;
}
