// What the reference says besides the routes themselves: the title, tag and error descriptions,
// and the guide (what the API is, keys, errors, idempotency, limits, paging, numbers), whose
// prose is templates/docs/guide.md.hbs, so that llms.txt (Markdown), the HTML page and the
// OpenAPI description all render the same words. Everything that lists routes or codes is
// derived here and filled into the template, never typed there.
import { configSchema } from '../config.js';
import { errorCatalogue, type ErrorCode } from '../errors.js';
import { errorDetails } from './error-details.js';
import type { RouteDef } from '../http/route.js';
import { scopes, type Scope } from '../http/scopes.js';
import { eventTypes, type EventType } from '../events/emit.js';
import { eventDataFields, eventSchemaName } from '../webhooks/event-schemas.js';
import { DEFAULT_RETRY_SCHEDULE, DELIVERIES_PER_ENDPOINT } from '../webhooks/delivery.js';
import { DELIVERY_TIMEOUT_MS, TEST_DELIVERY_TIMEOUT_MS } from '../webhooks/http-post.js';
import { RECOVER_MAX } from '../webhooks/recover.js';
import { deliveryErrorCategories } from '../webhooks/schemas.js';
import { MAX_ENDPOINTS_PER_MERCHANT, TEST_DELIVERIES_IN_FLIGHT } from '../webhooks/service.js';
import { mdCell, parseSections, type Block, type Section } from './markdown.js';
import { toSchema, type JsonSchema } from './schema.js';
import { compileDocs } from './templates.js';

function humanSeconds(n: number): string {
  if (n % 3600 === 0) return `${n / 3600} h`;
  if (n % 60 === 0) return `${n / 60} min`;
  return `${n} s`;
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
  'Credit and debit notes':
    "Correct an issued invoice as Chilean law does: credit notes (cancel, correct a text, return goods) and debit notes (cancel a credit note, add a charge), each with its own number and, when the invoice has a DTE, its own DTE (61, 56) at the SII.",
  Clients: 'The people and companies you invoice. Creating an invoice reuses the client with its e-mail or creates one.',
  Checkout: 'Hosted payment pages: a session creates and sends an invoice and takes the customer to pay it.',
  Account: 'What your key is: its account, scopes and rate-limit window, and whether the account can take payments.',
  Payments: 'Payments recorded against your invoices, by mark-paid or through checkout.',
  Webhooks: 'Endpoints that receive signed event notifications: register, list, update, delete, rotate the secret, send a test event, verify a signature.',
  Reference: 'This reference in three forms (HTML, OpenAPI, llms.txt); no key needed.',
};

/** What `details` holds for a code, in words, from its declaration in the catalogue. */
function detailsInWords(code: ErrorCode): string {
  const json = toSchema(errorDetails[code], 'output', {});
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
  credit_note_not_found: 'No credit note with this id for your account',
  debit_note_not_found: 'No debit note with this id for your account',
  currency_conversion_failed: 'No exchange rate for the issue date (or up to 7 days before) or the rate source failed; nothing was created',
  currency_not_supported: 'Currency outside CLP, CLF, USD, EUR, GBP, ARS, BRL, COP, MXN, PEN',
  idempotency_conflict: 'A request with the same Idempotency-Key is still running; retry after Retry-After seconds',
  insufficient_scope: 'The key lacks the scope of the route; `details.required_scope` names it',
  invalid_api_key: 'Unknown or revoked key',
  invalid_provider: 'The payment provider rejected the configuration',
  invalid_signature: "A payment provider's notification is not signed with the account's secret for it",
  invoice_already_paid: 'The invoice is paid; it cannot be sent, reminded, paid or cancelled again',
  invoice_invalid_state: 'The operation is not allowed in the invoice status (for example a cancelled invoice)',
  invoice_not_found: 'No invoice with this id for your account',
  dte_not_found: 'The invoice or note has no Chilean tax document (DTE): its merchant issues none, it is a draft, not in CLP or to a client without a Chilean RUT',
  invoice_not_sent: 'The invoice is still a draft: send it first',
  ip_not_allowed: "The request's address is outside the key's allow list",
  merchant_misconfigured: 'Your account lacks settings the operation needs: payment provider credentials, or (`details.dte_type`) folios (CAF) or a current certificate for that tax document',
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
  event_not_found: 'No event with this id for your account: never, or older than the retention (EVENT_RETENTION_DAYS)',
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

const guideTemplate = compileDocs('guide.md.hbs');

export function guide({ baseUrl, routes, publicPaths }: GuideInput): Section[] {
  const named = (list: RouteDef[]) => list.map((r) => `${r.method} ${displayPath(r.path)}`);
  const routesOf = (scope: Scope | null) => mdCell(named(routes.filter((r) => r.scope === scope)).join(', '));
  // The lists paged by offset: GET /events pages by `starting_after` (docs/decisions.md §18), said in its own paragraph.
  const lists = routes.filter((r) => r.method === 'GET' && r.query && 'offset' in ((r.query as { shape?: object }).shape ?? {}));
  const text = guideTemplate({
    summary: API_SUMMARY,
    base_url: baseUrl,
    public_paths: publicPaths,
    scopes: scopes.map((s) => ({ name: s, grants: mdCell(scopeGrants[s] ?? ''), all: s === '*', routes: routesOf(s) })),
    keyless_routes: routesOf(null),
    errors: (Object.keys(errorCatalogue) as ErrorCode[]).sort().map((code) => ({
      code,
      status: errorCatalogue[code].status,
      retry: errorCatalogue[code].retry,
      meaning: mdCell(errorMeanings[code] ?? ''),
      details: mdCell(detailsInWords(code)),
    })),
    idempotent: named(routes.filter((r) => r.idempotent)),
    lists: named(lists),
    max_endpoints: MAX_ENDPOINTS_PER_MERCHANT,
    test_deliveries_in_flight: TEST_DELIVERIES_IN_FLIGHT,
    test_delivery_timeout_s: TEST_DELIVERY_TIMEOUT_MS / 1000,
    delivery_timeout_s: DELIVERY_TIMEOUT_MS / 1000,
    retry_schedule: DEFAULT_RETRY_SCHEDULE.map(humanSeconds).join(', '),
    attempts: DEFAULT_RETRY_SCHEDULE.length + 1,
    deliveries_per_endpoint: DELIVERIES_PER_ENDPOINT,
    events: Object.entries(eventTypes).map(([type, description]) => ({
      type,
      description: mdCell(description),
      data: mdCell(
        eventDataFields(type as EventType)
          .map(([field, component]) => `\`${field}\`: ${component}`)
          .join(', '),
      ),
    })),
    paid_event_schema: eventSchemaName('invoice.paid'),
    delivery_errors: deliveryErrorCategories,
    event_retention_days: configSchema.shape.EVENT_RETENTION_DAYS.parse(undefined),
    recover_max: RECOVER_MAX,
  });
  return parseSections(text);
}

// ---- Renderers shared by llms.txt and the OpenAPI description -------------------------------

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
