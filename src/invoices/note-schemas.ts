// Credit and debit notes (docs/tax-documents.md): what the routes take and what they answer.
import { z } from 'zod';
import { link, oneLine, timestamp, uuid } from '../http/schemas.js';
import { documentReference, documentReferenceInput, invoiceItemInput, MAX_NOTE_REFERENCES } from './schemas.js';

// The SII's RazonRef: the reason a note gives for modifying its document.
const noteDescription = oneLine()
  .trim()
  .min(1, 'must not be empty')
  .max(90, "at most 90 characters (the SII's RazonRef)")
  .meta({ description: "The note's reason as the SII's RazonRef states it" });
const noteReferences = z
  .array(documentReferenceInput)
  .max(MAX_NOTE_REFERENCES, `at most ${MAX_NOTE_REFERENCES} references (the note's own reference to its document is the 40th)`)
  .default([])
  .meta({ description: "Other documents the note refers to (a purchase order, a certification case); printed and sent before the note's own reference" });
const quantity = invoiceItemInput.shape.quantity.unwrap();

// The SII's schema allows at most 60 lines of detail per document.
const MAX_NOTE_LINES = 60;

export const createCreditNoteBody = z
  .discriminatedUnion(
    'reason',
    [
      z.strictObject({
        reason: z.literal('cancel').meta({ description: 'CodRef 1: cancels the whole invoice, which becomes cancelled (as POST /cancel does)' }),
        description: noteDescription.optional().meta({ description: 'Default "Anula documento"' }),
        references: noteReferences,
      }),
      z.strictObject({
        reason: z.literal('correct_text').meta({ description: 'CodRef 2: corrects a text of the invoice (e.g. the giro); amounts 0' }),
        corrected_text: oneLine().trim().min(1, 'must not be empty').max(1000).meta({ description: 'The text as it should read: the note\'s one line' }),
        description: noteDescription.optional().meta({ description: 'Default "Corrige texto"' }),
        references: noteReferences,
      }),
      z.strictObject({
        reason: z.literal('return').meta({ description: 'CodRef 3: goods returned, lines credited at their price' }),
        items: z
          .array(z.strictObject({ item_id: uuid.meta({ description: "The invoice's line" }), quantity }))
          .min(1, 'at least 1 item')
          .max(MAX_NOTE_LINES, `at most ${MAX_NOTE_LINES} items`),
        description: noteDescription.optional().meta({ description: 'Default "Devolución de mercaderías"' }),
        references: noteReferences,
      }),
    ],
    { error: 'must be one of cancel, correct_text, return' },
  )
  .meta({ id: 'CreateCreditNoteRequest' });
export type CreateCreditNoteInput = z.output<typeof createCreditNoteBody>;

export const cancelCreditNoteBody = z
  .strictObject({
    reason: z.literal('cancel', { error: 'must be cancel' }).meta({ description: 'CodRef 1: cancels the credit note; its amounts are credited no more' }),
    description: noteDescription.optional().meta({ description: 'Default "Anula nota de crédito"' }),
    references: noteReferences,
  })
  .meta({ id: 'CancelCreditNoteRequest' });
export type CancelCreditNoteInput = z.output<typeof cancelCreditNoteBody>;

export const chargeItemInput = z.strictObject({
  description: invoiceItemInput.shape.description,
  quantity: invoiceItemInput.shape.quantity,
  unit_price: invoiceItemInput.shape.unit_price,
  exempt: invoiceItemInput.shape.exempt,
});

export const createDebitNoteBody = z
  .strictObject({
    reason: z.literal('charge', { error: 'must be charge' }).meta({ description: 'CodRef 3: adds a charge (interest, freight) to the invoice' }),
    description: noteDescription,
    items: z.array(chargeItemInput).min(1, 'at least 1 item').max(MAX_NOTE_LINES, `at most ${MAX_NOTE_LINES} items`),
    references: noteReferences,
  })
  .meta({ id: 'CreateDebitNoteRequest' });
export type CreateDebitNoteInput = z.output<typeof createDebitNoteBody>;

export const creditNoteIdParams = z.strictObject({ credit_note_id: uuid });
export const debitNoteIdParams = z.strictObject({ debit_note_id: uuid });

const noteItem = z.object({
  id: z.string(),
  item_id: z.string().nullable().meta({ description: "The invoice's line it returns; null for other lines" }),
  description: z.string(),
  quantity: z.string().nullable().meta({ description: 'Null on a corrected text' }),
  unit_price: z.string().nullable(),
  discount_percent: z.string().nullable(),
  discount_amount: z.string(),
  exempt: z.boolean(),
  line_total: z.string(),
});

const noteStatus = z
  .enum(['pending', 'sent', 'accepted', 'accepted_with_objections', 'rejected'])
  .nullable()
  .meta({ description: 'Where its DTE stands at the SII; null for a note without one' });

const noteFields = {
  id: z.string(),
  invoice_id: z.string(),
  number: z.string().meta({ description: 'CN-000001 or DN-000001: gapless per merchant, with or without a DTE' }),
  description: z.string(),
  currency: z.string(),
  items: z.array(noteItem),
  subtotal: z.string(),
  taxable_amount: z.string(),
  exempt_amount: z.string(),
  discount_total: z.string(),
  tax_total: z.string(),
  total: z.string(),
  dte_type: z.number().int().nullable(),
  dte_folio: z.number().int().nullable(),
  dte_status: noteStatus,
  dte_track_id: z.string().nullable(),
  references: z.array(documentReference),
  created_at: timestamp,
};

export const creditNoteResource = z
  .object({
    ...noteFields,
    reason: z.enum(['cancel', 'correct_text', 'return']),
    dte_type: z.literal(61).nullable(),
    cancelled_by_debit_note_id: z.string().nullable().meta({ description: 'The debit note that cancelled it, or null' }),
    _links: z.object({ self: link, invoice: link, pdf: link, dte: link }),
  })
  .meta({ id: 'CreditNote', description: 'A credit note (nota de crédito, type 61 when the invoice has a DTE)' });
export type CreditNoteResource = z.output<typeof creditNoteResource>;

export const debitNoteResource = z
  .object({
    ...noteFields,
    reason: z.enum(['cancel', 'charge']),
    dte_type: z.literal(56).nullable(),
    credit_note_id: z.string().nullable().meta({ description: 'The credit note it cancels (reason cancel), or null' }),
    _links: z.object({ self: link, invoice: link, pdf: link, dte: link }),
  })
  .meta({ id: 'DebitNote', description: 'A debit note (nota de débito, type 56 when the document it modifies has a DTE)' });
export type DebitNoteResource = z.output<typeof debitNoteResource>;

export const creditNoteList = z.object({ data: z.array(creditNoteResource) }).meta({ id: 'CreditNoteList' });
export const debitNoteList = z.object({ data: z.array(debitNoteResource) }).meta({ id: 'DebitNoteList' });
