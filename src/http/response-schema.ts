import { z } from 'zod';

/**
 * The JSON Schema Fastify serialises a route's answer through (fast-json-stringify): the same zod
 * schema the OpenAPI document describes the answer with, so a field the document does not have
 * never leaves, and one it requires cannot go missing. Draft 7 is the dialect Fastify's serializer
 * and its Ajv read.
 */
export function responseJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', target: 'draft-7', reused: 'inline', cycles: 'ref' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}
