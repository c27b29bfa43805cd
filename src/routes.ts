import type { RouteDef } from './http/route.js';
import { clientRoutes } from './clients/routes.js';
import { invoiceRoutes } from './invoices/routes.js';

/** Every external API route; the docs are generated from this same list. */
export const apiRoutes: RouteDef[] = [...invoiceRoutes, ...clientRoutes];
