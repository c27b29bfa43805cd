import { defineRoute } from '../http/route.js';
import { listOf, page } from '../http/schemas.js';
import * as s from './schemas.js';
import * as service from './service.js';

export const paymentRoutes = [
  defineRoute({
    method: 'GET',
    path: '/payments',
    operationId: 'listPayments',
    summary: 'List payments, newest first',
    description:
      'Succeeded and failed payments of the merchant, ordered by created_at then id, newest first. ' +
      '`since` (inclusive) and `until` (exclusive) filter on created_at, the moment the payment was recorded: ' +
      'it is the sort key and is set on failed payments too, whereas paid_at is null for those ' +
      '(for a succeeded payment paid_at is the time it was recorded). Adjacent windows never overlap.',
    tag: 'Payments',
    scope: 'payments:read',
    query: s.listPaymentsQuery,
    response: { status: 200, description: 'A page of payments', schema: listOf(s.paymentResource) },
    errors: [],
    example: { query: 'limit=20&since=2026-11-01T00:00:00Z' },
    handler: async ({ query, auth, db }) => ({
      status: 200,
      body: page(
        await service.listPayments(db, auth.merchant.id, { invoice_id: query.invoice_id, since: query.since, until: query.until }, query.limit, query.offset),
        query.limit,
        query.offset,
      ),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/payments/:payment_id',
    operationId: 'getPayment',
    summary: 'Get a payment',
    tag: 'Payments',
    scope: 'payments:read',
    params: s.paymentIdParams,
    response: { status: 200, description: 'The payment', schema: s.paymentResource },
    errors: ['payment_not_found'],
    handler: async ({ params, auth, db }) => ({
      status: 200,
      body: await service.getPaymentResource(db, auth.merchant.id, params.payment_id),
    }),
  }),
];
