import { z } from 'zod';
import { AppError } from '../errors.js';
import { defineRoute } from '../http/route.js';
import { listOf, page } from '../http/schemas.js';
import { apiBase } from '../http/urls.js';
import { parseOrThrow } from '../http/validation.js';
import type { AppContext } from '../context.js';
import type { Tx } from '../db/client.js';
import * as s from './schemas.js';
import * as service from './service.js';

export function invoiceDeps(ctx: AppContext): service.InvoiceDeps {
  return { urls: { apiBase: apiBase(ctx), publicBase: ctx.config.publicBaseUrl }, boss: ctx.boss, secrets: ctx.secrets };
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
    prepare: ({ body, auth, ctx }) => service.prepareRates(ctx.sql, auth.merchant, [body], ctx.config.EXCHANGE_RATES_URL),
    handler: async ({ body, auth, ctx, db }) => {
      const deps = invoiceDeps(ctx);
      const row = await service.createInvoice(db, auth.merchant, body, deps);
      return { status: 201, body: service.createdResponse(row, deps.urls) };
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
    prepare: ({ body, auth, ctx }) => service.prepareRates(ctx.sql, auth.merchant, validItems(body.invoices), ctx.config.EXCHANGE_RATES_URL),
    handler: async ({ body, auth, ctx, db }) => {
      const deps = invoiceDeps(ctx);
      // Non-GET handlers always run inside the request's transaction.
      const tx = db as Tx;
      const results: z.infer<typeof s.bulkResult>['results'] = [];
      for (const [index, raw] of body.invoices.entries()) {
        try {
          // A savepoint per item: one failure rolls back only that item.
          const row = await tx.savepoint(async (sp) =>
            service.createInvoice(sp, auth.merchant, parseOrThrow(s.createInvoiceBody, raw), deps),
          );
          results.push({ index, success: true, invoice: service.createdResponse(row, deps.urls) });
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
      const rows = await service.listInvoices(db, auth.merchant.id, filters, limit, offset, invoiceDeps(ctx).urls);
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
      body: await service.getInvoice(db, auth.merchant.id, params.invoice_id, invoiceDeps(ctx).urls),
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
      body: await service.getInvoiceStatus(db, auth.merchant.id, params.invoice_id, invoiceDeps(ctx).urls),
    }),
  }),
];
