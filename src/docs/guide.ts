// The fixed prose of the reference (what the API is, keys, errors, idempotency, limits, paging,
// numbers), as data so that llms.txt (Markdown), the HTML page and the OpenAPI description all
// render the same words. Everything that lists routes or codes is derived, never typed here.
import { errorCatalogue, type ErrorCode } from '../errors.js';
import type { RouteDef } from '../http/route.js';
import { scopes, type Scope } from '../http/scopes.js';
import { eventTypes, type EventType } from '../events/emit.js';
import { eventDataFields, eventSchemaName } from '../events/schemas.js';
import { DEFAULT_RETRY_SCHEDULE, DELIVERIES_PER_ENDPOINT } from '../webhooks/delivery.js';
import { DELIVERY_TIMEOUT_MS, TEST_DELIVERY_TIMEOUT_MS } from '../webhooks/http-post.js';
import { deliveryErrorCategories } from '../webhooks/schemas.js';
import { MAX_ENDPOINTS_PER_MERCHANT, TEST_DELIVERIES_IN_FLIGHT } from '../webhooks/service.js';
import { toSchema, type JsonSchema } from './schema.js';

function humanSeconds(n: number): string {
  if (n % 3600 === 0) return `${n / 3600} h`;
  if (n % 60 === 0) return `${n / 60} min`;
  return `${n} s`;
}

export type Block =
  | { p: string }
  | { ul: string[] }
  /** `anchor`: the HTML page gives each row an id `{anchor}-{first cell}` to link to. */
  | { table: { head: string[]; rows: string[][]; anchor?: string } }
  | { code: string };

export interface Section {
  id: string;
  title: string;
  blocks: Block[];
}

export const API_TITLE = 'Invoicing External API';
export const API_SUMMARY =
  'Create clients and invoices (singly or in bulk), send them, remind, record payments made elsewhere, cancel, open hosted checkout sessions and receive signed webhooks.';

const scopeGrants: Partial<Record<Scope, string>> = {
  'invoices:create': 'Create invoices (single and bulk)',
  'invoices:read': 'Read and list invoices, read their status',
  'invoices:send': 'Send invoices and manual reminders',
  'invoices:write': 'Cancel invoices',
  'payments:write': 'Mark invoices as paid',
  'payments:read': 'Read and list payments',
  'clients:create': 'Create and update clients',
  'clients:read': 'Read and list clients',
  'webhooks:manage': 'All webhook endpoint operations',
  'checkout:create': 'Create checkout sessions and read their status',
  '*': 'Full access: every scope',
};

/** What each tag of the reference groups, in its `tags` (every tag has one). */
export const tagDescriptions: Record<string, string> = {
  Invoices: 'Create invoices (one at a time or up to 50 in a call), read and list them, send them, remind, record payments made elsewhere, cancel, and get the PDF.',
  Clients: 'The people and companies you invoice. Creating an invoice reuses the client with its e-mail or creates one.',
  Checkout: 'Hosted payment pages: a session creates and sends an invoice and takes the customer to pay it.',
  Account: 'What your key is: its account, scopes and rate-limit window, and whether the account can take payments.',
  Payments: 'Payments recorded against your invoices, by mark-paid or through checkout.',
  Webhooks: 'Endpoints that receive signed event notifications: register, list, update, delete, rotate the secret, send a test event, verify a signature.',
  Reference: 'This reference in three forms (HTML, OpenAPI, llms.txt); no key needed.',
};

/** What `details` holds for a code, in words, from its declaration in the catalogue. */
function detailsInWords(code: ErrorCode): string {
  const json = toSchema(errorCatalogue[code].details, 'output', {});
  const props = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = (json.required ?? []) as string[];
  const fields = Object.entries(props).map(([name, p]) => {
    const value = p.const !== undefined ? ` = ${JSON.stringify(p.const)}` : '';
    return `\`${name}\`${value}${required.includes(name) ? '' : ' (optional)'}: ${String(p.description ?? '')}`;
  });
  return fields.length ? fields.join('; ') : 'null';
}

/** When each code is answered. A code missing here still appears in the catalogue. */
export const errorMeanings: Partial<Record<ErrorCode, string>> = {
  checkout_not_found: 'No checkout session with this id for your account',
  client_already_exists: 'Another client of yours already has this e-mail (compared ignoring case)',
  client_not_found: 'No client with this id for your account',
  currency_conversion_failed: 'No exchange rate for the issue date (or up to 7 days before) or the rate source failed; nothing was created',
  currency_not_supported: 'Currency outside CLP, CLF, USD, EUR, GBP, ARS, BRL, COP, MXN, PEN',
  idempotency_conflict: 'A request with the same Idempotency-Key is still running; retry after Retry-After seconds',
  insufficient_scope: 'The key lacks the scope of the route; `details.required_scope` names it',
  invalid_api_key: 'Unknown or revoked key',
  invalid_provider: 'The payment provider rejected the configuration',
  invoice_already_paid: 'The invoice is paid; it cannot be sent, reminded, paid or cancelled again',
  invoice_invalid_state: 'The operation is not allowed in the invoice status (for example a cancelled invoice)',
  invoice_not_found: 'No invoice with this id for your account',
  invoice_not_sent: 'The invoice is still a draft: send it first',
  ip_not_allowed: "The request's address is outside the key's allow list",
  merchant_misconfigured: 'Your account lacks settings the operation needs',
  missing_api_key: 'No X-API-Key header',
  provider_credentials_missing: 'The payment provider has no credentials configured',
  provider_not_configured: 'Your account has no payment provider; checkout is unavailable',
  provider_session_expired: 'The payment provider session expired; start again',
  provider_unavailable: 'The payment provider is unreachable',
  rate_limited: 'Too many requests in this minute; wait Retry-After seconds',
  validation_error:
    'The request is invalid: 400 for malformed JSON or a malformed path id (non-webhook routes), 415 for a body that is not application/json, 422 otherwise; `details.errors` names every bad field',
  webhook_endpoint_invalid: `The webhook URL is not an allowed https:// address (a private or unresolvable host, a port other than 443 and 8443), is already registered, or the account has its ${MAX_ENDPOINTS_PER_MERCHANT} endpoints`,
  webhook_endpoint_not_found: 'No webhook endpoint with this id for your account',
  webhook_delivery_not_found: 'Admin: no webhook delivery with this id',
  event_not_found: 'Admin: no event with this id',
  payment_not_found: 'No payment with this id for your account',
  route_not_found: 'No such route (check the method and the path)',
  payload_too_large: 'The body is larger than 1 MiB',
  request_timeout: 'The request (headers and body) did not arrive within 30 s; the connection is closed',
  service_unavailable: 'The service is temporarily unavailable (database unreachable or restarting)',
  internal_error: 'Unexpected failure; it has been logged and leaks no detail',
};

/** `/invoices/:invoice_id` → `/invoices/{invoice_id}` (relative to the base URL). */
export function displayPath(path: string): string {
  return path.replace(/:([A-Za-z_]+)/g, '{$1}');
}

export interface GuideInput {
  baseUrl: string;
  routes: RouteDef[];
  /** Relative paths of the routes that need no key. */
  publicPaths: string[];
}

export function guide({ baseUrl, routes, publicPaths }: GuideInput): Section[] {
  const routesOf = (scope: Scope | null) =>
    routes
      .filter((r) => r.scope === scope)
      .map((r) => `${r.method} ${displayPath(r.path)}`)
      .join(', ');
  const scopeRows = scopes.map((s) => [`\`${s}\``, scopeGrants[s] ?? '', s === '*' ? 'every route' : routesOf(s) || '(none yet)']);
  if (routes.some((r) => r.scope === null)) scopeRows.push(['(none)', 'Any valid key', routesOf(null)]);
  const idempotent = routes.filter((r) => r.idempotent).map((r) => `${r.method} ${displayPath(r.path)}`);
  const lists = routes.filter((r) => r.method === 'GET' && r.query && 'limit' in ((r.query as { shape?: object }).shape ?? {}));

  return [
    {
      id: 'overview',
      title: 'Overview',
      blocks: [
        { p: `${API_SUMMARY} An ERP or online shop talks to it over HTTPS with JSON request and response bodies.` },
        {
          ul: [
            `Base URL: \`${baseUrl}\`. Every path in this reference is relative to it; the version (v1) is part of the address.`,
            `Machine-readable references (no key needed): \`${baseUrl}/docs/openapi.json\` (OpenAPI 3.1), \`${baseUrl}/docs/llms.txt\` (this text), and a human page at \`${baseUrl}/docs\`.`,
            'Every response carries `X-Request-Id`; quote it when you contact support.',
            'Order of checks on a request: key (401) → address (403) → rate limit and requests in flight (429) → scope (403) → path id (400/422) → body and query (415/422) → existence (404) → state (409).',
          ],
        },
      ],
    },
    {
      id: 'authentication',
      title: 'Authentication',
      blocks: [
        {
          p: `Send your key in the \`X-API-Key\` header on every request (only ${publicPaths.map((p) => `\`${p}\``).join(', ')} need none). Keys are created by support staff (admin console or the CLI) and shown once, when created: store the key safely, it cannot be shown again, and there is no API to create one. Keys look like \`ik_live_\` followed by 32 characters.`,
        },
        {
          ul: [
            'No header: 401 `missing_api_key`. Unknown or revoked key: 401 `invalid_api_key`.',
            "A key may be limited to a list of addresses: another address gets 403 `ip_not_allowed`. Behind our proxies the address judged is the one our edge saw, never an `X-Forwarded-For` entry the client wrote.",
            'Each key has a fixed set of scopes; a route outside them answers 403 `insufficient_scope` with `details.required_scope`.',
          ],
        },
        { code: `curl -sS "${baseUrl}/invoices?limit=1" -H "X-API-Key: $API_KEY"` },
      ],
    },
    {
      id: 'scopes',
      title: 'Scopes',
      blocks: [{ table: { head: ['Scope', 'Grants', 'Routes'], rows: scopeRows } }],
    },
    {
      id: 'errors',
      title: 'Errors',
      blocks: [
        { p: 'Every error, from any layer, has one JSON shape (the error envelope):' },
        {
          table: {
            head: ['Field', 'Type', 'Meaning'],
            rows: [
              ['`code`', 'string', 'Stable identifier: branch on it, never on `message`'],
              ['`message`', 'string', 'Human-readable prose; may be reworded'],
              ['`retry`', 'string', '`never`, `safe` or `after_seconds:N` (see below)'],
              ['`details`', 'object or null', 'Facts for a program, as the code declares them (the Details column below): `errors: [{ path, message }]` for `validation_error`, `required_scope` for `insufficient_scope`, the invoice `status` of a 409, …; null for a code that has none'],
              ['`request_id`', 'string', 'Equals the `X-Request-Id` response header'],
              ['`path`', 'string', 'Request path without the query string'],
              ['`timestamp`', 'string', 'RFC 3339 UTC'],
            ],
          },
        },
        {
          code: JSON.stringify(
            {
              code: 'validation_error',
              message: 'Invalid items[0].unit_price: must be a number',
              retry: 'never',
              details: { errors: [{ path: 'items[0].unit_price', message: 'must be a number' }] },
              request_id: '6f1c2d9e-1b7a-4c1e-9a59-0c3f8e2b7d41',
              path: '/api/v1/external/invoices',
              timestamp: '2026-11-22T03:16:13.123Z',
            },
            null,
            2,
          ),
        },
        {
          ul: [
            '`retry: never`: permanent; fix the request before sending it again.',
            '`retry: safe`: transient; retry the same request with exponential backoff.',
            '`retry: after_seconds:N`: wait at least N seconds (the `Retry-After` header says the same) and retry.',
            '`details.errors[].path` names each bad field in dot and bracket form (`items[0].unit_price`, `client.email`), missing fields included. Unknown body fields are rejected, so a typo never silently drops data.',
          ],
        },
        { p: 'Error catalogue (the HTTP status is the usual one; `validation_error` can also be 400 or 415 as described):' },
        {
          table: {
            head: ['Code', 'HTTP', 'Retry', 'When', 'Details'],
            anchor: 'error',
            rows: (Object.keys(errorCatalogue) as ErrorCode[])
              .sort()
              .map((code) => [`\`${code}\``, String(errorCatalogue[code].status), `\`${errorCatalogue[code].retry}\``, errorMeanings[code] ?? '', detailsInWords(code)]),
          },
        },
      ],
    },
    {
      id: 'idempotency',
      title: 'Idempotency',
      blocks: [
        {
          p: `Send an \`Idempotency-Key\` header (1 to 255 characters, for example a UUID) on ${idempotent.map((r) => `\`${r}\``).join(', ') || 'the create routes'} so that a retry after a timeout never does the work twice. Without the key, a retried create makes a second invoice.`,
        },
        {
          ul: [
            'The first request claims the key (per account, route and key). A repeat within 24 hours replays the original status and body byte for byte, with the header `Idempotent-Replayed: true`.',
            'A repeat while the first request is still running: 409 `idempotency_conflict` with `Retry-After: 5`.',
            'The same key with a different body: 422 `validation_error`.',
            'Answers 2xx, 404 and 409 are stored and replayed; 401, 403, 415, 422, 429 and 5xx are not, so the key stays free for a corrected retry.',
          ],
        },
      ],
    },
    {
      id: 'rate-limits',
      title: 'Rate limits',
      blocks: [
        {
          p: 'Requests are counted per key in fixed one-minute windows (default 600 per minute, settable per key); requests without a valid key are counted per client address. API responses carry:',
        },
        {
          ul: [
            '`X-RateLimit-Limit`: requests allowed per minute.',
            '`X-RateLimit-Remaining`: requests left in the current window.',
            '`X-RateLimit-Reset`: Unix seconds when the window ends.',
            'Over the limit: 429 `rate_limited`, `Retry-After: N` and `retry: after_seconds:N` with N the seconds left in the window (at most 60).',
          ],
        },
        { p: 'Other limits:' },
        {
          ul: [
            'At most 10 requests of one key in flight at once: one more is 429 `rate_limited` with `Retry-After: 1`. Spread bulk work over time, or use `POST /invoices/bulk` (50 invoices a call).',
            'A request body must arrive within 30 s: a slower one is answered 408 `request_timeout` and its connection closed. Bodies are at most 1 MiB (413 `payload_too_large`).',
            `Webhooks: at most ${MAX_ENDPOINTS_PER_MERCHANT} endpoints per account, each URL once, on ports 443 and 8443 only; at most ${TEST_DELIVERIES_IN_FLIGHT} test deliveries (\`POST /webhooks/endpoints/{endpoint_id}/test\`) in flight at once, each given ${TEST_DELIVERY_TIMEOUT_MS / 1000} s to answer (real deliveries: ${DELIVERY_TIMEOUT_MS / 1000} s).`,
            'The hosted invoice and checkout pages are limited to 120 requests a minute per client address.',
            'Every API answer carries `Cache-Control: no-store`: answers hold account data, and some (an endpoint\'s creation and secret rotation) a secret.',
          ],
        },
      ],
    },
    {
      id: 'paging',
      title: 'Paging',
      blocks: [
        {
          p: `List routes${lists.length ? ` (${lists.map((r) => `\`${r.method} ${displayPath(r.path)}\``).join(', ')})` : ''} answer \`{ "data": [...], "limit": n, "offset": m, "has_more": bool }\`. \`limit\` is 1 to 100 (default 50), \`offset\` starts at 0 (default 0). There is no total count. To walk a list, advance \`offset\` by \`limit\` until \`has_more\` is false; a client that ignores \`has_more\` can use the limit+1 pattern instead (ask for one item more than it shows, and treat a page shorter than that as the end). Out-of-range values are a 422.`,
        },
        { code: `curl -sS "${baseUrl}/invoices?limit=100&offset=100" -H "X-API-Key: $API_KEY"` },
      ],
    },
    {
      id: 'webhooks',
      title: 'Webhooks',
      blocks: [
        {
          p: `Register an https:// endpoint with \`POST /webhooks/endpoints\` (its signing secret, \`whsec_…\`, is shown only then and at rotation). Every change announces an event; each endpoint whose \`events\` list includes its type (an empty list means all) gets one delivery, retried after ${DEFAULT_RETRY_SCHEDULE.map(humanSeconds).join(', ')} (±10 %, ${DEFAULT_RETRY_SCHEDULE.length + 1} attempts) until it answers 2xx within ${DELIVERY_TIMEOUT_MS / 1000} s. Redirects are not followed; a 410 disables the endpoint; a \`Retry-After\` on 429 or 503 is honoured. An endpoint failing continuously (20 attempts over at least 24 hours) is disabled and you are e-mailed; \`PATCH\` it with \`enabled: true\` to resume. Sandbox endpoints (\`is_sandbox\`) get deliveries marked \`is_test\` that never disable them. An endpoint receives at most ${DELIVERIES_PER_ENDPOINT} deliveries at once from each of our worker processes, over kept-alive connections; deliveries are concurrent, so order events by \`created_at\`, not by arrival.`,
        },
        {
          table: {
            head: ['Event type', 'Sent when', '`data`'],
            rows: Object.entries(eventTypes).map(([type, description]) => [
              '`' + type + '`',
              description,
              eventDataFields(type as EventType)
                .map(([field, component]) => `\`${field}\`: ${component}`)
                .join(', '),
            ]),
          },
        },
        {
          p: `The body is \`{ "id", "type", "created_at", "api_version": "v1", "is_test", "data": { "object": … } }\`, where \`object\` is the resource as its GET returns it (the table names each type's \`data\`; the OpenAPI document's \`webhooks\` has each type's body and headers, the bodies as components such as \`${eventSchemaName('invoice.paid')}\`; a test event has the shape of a real one). Headers: \`X-Webhook-Id\` (the event id: de-duplicate on it, a delivery may arrive more than once), \`X-Webhook-Event\` (the type) and \`X-Webhook-Signature: t=<unix seconds>,v1=<hex>\`, where the hex is HMAC-SHA256 keyed with the whole secret over \`<t>.<raw body>\`: the scheme of Stripe, so \`stripe.webhooks.constructEvent(rawBody, header, secret)\` verifies it. Check it yourself like this, and reject timestamps more than 5 minutes old:`,
        },
        {
          code: `const [t, v1] = header.split(',').map((p) => p.split('=')[1]);
const expected = crypto.createHmac('sha256', secret).update(\`\${t}.\${rawBody}\`).digest('hex');
const valid = crypto.timingSafeEqual(Buffer.from(v1, 'hex'), Buffer.from(expected, 'hex'))
  && Math.abs(Date.now() / 1000 - Number(t)) < 300;`,
        },
        {
          p: `\`POST /webhooks/endpoints/{endpoint_id}/test\` delivers a sample event at once (the receiver has ${TEST_DELIVERY_TIMEOUT_MS / 1000} s to answer) and answers the delivery; a third test of your account while ${TEST_DELIVERIES_IN_FLIGHT} are in flight is 429 \`rate_limited\` with \`Retry-After: 1\`. \`POST /webhooks/verify-signature\` tells why a signature does not verify.`,
        },
        {
          p: `A delivery's \`last_error\` says why its last attempt failed, as one of: ${deliveryErrorCategories.map((c) => `\`${c}\``).join(', ')} (\`http_error\`: any answer that is neither 2xx nor a redirect, 410 included); it is null after a success. Support staff see the full detail of every attempt.`,
        },
      ],
    },
    {
      id: 'conventions',
      title: 'Amounts, dates and identifiers',
      blocks: [
        {
          ul: [
            'Amounts in responses are decimal strings, never floats: two decimals (`"11900.00"`), four for CLF (`"3.5000"`); a CLP amount is whole pesos. `quantity` prints as a plain decimal (`"1.5"`), `tax_rate` with two decimals (`"19.00"`).',
            'Amounts in requests (`unit_price`, `amount`, `payment_amount`, `tax_rate`, `quantity`) are JSON numbers; a string where a number is expected is a 422.',
            'Money is rounded half-up at the currency precision (CLP 0, CLF 4, others 2).',
            'Dates are `YYYY-MM-DD`; timestamps are RFC 3339 UTC with milliseconds (`2026-11-22T03:16:13.123Z`).',
            'Identifiers are UUIDs; a malformed one in a path is a `validation_error` (400 on invoice, client, checkout and payment routes, 422 on webhook routes).',
            'Request bodies are JSON (`Content-Type: application/json`, at most 1 MiB).',
          ],
        },
      ],
    },
  ];
}

// ---- Renderers shared by llms.txt and the OpenAPI description -------------------------------

function mdCell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

export function blocksToMarkdown(blocks: Block[]): string {
  const out: string[] = [];
  for (const b of blocks) {
    if ('p' in b) out.push(b.p);
    else if ('ul' in b) out.push(b.ul.map((li) => `- ${li}`).join('\n'));
    else if ('code' in b) out.push(`\`\`\`\n${b.code}\n\`\`\``);
    else {
      const { head, rows } = b.table;
      out.push(
        [`| ${head.map(mdCell).join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(mdCell).join(' | ')} |`)].join('\n'),
      );
    }
  }
  return out.join('\n\n');
}

export function sectionsToMarkdown(sections: Section[], level = 2): string {
  const h = '#'.repeat(level);
  return sections.map((s) => `${h} ${s.title}\n\n${blocksToMarkdown(s.blocks)}`).join('\n\n');
}
