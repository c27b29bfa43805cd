import fastJson from 'fast-json-stringify';
import { z } from 'zod';

/**
 * The JSON Schema a route's answer is serialised through (fast-json-stringify): the same zod
 * schema the OpenAPI document describes the answer with, so a field the document does not have
 * never leaves, and one it requires cannot go missing. Draft 7 is the dialect fast-json-stringify
 * and its Ajv read.
 */
function responseJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', target: 'draft-7', reused: 'inline', cycles: 'ref' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}

const serializers = new WeakMap<z.ZodType, (body: unknown) => string>();

/**
 * The compiled serializer of a response schema, built when the route first answers and kept for
 * the process: compiling every route's at each app's start-up cost about 0.3 s a time.
 */
export function responseSerializer(schema: z.ZodType): (body: unknown) => string {
  let serialize = serializers.get(schema);
  if (!serialize) {
    serialize = fastJson(responseJsonSchema(schema) as never) as (body: unknown) => string;
    serializers.set(schema, serialize);
  }
  return serialize;
}
