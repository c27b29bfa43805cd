// Issuing a credit or debit note (docs/tax-documents.md), in the caller's transaction: its number,
// its lines and totals, its DTE when the document it modifies has one, what the invoice's notes add
// up to, and its event. POST /cancel, a checkout's expiry and the notes routes all issue here.
import { clock } from '../clock.js';
import type { Queryable } from '../db/client.js';
import { noteTarget } from '../dte/service.js';
import { issueNoteDte } from './tax-document.js';
import { queueNoteEmail } from './note-email.js';
import { emitEvent } from '../events/emit.js';
import { newId } from '../ids.js';
import { Decimal } from '../money.js';
import type { NoteAmounts } from './note-amounts.js';
import * as nq from './note-queries.js';
import { creditNoteResource, debitNoteResource } from './note-resource.js';
import type { DocumentReference, InvoiceRow } from './queries.js';
import type { InvoiceDeps } from './transitions.js';

// The SII's CodRef of each reason: 1 anula, 2 corrige texto, 3 corrige montos.
const COD_REF = { cancel: 1, correct_text: 2, return: 3, charge: 3 } as const;

export const DEFAULT_DESCRIPTIONS = {
  credit: { cancel: 'Anula documento', correct_text: 'Corrige texto', return: 'Devolución de mercaderías' },
  debit: { cancel: 'Anula nota de crédito' },
} as const;

export type NoteToIssue =
  | { kind: 'credit'; reason: nq.CreditNoteReason; description: string; references: DocumentReference[]; amounts: NoteAmounts }
  | { kind: 'debit'; reason: 'charge'; description: string; references: DocumentReference[]; amounts: NoteAmounts }
  | { kind: 'debit'; reason: 'cancel'; description: string; references: DocumentReference[]; amounts: NoteAmounts; cancels: nq.NoteRow };

/** The note issued, read back as its GET shows it. */
export async function issueNote(db: Queryable, invoice: InvoiceRow, note: NoteToIssue, deps: InvoiceDeps): Promise<nq.NoteRow> {
  const now = clock.now();
  const id = newId();
  const cancels = note.kind === 'debit' && note.reason === 'cancel' ? note.cancels : null;
  await nq.insertNote(
    db,
    {
      id,
      merchant_id: invoice.merchant_id,
      invoice_id: invoice.id,
      kind: note.kind,
      number: await nq.takeNoteNumber(db, invoice.merchant_id, note.kind),
      reason: note.reason,
      description: note.description,
      cancels_note_id: cancels?.id ?? null,
      references: note.references,
      amounts: note.amounts,
      created_at: now,
    },
    note.amounts.lines.map(() => newId()),
  );
  // A note has a DTE when what it modifies has one: the invoice's, or the credit note a debit note cancels.
  const target = await noteTarget(db, cancels ? { noteId: cancels.id } : { invoiceId: invoice.id });
  if (target) {
    await issueNoteDte(
      db,
      { secrets: deps.secrets, boss: deps.boss },
      invoice,
      { id, type: note.kind === 'credit' ? 61 : 56, code: COD_REF[note.reason], description: note.description, amounts: note.amounts, references: note.references },
      target,
    );
  }
  const total = note.amounts.total;
  if (cancels) {
    if (!(await nq.markNoteCancelled(db, cancels.id, id, now))) throw new Error(`credit note ${cancels.id} was cancelled while a debit note cancelled it`);
    await nq.adjustNoteTotals(db, invoice.id, new Decimal(cancels.total).negated().toFixed(), '0', now);
  } else {
    await nq.adjustNoteTotals(db, invoice.id, note.kind === 'credit' ? total : '0', note.kind === 'debit' ? total : '0', now);
  }
  const row = (await nq.getNote(db, invoice.merchant_id, note.kind, id))!;
  if (row.kind === 'credit') await emitEvent(db, deps.boss, invoice.merchant_id, 'credit_note.created', { object: creditNoteResource(row, deps.urls) });
  else await emitEvent(db, deps.boss, invoice.merchant_id, 'debit_note.created', { object: debitNoteResource(row, deps.urls) });
  await queueNoteEmail(db, deps.boss, invoice, row);
  return row;
}
