import { defineRoute } from '../http/route.js';
import { invoiceIdParams } from './schemas.js';
import { invoiceDteXml } from '../dte/service.js';

/** A signed EnvioDTE as a download: the invoice's and each note's. */
export function dteXmlAnswer(xml: { content: Buffer; filename: string }) {
  return {
    status: 200,
    body: xml.content,
    headers: {
      'content-type': 'application/xml; charset=ISO-8859-1',
      'content-disposition': `attachment; filename="${xml.filename}"`,
      'content-length': String(xml.content.length),
    },
  };
}

export const dteRoutes = [
  defineRoute({
    method: 'GET',
    path: '/invoices/:invoice_id/dte.xml',
    operationId: 'getInvoiceDte',
    summary: 'Download the Chilean tax document (DTE) of an invoice',
    description:
      "The signed EnvioDTE (SII schema v1.0, ISO-8859-1) of a sent CLP invoice of a merchant set up for DTEs: the DTE (type 33, or 34 when tax-exempt, with its folio and timbre) signed by the merchant's certificate, inside a SetDTE with its Carátula, signed again. `dte_type`, `dte_folio` and `dte_status` of the Invoice say whether it has one; 404 `dte_not_found` when it has none.",
    tag: 'Invoices',
    scope: 'invoices:read',
    params: invoiceIdParams,
    response: { status: 200, description: 'The signed EnvioDTE', contentType: 'application/xml; charset=ISO-8859-1' },
    errors: ['invoice_not_found', 'dte_not_found'],
    handler: async ({ params, auth, db }) => dteXmlAnswer(await invoiceDteXml(db, auth.merchant.id, params.invoice_id)),
  }),
];
