import { z } from 'zod';
import { errorCatalogue, type ErrorCode } from '../errors.js';
import type { RouteDef } from '../http/route.js';
import { API_PREFIX } from '../http/urls.js';

type JsonSchema = Record<string, unknown>;

function toSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12', reused: 'inline', cycles: 'ref' }) as JsonSchema;
  delete json.$schema;
  delete json.id;
  return json;
}

/** `/invoices/:invoice_id` → `/invoices/{invoice_id}` */
export function openApiPath(path: string): string {
  return API_PREFIX + path.replace(/:([A-Za-z_]+)/g, '{$1}');
}

// Every route can answer these, whatever it does.
const COMMON_ERRORS: ErrorCode[] = ['missing_api_key', 'invalid_api_key', 'ip_not_allowed', 'rate_limited', 'validation_error', 'internal_error', 'service_unavailable'];

function errorCodesFor(def: RouteDef): ErrorCode[] {
  const codes = new Set<ErrorCode>([...COMMON_ERRORS, ...def.errors]);
  if (def.scope) codes.add('insufficient_scope');
  if (def.body || def.method !== 'GET') codes.add('payload_too_large');
  return [...codes];
}

function parameters(def: RouteDef): unknown[] {
  const out: unknown[] = [];
  for (const [where, schema] of [
    ['path', def.params],
    ['query', def.query],
  ] as const) {
    if (!schema) continue;
    const json = toSchema(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, prop] of Object.entries(json.properties ?? {})) {
      out.push({
        name,
        in: where,
        required: where === 'path' || (json.required ?? []).includes(name),
        schema: prop,
        ...(typeof prop.description === 'string' ? { description: prop.description } : {}),
      });
    }
  }
  if (def.idempotent) {
    out.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: 'Replays the first answer for 24 hours instead of repeating the work (1 to 255 characters).',
      schema: { type: 'string', minLength: 1, maxLength: 255 },
    });
  }
  return out;
}

const rateLimitHeaders = {
  'X-RateLimit-Limit': { description: 'Requests allowed per minute for this key', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'Unix seconds when the window ends', schema: { type: 'integer' } },
  'X-Request-Id': { description: 'Equals request_id of an error envelope', schema: { type: 'string' } },
};

function operation(def: RouteDef): JsonSchema {
  const responses: Record<string, unknown> = {
    [def.response.status]: {
      description: def.response.description,
      headers: rateLimitHeaders,
      ...(def.response.schema ? { content: { 'application/json': { schema: toSchema(def.response.schema, 'output') } } } : {}),
    },
  };
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesFor(def)) {
    let status: number = errorCatalogue[code].status;
    if (code === 'validation_error') {
      byStatus.set(422, [...(byStatus.get(422) ?? []), code]);
      if (def.body) byStatus.set(415, [...(byStatus.get(415) ?? []), code]);
      if (def.body || (def.params && (def.malformedIdStatus ?? 400) === 400)) status = 400;
      else continue;
    }
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of [...byStatus.entries()].sort(([a], [b]) => a - b)) {
    responses[status] = {
      description: `Error: ${codes.join(', ')}`,
      headers: rateLimitHeaders,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, example: { code: codes[0] } } },
    };
  }
  return {
    operationId: def.operationId,
    summary: def.summary,
    ...(def.description ? { description: def.description } : {}),
    tags: [def.tag],
    'x-required-scope': def.scope,
    ...(def.scope ? { description: `${def.description ? `${def.description}\n\n` : ''}Scope: \`${def.scope}\`.` } : {}),
    parameters: parameters(def),
    ...(def.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: toSchema(def.body, 'input') } } } }
      : {}),
    responses,
  };
}

const errorSchema = {
  type: 'object',
  required: ['code', 'message', 'retry', 'details', 'request_id', 'path', 'timestamp'],
  properties: {
    code: { type: 'string', enum: Object.keys(errorCatalogue), description: 'Stable identifier: branch on it, not on message' },
    message: { type: 'string' },
    retry: { type: 'string', description: 'never, safe, or after_seconds:N', pattern: '^(never|safe|after_seconds:\\d+)$' },
    details: {
      type: ['object', 'null'],
      description: 'required_scope for insufficient_scope; errors[{path, message}] for validation_error',
    },
    request_id: { type: 'string' },
    path: { type: 'string' },
    timestamp: { type: 'string', format: 'date-time' },
  },
};

/** OpenAPI 3.1 document generated from the route definitions that validate requests. */
export function buildOpenApi(routes: RouteDef[], publicBaseUrl: string): JsonSchema {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const def of routes) {
    const p = openApiPath(def.path);
    paths[p] ??= {};
    paths[p][def.method.toLowerCase()] = operation(def);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Invoicing External API',
      version: '1.0.0',
      description: 'Create clients and invoices, send them, record payments, open checkout sessions and receive signed webhooks.',
    },
    servers: [{ url: publicBaseUrl }],
    security: [{ ApiKey: [] }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      schemas: { Error: errorSchema },
    },
  };
}
