import { z } from 'zod';

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * `anyOf: [{ type: T, … }, { type: 'null' }]`, zod's nullable, as `{ type: [T, 'null'], … }`: the
 * same values, which fast-json-stringify writes directly instead of testing each branch with Ajv
 * on every answer.
 */
function nullableAsTypeList(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(nullableAsTypeList);
  if (!isObject(v)) return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) out[k] = nullableAsTypeList(x);
  const branches = out.anyOf;
  if (Array.isArray(branches) && branches.length === 2) {
    const nullAt = branches.findIndex((b) => isObject(b) && b.type === 'null' && Object.keys(b).length === 1);
    const other = branches[1 - nullAt];
    if (nullAt !== -1 && isObject(other) && typeof other.type === 'string') {
      delete out.anyOf;
      return { ...out, ...other, type: [other.type, 'null'] };
    }
  }
  return out;
}

/**
 * The JSON Schema Fastify serialises a route's answer through (fast-json-stringify): the same zod
 * schema the OpenAPI document describes the answer with, so a field the document does not have
 * never leaves, and one it requires cannot go missing. Draft 7 is the dialect Fastify's serializer
 * and its Ajv read.
 */
export function responseJsonSchema(schema: z.ZodType): Json {
  const json = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', target: 'draft-7', reused: 'inline', cycles: 'ref' }) as Json;
  delete json.$schema;
  return nullableAsTypeList(json) as Json;
}
