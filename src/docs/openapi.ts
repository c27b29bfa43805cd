import { errorCatalogue, type ErrorCode } from '../errors.js';
import type { RouteDef } from '../http/route.js';
import { API_PREFIX } from '../http/urls.js';
import { API_SUMMARY, API_TITLE, errorMeanings, guide, sectionsToMarkdown } from './guide.js';
import { curlExample } from './examples.js';
import { componentResolver, deref, toSchema, type JsonSchema } from './schema.js';

export type { JsonSchema };

/**
 * A route served under the API prefix that needs no key and is not a RouteDef (the reference
 * itself). It is documented with `security: []`.
 */
/** One entry of an operation's `parameters`, as the document writes it. */
export interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  description?: string;
  schema?: JsonSchema;
}

export interface PublicRoute {
  method: 'GET';
  path: string;
  operationId: string;
  summary: string;
  description: string;
  tag: string;
  contentType: string;
}

/** `/invoices/:invoice_id` → `/api/v1/external/invoices/{invoice_id}` */
export function openApiPath(path: string): string {
  return API_PREFIX + path.replace(/:([A-Za-z_]+)/g, '{$1}');
}

// Every route can answer these, whatever it does.
const COMMON_ERRORS: ErrorCode[] = ['missing_api_key', 'invalid_api_key', 'ip_not_allowed', 'rate_limited', 'validation_error', 'internal_error', 'service_unavailable'];

export function errorCodesFor(def: RouteDef): ErrorCode[] {
  const codes = new Set<ErrorCode>([...COMMON_ERRORS, ...def.errors]);
  if (def.scope) codes.add('insufficient_scope');
  if (def.body || def.method !== 'GET') {
    codes.add('payload_too_large');
    codes.add('request_timeout');
  }
  return [...codes];
}

/**
 * HTTP status → error codes a route can answer, in status order. `validation_error` is 422 for
 * bad fields, 415 for a body that is not JSON, and 400 for malformed JSON or a malformed path id
 * (unless the route answers 422 for that).
 */
export function errorsByStatus(def: RouteDef): [number, ErrorCode[]][] {
  const byStatus = new Map<number, ErrorCode[]>();
  const add = (status: number, code: ErrorCode) => byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  for (const code of errorCodesFor(def)) {
    if (code !== 'validation_error') {
      add(errorCatalogue[code].status, code);
      continue;
    }
    add(422, code);
    if (def.body) add(415, code);
    if (def.body || (def.params && (def.malformedIdStatus ?? 400) === 400)) add(400, code);
  }
  return [...byStatus.entries()].sort(([a], [b]) => a - b);
}

function parameters(def: RouteDef, components: Record<string, JsonSchema>): Parameter[] {
  const out: Parameter[] = [];
  for (const [where, schema] of [
    ['path', def.params],
    ['query', def.query],
  ] as const) {
    if (!schema) continue;
    const json = deref(toSchema(schema, 'input', components), componentResolver(components)) as {
      properties?: Record<string, JsonSchema>;
      required?: string[];
    };
    for (const [name, prop] of Object.entries(json.properties ?? {})) {
      const { description, ...propSchema } = prop;
      out.push({
        name,
        in: where,
        required: where === 'path' || (json.required ?? []).includes(name),
        ...(typeof description === 'string' ? { description } : {}),
        schema: propSchema,
      });
    }
  }
  if (def.idempotent) {
    out.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Replays the first answer for 24 hours (header Idempotent-Replayed: true) instead of repeating the work. 1 to 255 characters; a UUID is a good choice.',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    });
  }
  return out;
}

const header = (description: string, type = 'integer') => ({ description, schema: { type } });

/** Shared response headers, in `components.headers`. */
const headerComponents = {
  'X-RateLimit-Limit': header('Requests allowed per minute for this key'),
  'X-RateLimit-Remaining': header('Requests left in the current window'),
  'X-RateLimit-Reset': header('Unix seconds when the window ends'),
  'X-Request-Id': header('Identifier of this request; equals request_id of an error envelope', 'string'),
  'Retry-After': header('Seconds to wait before retrying'),
  'Idempotent-Replayed': header('`true` when this answer is the replay of an earlier request with the same Idempotency-Key', 'string'),
};
const headerRef = (name: keyof typeof headerComponents) => ({ $ref: `#/components/headers/${name}` });
const rateLimitHeaders = {
  'X-RateLimit-Limit': headerRef('X-RateLimit-Limit'),
  'X-RateLimit-Remaining': headerRef('X-RateLimit-Remaining'),
  'X-RateLimit-Reset': headerRef('X-RateLimit-Reset'),
  'X-Request-Id': headerRef('X-Request-Id'),
};

/** Name in `components.examples` of the example envelope of a code at a status. */
function errorExampleName(code: ErrorCode, status: number): string {
  return status === errorCatalogue[code].status ? code : `${code}_${status}`;
}

function errorExample(code: ErrorCode, status: number, path: string): unknown {
  return {
    code,
    message: errorMeanings[code] ?? code,
    retry: errorCatalogue[code].retry,
    details:
      code === 'validation_error'
        ? { errors: [{ path: status === 400 ? 'body' : 'field', message: status === 415 ? 'Content-Type must be application/json' : 'is required' }] }
        : code === 'insufficient_scope'
          ? { required_scope: 'invoices:read' }
          : null,
    request_id: '6f1c2d9e-1b7a-4c1e-9a59-0c3f8e2b7d41',
    path,
    timestamp: '2026-11-22T03:16:13.123Z',
  };
}

function operation(def: RouteDef, components: Record<string, JsonSchema>, examples: Record<string, unknown>, publicBaseUrl: string): JsonSchema {
  const paramsJson = def.params ? toSchema(def.params, 'input', components) : undefined;
  const bodyJson = def.body ? toSchema(def.body, 'input', components) : undefined;
  const successHeaders: Record<string, unknown> = { ...rateLimitHeaders };
  if (def.idempotent) successHeaders['Idempotent-Replayed'] = headerRef('Idempotent-Replayed');
  const mediaType = (def.response.contentType ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  let content: Record<string, unknown> | undefined;
  if (mediaType !== 'application/json') content = { [mediaType]: { schema: { type: 'string', format: 'binary' } } };
  else if (def.response.schema) content = { [mediaType]: { schema: toSchema(def.response.schema, 'output', components) } };
  const responses: Record<string, unknown> = {
    [def.response.status]: {
      description: def.response.description,
      headers: successHeaders,
      ...(content ? { content } : {}),
    },
  };
  for (const [status, codes] of errorsByStatus(def)) {
    const retryAfter = codes.some((c) => /^after_seconds:/.test(errorCatalogue[c].retry));
    responses[status] = {
      description: `Error: ${codes.join(', ')}`,
      headers: { ...rateLimitHeaders, ...(retryAfter ? { 'Retry-After': headerRef('Retry-After') } : {}) },
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/Error' },
          examples: Object.fromEntries(
            codes.map((c) => {
              const name = errorExampleName(c, status);
              examples[name] ??= { summary: errorMeanings[c] ?? c, value: errorExample(c, status, API_PREFIX + '/invoices') };
              return [c, { $ref: `#/components/examples/${name}` }];
            }),
          ),
        },
      },
    };
  }
  const description = [def.description, def.scope ? `Scope: \`${def.scope}\`.` : 'Any valid key (no scope needed).'].filter(Boolean).join('\n\n');
  const exampleParams = def.example?.params;
  return {
    operationId: def.operationId,
    summary: def.summary,
    description,
    tags: [def.tag],
    'x-required-scope': def.scope,
    parameters: parameters(def, components).map((p) => {
      const param = p as { name: string; in: string };
      const example = param.in === 'path' ? exampleParams?.[param.name] : undefined;
      return example === undefined ? p : { ...param, example };
    }),
    ...(def.body
      ? {
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: bodyJson,
                ...(def.example?.body !== undefined ? { example: def.example.body } : {}),
              },
            },
          },
        }
      : {}),
    responses,
    'x-codeSamples': [{ lang: 'Shell', label: 'curl', source: curlExample(def, publicBaseUrl, { params: paramsJson, body: bodyJson }, components) }],
  };
}

function publicOperation(r: PublicRoute, publicBaseUrl: string): JsonSchema {
  return {
    operationId: r.operationId,
    summary: r.summary,
    description: `${r.description}\n\nNo key needed.`,
    tags: [r.tag],
    security: [],
    parameters: [],
    responses: {
      200: {
        description: r.summary,
        content: { [r.contentType.split(';')[0]!.trim()]: { schema: r.contentType.startsWith('application/json') ? { type: 'object' } : { type: 'string' } } },
      },
    },
    'x-codeSamples': [{ lang: 'Shell', label: 'curl', source: `curl -sS "${publicBaseUrl}${openApiPath(r.path)}"` }],
  };
}

export const errorSchema = {
  type: 'object',
  required: ['code', 'message', 'retry', 'details', 'request_id', 'path', 'timestamp'],
  properties: {
    code: { type: 'string', enum: Object.keys(errorCatalogue), description: 'Stable identifier: branch on it, not on message' },
    message: { type: 'string', description: 'Prose; may be reworded' },
    retry: { type: 'string', description: 'never (fix the request), safe (retry with backoff), or after_seconds:N (wait N seconds)', pattern: '^(never|safe|after_seconds:\\d+)$' },
    details: {
      type: ['object', 'null'],
      description: 'errors[{path, message}] for validation_error; required_scope for insufficient_scope',
      properties: {
        errors: {
          type: 'array',
          items: {
            type: 'object',
            required: ['path', 'message'],
            properties: { path: { type: 'string', description: 'Field in dot and bracket form: items[0].unit_price' }, message: { type: 'string' } },
          },
        },
        required_scope: { type: 'string' },
      },
    },
    request_id: { type: 'string', description: 'Equals the X-Request-Id response header' },
    path: { type: 'string', description: 'Request path without the query string' },
    timestamp: { type: 'string', format: 'date-time' },
  },
};

/** OpenAPI 3.1 document generated from the route definitions that validate requests. */
export function buildOpenApi(routes: RouteDef[], publicBaseUrl: string, publicRoutes: PublicRoute[] = []): JsonSchema {
  const components: Record<string, JsonSchema> = {};
  const examples: Record<string, unknown> = {};
  const paths: Record<string, Record<string, unknown>> = {};
  const tags: string[] = [];
  for (const def of routes) {
    const p = openApiPath(def.path);
    paths[p] ??= {};
    paths[p][def.method.toLowerCase()] = operation(def, components, examples, publicBaseUrl);
    if (!tags.includes(def.tag)) tags.push(def.tag);
  }
  for (const r of publicRoutes) {
    const p = openApiPath(r.path);
    paths[p] ??= {};
    paths[p][r.method.toLowerCase()] = publicOperation(r, publicBaseUrl);
    if (!tags.includes(r.tag)) tags.push(r.tag);
  }
  const baseUrl = publicBaseUrl + API_PREFIX;
  return {
    openapi: '3.1.0',
    info: {
      title: API_TITLE,
      version: '1.0.0',
      summary: API_SUMMARY,
      description: sectionsToMarkdown(guide({ baseUrl, routes, publicPaths: publicRoutes.map((r) => r.path) })),
    },
    servers: [{ url: publicBaseUrl, description: `Paths include the version prefix ${API_PREFIX}` }],
    security: [{ ApiKey: [] }],
    tags: tags.map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        ApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description: 'Keys are created by support staff and shown once. Each operation names the scope it needs in x-required-scope.',
        },
      },
      schemas: { ...components, Error: errorSchema },
      headers: headerComponents,
      examples,
    },
    'x-error-catalogue': (Object.keys(errorCatalogue) as ErrorCode[]).map((code) => ({
      code,
      status: errorCatalogue[code].status,
      retry: errorCatalogue[code].retry,
      ...(errorMeanings[code] ? { description: errorMeanings[code] } : {}),
    })),
  };
}
