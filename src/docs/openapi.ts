import { z } from 'zod';
import { errorCatalogue, type ErrorCode } from '../errors.js';
import { errorDetails } from './error-details.js';
import type { RouteDef } from '../http/route.js';
import { timestamp } from '../http/schemas.js';
import { API_PREFIX } from '../http/urls.js';
import { API_SUMMARY, API_TITLE, errorMeanings, guide, sectionsToMarkdown, tagDescriptions } from './guide.js';
import { curlExample } from './examples.js';
import { componentResolver, deref, sampleValue, toSchema, type JsonSchema } from './schema.js';
import { buildWebhooks } from './webhooks.js';

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
// The reference needs no key but is counted per address like any keyless request (api.ts).
const PUBLIC_ROUTE_ERRORS = (['rate_limited', 'internal_error', 'service_unavailable'] as const).map((code): [number, ErrorCode[]] => [errorCatalogue[code].status, [code]]);

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

/** `client_already_exists` → `ClientAlreadyExistsError`, the component of that code's envelope. */
export function errorSchemaName(code: ErrorCode): string {
  const pascal = code.replace(/(?:^|_)([a-z])/g, (_m, c: string) => c.toUpperCase());
  return pascal.endsWith('Error') ? pascal : `${pascal}Error`;
}

/**
 * The one error envelope (spec, Errors) as one code answers it: `code` fixed, `details` as the
 * catalogue declares it for that code, so a typed client narrows on `code` and reads the details.
 */
/** What every error's `retry` matches. */
export const RETRY_PATTERN = '^(never|safe|after_seconds:[0-9]+)$';

function errorEnvelope(code: ErrorCode) {
  return z
    .object({
      code: z.literal(code).meta({ description: 'Stable identifier: branch on it, not on message' }),
      message: z.string().meta({ description: 'Prose; may be reworded' }),
      // The description states the pattern too, for readers of the document; the client's
      // generator (sdk/generate.ts) types this pattern as the template literal it allows.
      retry: z
        .string()
        .regex(new RegExp(RETRY_PATTERN))
        .meta({
          description: `never (fix the request), safe (retry with backoff), or after_seconds:N (wait N seconds): \`${RETRY_PATTERN}\``,
          example: errorCatalogue[code].retry,
        }),
      details: errorDetails[code],
      request_id: z.string().meta({ description: 'Equals the X-Request-Id response header' }),
      path: z.string().meta({ description: 'Request path without the query string' }),
      timestamp,
    })
    .meta({ description: errorMeanings[code] ?? code });
}

/**
 * `details` of a code that carries none: `null`, and only null (`type: 'null'` stays the schema's
 * type). openapi-fetch's `Readable<T>` (the type of `error`) drops every property whose type is
 * only `null` (`NonNullable<null>` is `never`, which it takes for a writeOnly marker), so an error
 * union holding such a code would lose `details` and `error.details` would not compile. The
 * `anyOf` adds a branch no value can take beside `type: 'null'`, which openapi-typescript prints as
 * `false`: the generated type is `null | false`, kept by Readable, and falsy like null, so
 * `if (error.details)` still leaves only the codes that carry details.
 */
function nullDetails(details: JsonSchema): JsonSchema {
  if (details.type !== 'null') return details;
  return {
    ...details,
    description: `${String(details.description ?? 'Always null')}. The generated TypeScript type is \`null | false\`; \`false\` is never sent`,
    anyOf: [{ type: 'null' }, { const: false, description: 'Never sent (excluded by `type: null`): keeps `details` in types generated by openapi-typescript for openapi-fetch' }],
  };
}

/** A reference to the envelope of a code, added to `components` when first met. */
function errorSchemaRef(code: ErrorCode, components: Record<string, JsonSchema>): { $ref: string } {
  const name = errorSchemaName(code);
  if (!components[name]) {
    const envelope = toSchema(errorEnvelope(code), 'output', components) as JsonSchema & { properties: Record<string, JsonSchema> };
    components[name] = { ...envelope, properties: { ...envelope.properties, details: nullDetails(envelope.properties.details!) } };
  }
  return { $ref: `#/components/schemas/${name}` };
}

/** The body of an error status: the envelope of its one code, or one of its codes' told apart by `code`. */
function errorBodySchema(codes: ErrorCode[], components: Record<string, JsonSchema>): JsonSchema {
  const refs = codes.map((c) => errorSchemaRef(c, components));
  if (refs.length === 1) return refs[0]!;
  return { oneOf: refs, discriminator: { propertyName: 'code', mapping: Object.fromEntries(codes.map((c, i) => [c, refs[i]!.$ref])) } };
}

/** Name in `components.examples` of the example envelope of a code at a status. */
function errorExampleName(code: ErrorCode, status: number): string {
  return status === errorCatalogue[code].status ? code : `${code}_${status}`;
}

function errorExample(code: ErrorCode, status: number, path: string, components: Record<string, JsonSchema>): unknown {
  const resolve = componentResolver(components);
  const details = deref(deref(errorSchemaRef(code, components), resolve).properties, resolve).details;
  return {
    code,
    message: errorMeanings[code] ?? code,
    retry: errorCatalogue[code].retry,
    // A validation_error of another status than 422 is about the body as a whole.
    details:
      code === 'validation_error' && status !== 422
        ? { errors: [{ path: 'body', message: status === 415 ? 'Content-Type must be application/json' : 'malformed JSON body' }] }
        : deref(details, resolve).type === 'null'
          ? null
          : sampleValue(details, resolve),
    request_id: '6f1c2d9e-1b7a-4c1e-9a59-0c3f8e2b7d41',
    path,
    timestamp: '2026-11-22T03:16:13.123Z',
  };
}

/** The error responses of an operation: per status, the envelopes of its codes and an example of each. */
function errorResponses(byStatus: [number, ErrorCode[]][], components: Record<string, JsonSchema>, examples: Record<string, unknown>): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const [status, codes] of byStatus) {
    const retryAfter = codes.some((c) => /^after_seconds:/.test(errorCatalogue[c].retry));
    responses[status] = {
      description: `Error: ${codes.join(', ')}`,
      headers: { ...rateLimitHeaders, ...(retryAfter ? { 'Retry-After': headerRef('Retry-After') } : {}) },
      content: {
        'application/json': {
          schema: errorBodySchema(codes, components),
          examples: Object.fromEntries(
            codes.map((c) => {
              const name = errorExampleName(c, status);
              examples[name] ??= { summary: errorMeanings[c] ?? c, value: errorExample(c, status, API_PREFIX + '/invoices', components) };
              return [c, { $ref: `#/components/examples/${name}` }];
            }),
          ),
        },
      },
    };
  }
  return responses;
}

function operation(def: RouteDef, components: Record<string, JsonSchema>, examples: Record<string, unknown>, publicBaseUrl: string): JsonSchema {
  const paramsJson = def.params ? toSchema(def.params, 'input', components) : undefined;
  const bodyJson = def.body ? toSchema(def.body, 'body', components) : undefined;
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
    ...errorResponses(errorsByStatus(def), components, examples),
  };
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
            // api.ts validates an absent body as `{}`: where that passes, the body may be left out.
            required: !def.body.safeParse({}).success,
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

// The one JSON reference route answers this document; its shape is OpenAPI's, not ours to restate.
const openApiDocumentSchema = {
  type: 'object',
  required: ['openapi', 'info'],
  properties: { openapi: { type: 'string', const: '3.1.0' }, info: { type: 'object', additionalProperties: true } },
  additionalProperties: true,
  externalDocs: { url: 'https://spec.openapis.org/oas/v3.1.0' },
};

function publicOperation(r: PublicRoute, publicBaseUrl: string, components: Record<string, JsonSchema>, examples: Record<string, unknown>): JsonSchema {
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
        headers: rateLimitHeaders,
        content: { [r.contentType.split(';')[0]!.trim()]: { schema: r.contentType.startsWith('application/json') ? openApiDocumentSchema : { type: 'string' } } },
      },
      ...errorResponses(PUBLIC_ROUTE_ERRORS, components, examples),
    },
    'x-codeSamples': [{ lang: 'Shell', label: 'curl', source: `curl -sS "${publicBaseUrl}${openApiPath(r.path)}"` }],
  };
}

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
    paths[p][r.method.toLowerCase()] = publicOperation(r, publicBaseUrl, components, examples);
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
      // No licence is granted: the service and its description are the operator's.
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    // Relative: the host that served this document, whatever name it was reached by (PUBLIC_BASE_URL
    // may be unset, and then names localhost). The paths carry the version prefix, so the spec's
    // {base_url} is this server followed by the prefix.
    servers: [{ url: '/', description: `The host serving this document; paths include the version prefix ${API_PREFIX}` }],
    security: [{ ApiKey: [] }],
    tags: tags.map((name) => ({ name, description: tagDescriptions[name] })),
    paths,
    webhooks: buildWebhooks(components),
    components: {
      securitySchemes: {
        ApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description: 'Keys are created by support staff and shown once. Each operation names the scope it needs in x-required-scope.',
        },
      },
      schemas: components,
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
