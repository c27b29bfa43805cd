// The console's one way to the server: the admin router through tRPC, with the token of the tab.
import { createTRPCClient, httpLink } from '@trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '../src/admin/router.js';

export type Outputs = inferRouterOutputs<AppRouter>;
type ListFilters = inferRouterInputs<AppRouter>['deliveries']['list'];
export type Delivery = Outputs['deliveries']['list']['data'][number];
export type DeliveryDetail = Outputs['deliveries']['get'];
export type Endpoint = Outputs['endpoints']['enable'];
export type DeliveryStatuses = Extract<ListFilters['status'], readonly unknown[]>;
export type EventType = ListFilters['event_type'];
export type TaxDocument = Outputs['dte']['documents'][number];

// sessionStorage: the token lives as long as the tab, and no other tab or later visit sees it.
export const TOKEN_KEY = 'invoicing-admin-token';

export const client = createTRPCClient<AppRouter>({
  links: [
    httpLink({
      url: `${location.origin}/admin/trpc`,
      headers: (): Record<string, string> => {
        const token = sessionStorage.getItem(TOKEN_KEY);
        return token ? { Authorization: `Bearer ${token}` } : {};
      },
    }),
  ],
});
