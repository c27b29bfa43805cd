import { defineRoute } from '../http/route.js';
import type { AppContext } from '../context.js';
import { invoiceIdParams } from './schemas.js';
import * as s from './lifecycle-schemas.js';
import * as lifecycle from './lifecycle.js';
import * as service from './service.js';
import { invoiceDeps } from './routes.js';

function deps(ctx: AppContext): lifecycle.LifecycleDeps {
  return { urls: invoiceDeps(ctx).urls, boss: ctx.boss, secrets: ctx.secrets };
}

export const lifecycleRoutes = [
  defineRoute({
    method: 'POST',
    path: '/invoices/:invoice_id/send',
    operationId: 'sendInvoice',
    summary: 'Send a draft invoice',
    description:
      "Assigns the next invoice number (gapless per merchant) and queues the e-mail with the PDF attached. A merchant set up for Chilean tax documents also gets the invoice's DTE (type 33, or 34 when tax-exempt; CLP only) with the next folio of its CAFs, signed, in the same call; with no folio left the send is refused (`merchant_misconfigured`, `details.dte_type`) and the invoice stays a draft.",
    tag: 'Invoices',
    scope: 'invoices:send',
    params: invoiceIdParams,
    query: s.sendQuery,
    response: { status: 200, description: 'The invoice was sent', schema: s.sendResult },
    errors: ['invoice_not_found', 'invoice_invalid_state', 'invoice_already_paid', 'merchant_misconfigured'],
    example: { query: 'locale=es' },
    handler: async ({ params, query, auth, ctx, db }) => {
      const row = await service.sendInvoice(db, auth.merchant, params.invoice_id, query.locale, invoiceDeps(ctx));
      return { status: 200, body: service.sentResponse(row, invoiceDeps(ctx).urls) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/invoices/:invoice_id/remind',
    operationId: 'remindInvoice',
    summary: 'Send a payment reminder',
    description: 'E-mails a reminder now and counts it in `reminders_sent`. Only for sent, viewed or overdue invoices.',
    tag: 'Invoices',
    scope: 'invoices:send',
    params: invoiceIdParams,
    body: s.remindBody,
    response: { status: 200, description: 'The reminder', schema: s.reminderResource },
    errors: ['invoice_not_found', 'invoice_not_sent', 'invoice_already_paid', 'invoice_invalid_state'],
    example: { body: { custom_message: 'Le recordamos que su factura vence pronto.' } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 200,
      body: await lifecycle.remindInvoice(db, auth.merchant.id, params.invoice_id, body.custom_message ?? null, deps(ctx)),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/invoices/:invoice_id/mark-paid',
    operationId: 'markInvoicePaid',
    summary: 'Record a payment made outside the service',
    description:
      'Records the payment at server time (`paid_at` in the body is ignored), stops reminders, e-mails a receipt and emits `invoice.paid`. ' +
      'While a customer is paying the invoice on its checkout page, the answer is 409 `invoice_invalid_state` with `details.payment_in_progress: true`.',
    tag: 'Invoices',
    scope: 'payments:write',
    idempotent: true,
    params: invoiceIdParams,
    body: s.markPaidBody,
    response: { status: 200, description: 'The invoice is paid', schema: s.markPaidResult },
    errors: ['invoice_not_found', 'invoice_not_sent', 'invoice_already_paid', 'invoice_invalid_state', 'idempotency_conflict'],
    example: { body: { payment_method: 'transfer', payment_amount: 11900 } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 200,
      body: await lifecycle.markInvoicePaid(db, auth.merchant, params.invoice_id, body, deps(ctx)),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/invoices/:invoice_id/cancel',
    operationId: 'cancelInvoice',
    summary: 'Cancel an invoice',
    description:
      'A draft is deleted (`status: "deleted"`, later reads give 404); a sent, viewed or overdue invoice is cancelled and keeps its number. ' +
      "An invoice with a Chilean tax document (DTE) not rejected by the SII is cancelled by a credit note (type 61, CodRef 1 \"anula documento\") with its own folio, submitted to the SII like any DTE: `credit_note` gives its type, folio and status; with no type-61 folio left the cancel is refused (400 `merchant_misconfigured`, `details.dte_type: 61`) and nothing changes. " +
      'While a customer is paying the invoice on its checkout page (the payment is at the gateway), the answer is 409 `invoice_invalid_state` with `details.payment_in_progress: true`: retry once the payment has ended.',
    tag: 'Invoices',
    scope: 'invoices:write',
    params: invoiceIdParams,
    body: s.cancelBody,
    response: { status: 200, description: 'The invoice was cancelled or deleted', schema: s.cancelResult },
    errors: ['invoice_not_found', 'invoice_already_paid', 'invoice_invalid_state', 'merchant_misconfigured'],
    example: { body: { reason: 'Duplicated order' } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 200,
      body: await lifecycle.cancelInvoice(db, auth.merchant.id, params.invoice_id, body.reason || null, deps(ctx)),
    }),
  }),
];
