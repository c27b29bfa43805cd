import { z } from 'zod';
import { AppError } from '../errors.js';
import { defineRoute } from '../http/route.js';
import { listOf, page } from '../http/schemas.js';
import { invoiceUrls } from '../http/urls.js';
import { parseOrThrow } from '../http/validation.js';
import type { AppContext } from '../http/context.js';
import type { Tx } from '../db/client.js';
import { prepareRates, createInvoice } from './create.js';
import * as read from './read.js';
import { createdResponse, sentResponse } from './resource.js';
import * as s from './schemas.js';
import * as transitions from './transitions.js';

export function invoiceDeps(ctx: AppContext): transitions.InvoiceDeps {
  return { urls: invoiceUrls(ctx.config), boss: ctx.boss, secrets: ctx.secrets };
}

/** Bulk items that will pass validation; the others fail on their own and need no rate. */
function validItems(items: unknown[]): s.CreateInvoiceInput[] {
  return items.flatMap((raw) => {
    const parsed = s.createInvoiceBody.safeParse(raw);
    return parsed.success ? [parsed.data] : [];
  });
}

const createExample = {
  client: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl', rut: '76.086.428-5' },
  due_date: '2026-12-31',
  items: [{ description: 'Consultoría noviembre', quantity: 2, unit_price: 5000 }],
  send_immediately: true,
};

export const invoiceRoutes = [
  defineRoute({
    method: 'POST',
    path: '/invoices',
    operationId: 'createInvoice',
    summary: 'Create an invoice',
    description:
      'Reuses the client with the same e-mail (ignoring case) or creates one. Totals follow the arithmetic of the docs: half-up at the currency precision. `send_immediately: true` assigns the number and queues the e-mail in the same call.',
    tag: 'Invoices',
    scope: 'invoices:create',
    idempotent: true,
    body: s.createInvoiceBody,
    response: { status: 201, description: 'The invoice was created', schema: s.invoiceCreated },
    errors: ['currency_not_supported', 'currency_conversion_failed', 'merchant_misconfigured', 'idempotency_conflict'],
    example: { body: createExample },
    prepare: ({ body, auth, ctx }) => prepareRates(ctx.sql, auth.merchant, [body], ctx.config.EXCHANGE_RATES_URL),
    handler: async ({ body, auth, ctx, db }) => {
      const deps = invoiceDeps(ctx);
      const row = await createInvoice(db, auth.merchant, body, deps);
      return { status: 201, body: createdResponse(row, deps.urls) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/invoices/bulk',
    operationId: 'createInvoicesBulk',
    summary: 'Create up to 50 invoices (best effort)',
    description:
      'Each item has the shape of the POST /invoices body and succeeds or fails on its own; a failed item reports `error` (the error code), `message` and `details`.',
    tag: 'Invoices',
    scope: 'invoices:create',
    idempotent: true,
    body: s.bulkInvoicesBody,
    response: { status: 200, description: 'Per-item results', schema: s.bulkResult },
    errors: ['idempotency_conflict'],
    example: { body: { invoices: [createExample] } },
    prepare: ({ body, auth, ctx }) => prepareRates(ctx.sql, auth.merchant, validItems(body.invoices), ctx.config.EXCHANGE_RATES_URL),
    handler: async ({ body, auth, ctx, db }) => {
      const deps = invoiceDeps(ctx);
      // Non-GET handlers always run inside the request's transaction.
      const tx = db as Tx;
      const results: z.infer<typeof s.bulkResult>['results'] = [];
      for (const [index, raw] of body.invoices.entries()) {
        try {
          // A savepoint per item: one failure rolls back only that item.
          const row = await tx.savepoint(async (sp) =>
            // Paths inside an item are the item's, as POST /invoices names them; an item that is no
            // invoice at all is named by its place in the list.
            createInvoice(sp, auth.merchant, parseOrThrow(s.createInvoiceBody, raw, 422, '', `invoices[${index}]`), deps),
          );
          results.push({ index, success: true, invoice: createdResponse(row, deps.urls) });
        } catch (err) {
          // Best effort: an item's own failure (a missing exchange rate included) is that item's
          // result; only a failure of the service itself aborts the whole call.
          if (!(err instanceof AppError) || err.code === 'internal_error' || err.code === 'service_unavailable') throw err;
          results.push({ index, success: false, error: err.code, message: err.message, details: err.details });
        }
      }
      const succeeded = results.filter((r) => r.success).length;
      return { status: 200, body: { total: results.length, succeeded, failed: results.length - succeeded, results } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/invoices',
    operationId: 'listInvoices',
    summary: 'List invoices, newest first',
    tag: 'Invoices',
    scope: 'invoices:read',
    query: s.listInvoicesQuery,
    response: { status: 200, description: 'A page of invoices', schema: listOf(s.invoiceResource) },
    errors: [],
    example: { query: 'status=sent&limit=20' },
    handler: async ({ query, auth, ctx, db }) => {
      const { limit, offset, ...filters } = query;
      const rows = await read.listInvoices(db, auth.merchant.id, filters, limit, offset, invoiceDeps(ctx).urls);
      return { status: 200, body: page(rows, limit, offset) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/invoices/:invoice_id',
    operationId: 'getInvoice',
    summary: 'Get an invoice',
    tag: 'Invoices',
    scope: 'invoices:read',
    params: s.invoiceIdParams,
    response: { status: 200, description: 'The invoice', schema: s.invoiceResource },
    errors: ['invoice_not_found'],
    handler: async ({ params, auth, ctx, db }) => ({
      status: 200,
      body: await read.getInvoice(db, auth.merchant.id, params.invoice_id, invoiceDeps(ctx).urls),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/invoices/:invoice_id/status',
    operationId: 'getInvoiceStatus',
    summary: 'Get the status summary of an invoice',
    tag: 'Invoices',
    scope: 'invoices:read',
    params: s.invoiceIdParams,
    response: { status: 200, description: 'Status summary', schema: s.invoiceStatusSummary },
    errors: ['invoice_not_found'],
    handler: async ({ params, auth, ctx, db }) => ({
      status: 200,
      body: await read.getInvoiceStatus(db, auth.merchant.id, params.invoice_id, invoiceDeps(ctx).urls),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/invoices/:invoice_id/send',
    operationId: 'sendInvoice',
    summary: 'Send a draft invoice',
    description:
      "Assigns the next invoice number (gapless per merchant) and queues the e-mail with the PDF attached. A merchant set up for Chilean tax documents also gets the invoice's DTE (type 33, or 34 when tax-exempt; CLP only) with the next folio of its CAFs, signed, in the same call; with no folio left the send is refused (`merchant_misconfigured`, `details.dte_type`) and the invoice stays a draft.",
    tag: 'Invoices',
    scope: 'invoices:send',
    params: s.invoiceIdParams,
    query: s.sendQuery,
    response: { status: 200, description: 'The invoice was sent', schema: s.sendResult },
    errors: ['invoice_not_found', 'invoice_invalid_state', 'invoice_already_paid', 'merchant_misconfigured'],
    example: { query: 'locale=es' },
    handler: async ({ params, query, auth, ctx, db }) => {
      const deps = invoiceDeps(ctx);
      const row = await transitions.sendInvoice(db, auth.merchant, params.invoice_id, query.locale, deps);
      return { status: 200, body: sentResponse(row, deps.urls) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/invoices/:invoice_id/remind',
    operationId: 'remindInvoice',
    summary: 'Send a payment reminder',
    description:
      'E-mails a reminder now and counts it in `reminders_sent`. Only for sent, viewed or overdue invoices. At most 3 per invoice in 24 hours: the next is 429 `rate_limited`, its `Retry-After` the seconds until the oldest of the three is 24 hours old (automated reminders do not count).',
    tag: 'Invoices',
    scope: 'invoices:send',
    params: s.invoiceIdParams,
    body: s.remindBody,
    response: { status: 200, description: 'The reminder', schema: s.reminderResource },
    errors: ['invoice_not_found', 'invoice_not_sent', 'invoice_already_paid', 'invoice_invalid_state'],
    example: { body: { custom_message: 'Le recordamos que su factura vence pronto.' } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 200,
      body: await transitions.remindInvoice(db, auth.merchant.id, params.invoice_id, body.custom_message ?? null, invoiceDeps(ctx)),
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
    params: s.invoiceIdParams,
    body: s.markPaidBody,
    response: { status: 200, description: 'The invoice is paid', schema: s.markPaidResult },
    errors: ['invoice_not_found', 'invoice_not_sent', 'invoice_already_paid', 'invoice_invalid_state', 'idempotency_conflict'],
    example: { body: { payment_method: 'transfer', payment_amount: 11900 } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 200,
      body: await transitions.markInvoicePaid(db, auth.merchant, params.invoice_id, body, invoiceDeps(ctx)),
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
    params: s.invoiceIdParams,
    body: s.cancelBody,
    response: { status: 200, description: 'The invoice was cancelled or deleted', schema: s.cancelResult },
    errors: ['invoice_not_found', 'invoice_already_paid', 'invoice_invalid_state', 'merchant_misconfigured'],
    example: { body: { reason: 'Duplicated order' } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 200,
      body: await transitions.cancelInvoice(db, auth.merchant.id, params.invoice_id, body.reason || null, invoiceDeps(ctx)),
    }),
  }),
];
