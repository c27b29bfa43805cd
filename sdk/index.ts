// The official TypeScript client: openapi-fetch calls typed by schema.ts, which openapi-typescript
// generates from the API's own OpenAPI document, so a call the API would refuse for its shape does
// not compile.
import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, paths } from './schema.js';

export type { components, operations, paths, webhooks } from './schema.js';
export * from './webhooks.js';

/** A schema of the document by name: `Schema<'Invoice'>`. */
export type Schema<Name extends keyof components['schemas']> = components['schemas'][Name];

export type InvoicingClient = Client<paths>;

export interface InvoicingClientOptions {
  /** The server's root, e.g. `https://facturas.example.cl`: the typed paths carry `/api/v1/external`. */
  baseUrl: string;
  /** The API key, sent as X-API-Key. */
  apiKey: string;
  /** Another fetch (a proxy agent, a test double); the global one by default. */
  fetch?: ClientOptions['fetch'];
}

const VERSION_PREFIX = '/api/v1/external';

export function createInvoicingClient({ baseUrl, apiKey, fetch }: InvoicingClientOptions): InvoicingClient {
  // The reference's {base_url} ends with the prefix, so it is an easy value to pass here; every
  // call would then be a 404 route_not_found.
  if (baseUrl.replace(/\/+$/, '').endsWith(VERSION_PREFIX)) {
    throw new Error(`baseUrl is the server's root, without ${VERSION_PREFIX} (the paths carry it): ${baseUrl}`);
  }
  return createClient<paths>({ baseUrl, headers: { 'X-API-Key': apiKey }, ...(fetch ? { fetch } : {}) });
}
