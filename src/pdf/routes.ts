import { AppError } from '../errors.js';
import { defineRoute } from '../http/route.js';
import { invoiceIdParams } from '../invoices/schemas.js';
import { invoicePdf, type InvoicePdf } from './store.js';

/** Headers of a PDF download, shared by the API route and the hosted page's link. */
export function pdfHeaders(pdf: InvoicePdf): Record<string, string> {
  return {
    'content-type': 'application/pdf',
    'content-disposition': `inline; filename="${pdf.filename}"`,
    'content-length': String(pdf.content.length),
    'x-content-sha256': pdf.sha256,
  };
}

export const pdfRoutes = [
  defineRoute({
    method: 'GET',
    path: '/invoices/:invoice_id/pdf',
    operationId: 'getInvoicePdf',
    summary: 'Download the invoice PDF',
    description:
      "The invoice as a PDF in its locale (`es` or `en`). An issued invoice's PDF is rendered once and stored: every later download, the hosted page and the invoice e-mail serve the same bytes, whose SHA-256 is in the `X-Content-SHA256` header. A draft's PDF is a preview rendered on demand and marked as a draft (BORRADOR / DRAFT); it is never stored.",
    tag: 'Invoices',
    scope: 'invoices:read',
    params: invoiceIdParams,
    response: { status: 200, description: 'The PDF document', contentType: 'application/pdf' },
    errors: ['invoice_not_found'],
    handler: async ({ params, auth, ctx, db }) => {
      const pdf = await invoicePdf(db, auth.merchant.id, params.invoice_id, ctx.config.publicBaseUrl);
      if (!pdf) throw new AppError('invoice_not_found', `No invoice ${params.invoice_id}.`);
      return { status: 200, body: pdf.content, headers: pdfHeaders(pdf) };
    },
  }),
];
