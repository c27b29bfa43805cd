import { defineRoute } from '../http/route.js';
import { dteXmlAnswer } from './dte-routes.js';
import * as s from './note-schemas.js';
import * as notes from './notes.js';
import { invoiceDeps } from './routes.js';
import { invoiceIdParams } from './schemas.js';

// Credit and debit notes (docs/tax-documents.md).

const NOTE_ERRORS = ['invoice_not_found', 'invoice_invalid_state', 'invoice_already_paid', 'merchant_misconfigured', 'idempotency_conflict'] as const;


export const noteRoutes = [
  defineRoute({
    method: 'POST',
    path: '/invoices/:invoice_id/credit-notes',
    operationId: 'createCreditNote',
    summary: 'Issue a credit note for an invoice',
    description:
      'On a sent, viewed, overdue or (except `cancel`) paid invoice. `cancel` (CodRef 1) credits every line and total and cancels the invoice exactly as POST /cancel; ' +
      '`correct_text` (CodRef 2) corrects a text with one line of amount 0; `return` (CodRef 3) credits the lines and quantities returned, at most what no standing return credited, ' +
      'each at its unit price, exemption and discount percent (a discount amount and a global discount amount prorated). The note gets its own number (CN-000001) and, when the invoice has a DTE, ' +
      'its own type-61 DTE submitted to the SII (no type-61 folio left: 400 `merchant_misconfigured`, nothing issued). The invoice\'s `amount_credited` grows by its total; `credit_note.created` is emitted.',
    tag: 'Credit and debit notes',
    scope: 'invoices:write',
    idempotent: true,
    params: invoiceIdParams,
    body: s.createCreditNoteBody,
    response: { status: 201, description: 'The credit note', schema: s.creditNoteResource },
    errors: [...NOTE_ERRORS],
    example: { body: { reason: 'return', items: [{ item_id: '01a220f6-84d1-728a-9b46-48f1ef0b354b', quantity: 1 }], references: [{ type: '801', folio: '4500012345', date: '2026-11-20' }] } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 201,
      body: await notes.createCreditNote(db, auth.merchant, params.invoice_id, body, invoiceDeps(ctx)),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/invoices/:invoice_id/credit-notes',
    operationId: 'listCreditNotes',
    summary: "List an invoice's credit notes, oldest first",
    tag: 'Credit and debit notes',
    scope: 'invoices:read',
    params: invoiceIdParams,
    response: { status: 200, description: "The invoice's credit notes (a few at most: no paging)", schema: s.creditNoteList },
    errors: ['invoice_not_found'],
    handler: async ({ params, auth, ctx, db }) => ({
      status: 200,
      body: (await notes.listNotes(db, auth.merchant.id, params.invoice_id, 'credit', invoiceDeps(ctx))) as { data: s.CreditNoteResource[] },
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/credit-notes/:credit_note_id',
    operationId: 'getCreditNote',
    summary: 'Get a credit note',
    tag: 'Credit and debit notes',
    scope: 'invoices:read',
    params: s.creditNoteIdParams,
    response: { status: 200, description: 'The credit note', schema: s.creditNoteResource },
    errors: ['credit_note_not_found'],
    handler: async ({ params, auth, ctx, db }) => ({ status: 200, body: await notes.getCreditNote(db, auth.merchant.id, params.credit_note_id, invoiceDeps(ctx)) }),
  }),
  defineRoute({
    method: 'GET',
    path: '/credit-notes/:credit_note_id/dte.xml',
    operationId: 'getCreditNoteDte',
    summary: 'Download the DTE (type 61) of a credit note',
    description: "The signed EnvioDTE (ISO-8859-1) of the credit note's type-61 DTE; 404 `dte_not_found` for a note without one (its invoice has no DTE).",
    tag: 'Credit and debit notes',
    scope: 'invoices:read',
    params: s.creditNoteIdParams,
    response: { status: 200, description: 'The signed EnvioDTE', contentType: 'application/xml; charset=ISO-8859-1' },
    errors: ['credit_note_not_found', 'dte_not_found'],
    handler: async ({ params, auth, db }) => dteXmlAnswer(await notes.noteDteXml(db, auth.merchant.id, 'credit', params.credit_note_id)),
  }),
  defineRoute({
    method: 'POST',
    path: '/credit-notes/:credit_note_id/debit-notes',
    operationId: 'cancelCreditNote',
    summary: 'Cancel a credit note with a debit note',
    description:
      'A debit note (CodRef 1 to the credit note, its lines and amounts) cancels a `return` or `correct_text` credit note: the invoice\'s `amount_credited` drops by its total and the credit note shows `cancelled_by_debit_note_id`. ' +
      'A `cancel` credit note cannot be undone this way, nor one cancelled already (409 `invoice_invalid_state`). A type-56 DTE when the credit note has a DTE; `debit_note.created` is emitted.',
    tag: 'Credit and debit notes',
    scope: 'invoices:write',
    idempotent: true,
    params: s.creditNoteIdParams,
    body: s.cancelCreditNoteBody,
    response: { status: 201, description: 'The debit note', schema: s.debitNoteResource },
    errors: ['credit_note_not_found', 'invoice_invalid_state', 'merchant_misconfigured', 'idempotency_conflict'],
    example: { body: { reason: 'cancel' } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 201,
      body: await notes.cancelCreditNote(db, auth.merchant, params.credit_note_id, body, invoiceDeps(ctx)),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/invoices/:invoice_id/debit-notes',
    operationId: 'createDebitNote',
    summary: 'Add a charge to an invoice with a debit note',
    description:
      'On a sent, viewed, overdue or paid invoice: interest, freight or any charge (CodRef 3), its lines under the invoice\'s tax rate and treatment. Its own number (DN-000001) and, when the invoice has a DTE, a type-56 DTE. ' +
      "The invoice's `amount_debited` grows by its total; `debit_note.created` is emitted.",
    tag: 'Credit and debit notes',
    scope: 'invoices:write',
    idempotent: true,
    params: invoiceIdParams,
    body: s.createDebitNoteBody,
    response: { status: 201, description: 'The debit note', schema: s.debitNoteResource },
    errors: ['invoice_not_found', 'invoice_invalid_state', 'merchant_misconfigured', 'idempotency_conflict'],
    example: { body: { reason: 'charge', description: 'Intereses por mora', items: [{ description: 'Intereses noviembre', quantity: 1, unit_price: 2500 }] } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 201,
      body: await notes.createDebitNote(db, auth.merchant, params.invoice_id, body, invoiceDeps(ctx)),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/invoices/:invoice_id/debit-notes',
    operationId: 'listDebitNotes',
    summary: "List an invoice's debit notes, oldest first",
    tag: 'Credit and debit notes',
    scope: 'invoices:read',
    params: invoiceIdParams,
    response: { status: 200, description: "The invoice's debit notes (a few at most: no paging)", schema: s.debitNoteList },
    errors: ['invoice_not_found'],
    handler: async ({ params, auth, ctx, db }) => ({
      status: 200,
      body: (await notes.listNotes(db, auth.merchant.id, params.invoice_id, 'debit', invoiceDeps(ctx))) as { data: s.DebitNoteResource[] },
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/debit-notes/:debit_note_id',
    operationId: 'getDebitNote',
    summary: 'Get a debit note',
    tag: 'Credit and debit notes',
    scope: 'invoices:read',
    params: s.debitNoteIdParams,
    response: { status: 200, description: 'The debit note', schema: s.debitNoteResource },
    errors: ['debit_note_not_found'],
    handler: async ({ params, auth, ctx, db }) => ({ status: 200, body: await notes.getDebitNote(db, auth.merchant.id, params.debit_note_id, invoiceDeps(ctx)) }),
  }),
  defineRoute({
    method: 'GET',
    path: '/debit-notes/:debit_note_id/dte.xml',
    operationId: 'getDebitNoteDte',
    summary: 'Download the DTE (type 56) of a debit note',
    description: "The signed EnvioDTE (ISO-8859-1) of the debit note's type-56 DTE; 404 `dte_not_found` for a note without one.",
    tag: 'Credit and debit notes',
    scope: 'invoices:read',
    params: s.debitNoteIdParams,
    response: { status: 200, description: 'The signed EnvioDTE', contentType: 'application/xml; charset=ISO-8859-1' },
    errors: ['debit_note_not_found', 'dte_not_found'],
    handler: async ({ params, auth, db }) => dteXmlAnswer(await notes.noteDteXml(db, auth.merchant.id, 'debit', params.debit_note_id)),
  }),
];
