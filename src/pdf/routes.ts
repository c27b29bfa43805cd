import { z } from 'zod';
import { AppError } from '../errors.js';
import { defineRoute } from '../http/route.js';
import type { NoteKind } from '../invoices/note-queries.js';
import { creditNoteIdParams, debitNoteIdParams } from '../invoices/note-schemas.js';
import { invoiceIdParams } from '../invoices/schemas.js';
import { invoiceCopyPdf, invoicePdf, invoiceTicketPdf, notePdf, type InvoicePdf } from './store.js';

/** Headers of a PDF download, shared by the API route and the hosted page's link. */
export function pdfHeaders(pdf: InvoicePdf): Record<string, string> {
  return {
    'content-type': 'application/pdf',
    'content-disposition': `inline; filename="${pdf.filename}"`,
    'content-length': String(pdf.content.length),
    'x-content-sha256': pdf.sha256,
  };
}

/** The copies of an issued document other than the original. */
export const pdfCopy = z.enum(['cedible']);

// Not strict: the route took no query before, and a parameter a client adds for its own reasons
// (a cache buster) must not start failing.
const pdfQuery = z.object({
  copy: pdfCopy.optional().meta({
    description:
      "`cedible`: the SII's cedible copy of a factura (an invoice whose DTE is of type 33 or 34), with CEDIBLE and the receipt box of Ley 19.983 (Nombre, R.U.T., Fecha, Recinto, Firma); an invoice without such a DTE answers 422 on `copy`",
  }),
  format: z
    .enum(['a4', 'ticket'])
    .optional()
    .meta({
      description:
        "`a4` (the default): the document on A4 pages. `ticket`: a boleta (an invoice whose DTE is of type 39 or 41) on a receipt printer's 80 mm roll, one column as tall as its content, with the timbre; rendered once and stored like the A4 document, a different document from it. A factura has no ticket (its printed representation is the A4 one, cedible copy included): an invoice without a boleta, a draft included, answers 422 on `format`, as does `ticket` with `copy`",
    }),
});

const NOTE_PDFS = {
  credit: { type: 61, number: 'CN-000001', operationId: 'getCreditNotePdf' },
  debit: { type: 56, number: 'DN-000001', operationId: 'getDebitNotePdf' },
} as const;

/** GET /credit-notes/{credit_note_id}/pdf or /debit-notes/{debit_note_id}/pdf: the note's PDF (docs/decisions.md §17). */
function notePdfRoute<P extends z.ZodType>(kind: NoteKind, params: P, idOf: (params: z.output<P>) => string) {
  const { type, number, operationId } = NOTE_PDFS[kind];
  const name = `${kind} note`;
  return defineRoute({
    method: 'GET',
    path: `/${kind}-notes/:${kind}_note_id/pdf`,
    operationId,
    summary: `Download the PDF of a ${name}`,
    description:
      `The ${name} as a PDF in its invoice's locale (\`es\` or \`en\`): the issuer, the invoice's client, the note's lines and totals, and its references, the last one the document it modifies with the note's reason. ` +
      `With a DTE (type ${type}) it is the SII's printed representation: the red box with R.U.T., document name and folio, and the timbre as a PDF417 barcode; without one, it is titled with its number (${number}). ` +
      "Printed from the issued note on each request; the client's e-mail of the note attaches the same document.",
    tag: 'Credit and debit notes',
    scope: 'invoices:read',
    params,
    response: { status: 200, description: 'The PDF document', contentType: 'application/pdf' },
    errors: [`${kind}_note_not_found`],
    handler: async ({ params, auth, db }) => {
      const id = idOf(params);
      const pdf = await notePdf(db, auth.merchant.id, kind, id);
      if (!pdf) throw new AppError(`${kind}_note_not_found`, `No ${name} ${id}.`);
      return { status: 200, body: pdf.content, headers: pdfHeaders(pdf) };
    },
  });
}

export const pdfRoutes = [
  defineRoute({
    method: 'GET',
    path: '/invoices/:invoice_id/pdf',
    operationId: 'getInvoicePdf',
    summary: 'Download the invoice PDF',
    description:
      "The invoice as a PDF in its locale (`es` or `en`). An issued invoice's PDF is rendered once and stored: every later download, the hosted page and the invoice e-mail serve the same bytes, whose SHA-256 is in the `X-Content-SHA256` header. A draft's PDF is a preview rendered on demand and marked as a draft (BORRADOR / DRAFT); it is never stored. With `copy=cedible`, the cedible copy of a factura (DTE type 33 or 34), rendered on each request and never stored. With `format=ticket`, a boleta (DTE type 39 or 41) on an 80 mm receipt roll, stored apart from the A4 document.",
    tag: 'Invoices',
    scope: 'invoices:read',
    params: invoiceIdParams,
    query: pdfQuery,
    response: { status: 200, description: 'The PDF document', contentType: 'application/pdf' },
    errors: ['invoice_not_found'],
    handler: async ({ params, query, auth, ctx, db }) => {
      if (query.format === 'ticket' && query.copy) {
        throw AppError.validation([{ path: 'format', message: 'a cedible copy is a factura\'s and prints on A4 only' }]);
      }
      const base = ctx.config.publicBaseUrl;
      const pdf =
        query.format === 'ticket'
          ? await invoiceTicketPdf(db, auth.merchant.id, params.invoice_id, base)
          : query.copy
            ? await invoiceCopyPdf(db, auth.merchant.id, params.invoice_id, query.copy, base)
            : await invoicePdf(db, auth.merchant.id, params.invoice_id, base);
      if (!pdf) throw new AppError('invoice_not_found', `No invoice ${params.invoice_id}.`);
      return { status: 200, body: pdf.content, headers: pdfHeaders(pdf) };
    },
  }),
  notePdfRoute('credit', creditNoteIdParams, (params) => params.credit_note_id),
  notePdfRoute('debit', debitNoteIdParams, (params) => params.debit_note_id),
];
