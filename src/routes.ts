import type { RouteDef } from './http/route.js';
import { checkoutRoutes } from './checkout/routes.js';
import { clientRoutes } from './clients/routes.js';
import { eventRoutes } from './webhooks/event-routes.js';
import { dteRoutes } from './invoices/dte-routes.js';
import { noteRoutes } from './invoices/note-routes.js';
import { invoiceRoutes } from './invoices/routes.js';
import { meRoutes } from './me/routes.js';
import { paymentRoutes } from './payments/routes.js';
import { pdfRoutes } from './pdf/routes.js';
import { webhookRoutes } from './webhooks/routes.js';

/** Every external API route; the docs are generated from this same list. */
export const apiRoutes: RouteDef[] = [...invoiceRoutes, ...noteRoutes, ...pdfRoutes, ...dteRoutes, ...clientRoutes, ...checkoutRoutes, ...meRoutes, ...paymentRoutes, ...webhookRoutes, ...eventRoutes];
