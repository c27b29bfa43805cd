// Credit and debit notes through the API (docs/tax-documents.md), each in the request's
// transaction: the invoice (and the credit note a debit note cancels) locked and checked first,
// the note's amounts worked out, then issued (note-issue.ts).
import { dateInZone, clock } from '../clock.js';
import type { Queryable } from '../db/client.js';
import { dteFilename } from '../dte/document.js';
import { AppError } from '../errors.js';
import type { MerchantSettings } from '../http/auth.js';
import { Decimal } from '../money.js';
import { resolveReferences } from './create.js';
import { chargeAmounts, correctTextAmounts, returnAmounts, type NoteAmounts, type ReturnedLine } from './note-amounts.js';
import { DEFAULT_DESCRIPTIONS, issueNote } from './note-issue.js';
import * as nq from './note-queries.js';
import { creditNoteResource, debitNoteResource } from './note-resource.js';
import type { CancelCreditNoteInput, CreateCreditNoteInput, CreateDebitNoteInput } from './note-schemas.js';
import { getInvoiceWithItems, getInvoiceRow, type InvoiceWithItems } from './queries.js';
import { invoiceNotFound } from './read.js';
import type { InvoiceStatus } from './schemas.js';
import { lockInvoice } from './transition-queries.js';
import { cancelIssuedInvoice, type InvoiceDeps } from './transitions.js';

// A note modifies a document the client has: a sent invoice, paid or not (a cancel: not paid, as POST /cancel).
const NOTE_STATES: readonly InvoiceStatus[] = ['sent', 'viewed', 'overdue', 'paid'];

function creditNoteNotFound(id: string): AppError {
  return new AppError('credit_note_not_found', `No credit note ${id}.`);
}

function debitNoteNotFound(id: string): AppError {
  return new AppError('debit_note_not_found', `No debit note ${id}.`);
}

/** The invoice, locked for the transaction, in a state a note can modify. */
async function noteableInvoice(db: Queryable, merchantId: string, invoiceId: string, what: string): Promise<InvoiceWithItems> {
  const status = await lockInvoice(db, merchantId, invoiceId);
  if (!status) throw invoiceNotFound(invoiceId);
  if (!NOTE_STATES.includes(status)) {
    throw new AppError('invoice_invalid_state', `Cannot issue ${what} for an invoice in status ${status}: only a sent, viewed, overdue or paid invoice has one.`, {
      details: { status },
    });
  }
  return (await getInvoiceWithItems(db, merchantId, invoiceId))!;
}

/** The lines a return credits: each a line of the invoice, at most what no standing return has credited yet. */
async function returnedLines(db: Queryable, invoice: InvoiceWithItems, items: { item_id: string; quantity: number }[]): Promise<ReturnedLine[]> {
  const credited = await nq.returnedQuantities(db, invoice.id);
  const seen = new Set<string>();
  const problems: { path: string; message: string }[] = [];
  const lines = items.flatMap(({ item_id, quantity }, i): ReturnedLine[] => {
    const item = invoice.items.find((it) => it.id === item_id);
    if (!item) {
      problems.push({ path: `items[${i}].item_id`, message: `is not a line of invoice ${invoice.id}` });
      return [];
    }
    if (seen.has(item_id)) problems.push({ path: `items[${i}].item_id`, message: 'is given twice: give each line once, with the whole quantity returned' });
    seen.add(item_id);
    const left = new Decimal(item.quantity).minus(credited.get(item_id) ?? 0);
    if (new Decimal(quantity).gt(left)) {
      problems.push({ path: `items[${i}].quantity`, message: `must be at most ${left.toFixed()}: what of this line (quantity ${new Decimal(item.quantity).toFixed()}) is not credited yet` });
    }
    return [{ item, quantity: String(quantity) }];
  });
  if (problems.length) throw AppError.validation(problems);
  return lines;
}

/** The note's issue date: the merchant's today, which a reference's date defaults to. */
const today = (merchant: MerchantSettings) => dateInZone(clock.now(), merchant.timezone);

/**
 * POST /invoices/{id}/credit-notes. `cancel` cancels the invoice as POST /cancel does (its note
 * issued there); `correct_text` and `return` leave its status as it is.
 */
export async function createCreditNote(db: Queryable, merchant: MerchantSettings, invoiceId: string, input: CreateCreditNoteInput, deps: InvoiceDeps) {
  const invoice = await noteableInvoice(db, merchant.id, invoiceId, 'a credit note');
  const description = input.description ?? DEFAULT_DESCRIPTIONS.credit[input.reason];
  const references = resolveReferences(input.references, today(merchant));
  let note: nq.NoteRow;
  if (input.reason === 'cancel') {
    note = (await cancelIssuedInvoice(db, merchant.id, invoiceId, description, deps, { description, references })).note;
  } else {
    const amounts: NoteAmounts =
      input.reason === 'correct_text' ? correctTextAmounts(input.corrected_text) : returnAmounts(invoice, await returnedLines(db, invoice, input.items));
    note = await issueNote(db, invoice, { kind: 'credit', reason: input.reason, description, references, amounts }, deps);
  }
  return creditNoteResource(note, deps.urls);
}

/** POST /credit-notes/{id}/debit-notes: cancels a return or text credit note (CodRef 1 to it), its amounts credited no more. */
export async function cancelCreditNote(db: Queryable, merchant: MerchantSettings, creditNoteId: string, input: CancelCreditNoteInput, deps: InvoiceDeps) {
  const found = await nq.getNote(db, merchant.id, 'credit', creditNoteId);
  if (!found) throw creditNoteNotFound(creditNoteId);
  const invoice = await noteableInvoice(db, merchant.id, found.invoice_id, 'a debit note');
  await nq.lockNote(db, merchant.id, creditNoteId);
  const creditNote = (await nq.getNote(db, merchant.id, 'credit', creditNoteId))!;
  if (creditNote.reason === 'cancel' || creditNote.cancelled_by_id) {
    const why = creditNote.reason === 'cancel' ? 'it cancelled its invoice, which stays cancelled' : `debit note ${creditNote.cancelled_by_id} cancelled it already`;
    throw new AppError('invoice_invalid_state', `Credit note ${creditNote.number} cannot be cancelled: ${why}.`, { details: { status: invoice.status } });
  }
  const amounts: NoteAmounts = { ...creditNote, lines: creditNote.items };
  const note = await issueNote(
    db,
    invoice,
    {
      kind: 'debit',
      reason: 'cancel',
      description: input.description ?? DEFAULT_DESCRIPTIONS.debit.cancel,
      references: resolveReferences(input.references, today(merchant)),
      amounts,
      cancels: creditNote,
    },
    deps,
  );
  return debitNoteResource(note, deps.urls);
}

/** POST /invoices/{id}/debit-notes: a charge added to the invoice (CodRef 3), under its tax rate and treatment. */
export async function createDebitNote(db: Queryable, merchant: MerchantSettings, invoiceId: string, input: CreateDebitNoteInput, deps: InvoiceDeps) {
  const invoice = await noteableInvoice(db, merchant.id, invoiceId, 'a debit note');
  const note = await issueNote(
    db,
    invoice,
    { kind: 'debit', reason: 'charge', description: input.description, references: resolveReferences(input.references, today(merchant)), amounts: chargeAmounts(invoice, input.items) },
    deps,
  );
  return debitNoteResource(note, deps.urls);
}

export async function getCreditNote(db: Queryable, merchantId: string, id: string, deps: Pick<InvoiceDeps, 'urls'>) {
  const row = await nq.getNote(db, merchantId, 'credit', id);
  if (!row) throw creditNoteNotFound(id);
  return creditNoteResource(row, deps.urls);
}

export async function getDebitNote(db: Queryable, merchantId: string, id: string, deps: Pick<InvoiceDeps, 'urls'>) {
  const row = await nq.getNote(db, merchantId, 'debit', id);
  if (!row) throw debitNoteNotFound(id);
  return debitNoteResource(row, deps.urls);
}

/** The invoice's notes of a kind, oldest first; 404 for an invoice the merchant does not have. */
export async function listNotes(db: Queryable, merchantId: string, invoiceId: string, kind: nq.NoteKind, deps: Pick<InvoiceDeps, 'urls'>) {
  const [rows, invoice] = await Promise.all([nq.listNotes(db, merchantId, invoiceId, kind), getInvoiceRow(db, merchantId, invoiceId)]);
  if (!invoice) throw invoiceNotFound(invoiceId);
  return { data: rows.map((r) => (kind === 'credit' ? creditNoteResource(r, deps.urls) : debitNoteResource(r, deps.urls))) };
}

/** The note's signed EnvioDTE with its file name; 404 for an unknown note or one without a DTE. */
export async function noteDteXml(db: Queryable, merchantId: string, kind: nq.NoteKind, id: string): Promise<{ content: Buffer; filename: string }> {
  const found = await nq.noteDteXml(db, merchantId, kind, id);
  if (!found) throw kind === 'credit' ? creditNoteNotFound(id) : debitNoteNotFound(id);
  if (!found.envio_xml) throw new AppError('dte_not_found', `The ${kind} note ${id} has no tax document (DTE): the document it modifies has none.`);
  return { content: found.envio_xml, filename: dteFilename(found.dte_type!, found.dte_folio!) };
}
