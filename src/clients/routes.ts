import { defineRoute } from '../http/route.js';
import { listOf, page } from '../http/schemas.js';
import { apiBase } from '../http/urls.js';
import * as s from './schemas.js';
import * as service from './service.js';

export const clientRoutes = [
  defineRoute({
    method: 'POST',
    path: '/clients',
    operationId: 'createClient',
    summary: 'Create a client',
    description: 'E-mail is unique per merchant, compared ignoring case. A RUT-shaped tax id must have a valid check digit and is stored as 12345678-5.',
    tag: 'Clients',
    scope: 'clients:create',
    body: s.createClientBody,
    response: { status: 201, description: 'The client', schema: s.clientResource },
    errors: ['client_already_exists'],
    example: { body: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl', rut: '76.086.428-5' } },
    handler: async ({ body, auth, ctx, db }) => ({
      status: 201,
      body: await service.createClient(db, auth.merchant.id, body, { apiBase: apiBase(ctx), boss: ctx.boss }),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/clients',
    operationId: 'listClients',
    summary: 'List clients, ordered by name',
    tag: 'Clients',
    scope: 'clients:read',
    query: s.listClientsQuery,
    response: { status: 200, description: 'A page of clients', schema: listOf(s.clientResource) },
    errors: [],
    example: { query: 'limit=20' },
    handler: async ({ query, auth, ctx, db }) => ({
      status: 200,
      body: page(await service.listClients(db, auth.merchant.id, query.limit, query.offset, apiBase(ctx)), query.limit, query.offset),
    }),
  }),
  defineRoute({
    method: 'GET',
    path: '/clients/:client_id',
    operationId: 'getClient',
    summary: 'Get a client',
    tag: 'Clients',
    scope: 'clients:read',
    params: s.clientIdParams,
    response: { status: 200, description: 'The client', schema: s.clientResource },
    errors: ['client_not_found'],
    handler: async ({ params, auth, ctx, db }) => ({
      status: 200,
      body: await service.getClient(db, auth.merchant.id, params.client_id, apiBase(ctx)),
    }),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/clients/:client_id',
    operationId: 'updateClient',
    summary: 'Update a client (only the fields given change)',
    description: 'Issued invoices keep the client as it was when they were created. `null` clears rut, phone, address, giro, comuna or ciudad.',
    tag: 'Clients',
    scope: 'clients:create',
    params: s.clientIdParams,
    body: s.updateClientBody,
    response: { status: 200, description: 'The updated client', schema: s.clientResource },
    errors: ['client_not_found', 'client_already_exists'],
    example: { body: { phone: '+56 2 2345 6789' } },
    handler: async ({ params, body, auth, ctx, db }) => ({
      status: 200,
      body: await service.updateClient(db, auth.merchant.id, params.client_id, body, { apiBase: apiBase(ctx), boss: ctx.boss }),
    }),
  }),
];
