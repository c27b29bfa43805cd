// `npm run client:generate`: rewrites schema.ts from the document the API serves. A development
// tool of this repository, not part of the package (see `files`): it reads the server's routes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER, stringToAST, type OpenAPI3, type OpenAPITSOptions } from 'openapi-typescript';
import { buildOpenApi, RETRY_PATTERN, type JsonSchema } from '../src/docs/openapi.js';
import { docsRoutes } from '../src/docs/routes.js';
import { apiRoutes } from '../src/routes.js';

export const SCHEMA_FILE = fileURLToPath(new URL('./schema.ts', import.meta.url));

/**
 * GET /docs/openapi.json, built the way src/docs/routes.ts builds it, without a database or a
 * listening app (the served route sits behind the per-address rate limit, which needs Postgres).
 * The base URL only reaches `servers` and prose the generated types leave out.
 */
function servedDocument(publicBaseUrl = 'http://localhost:3000'): JsonSchema {
  return buildOpenApi(apiRoutes, publicBaseUrl, docsRoutes);
}

type TypeNode = NonNullable<ReturnType<NonNullable<OpenAPITSOptions['postTransform']>>>;

// openapi-typescript prints a string's pattern as `string`; the error envelope's `retry` is one
// of three forms, so its pattern becomes the type that says them, and a client can switch on it.
const retryType = (stringToAST('type Retry = "never" | "safe" | `after_seconds:${number}`;')[0] as { type: TypeNode }).type;

/** The `paths`, `webhooks` and `components` types of a document, as openapi-typescript prints them. */
export async function typesOf(document: JsonSchema): Promise<string> {
  const ast = await openapiTS(document as unknown as OpenAPI3, {
    silent: true,
    transform: (schema) => (schema.type === 'string' && 'pattern' in schema && schema.pattern === RETRY_PATTERN ? retryType : undefined),
  });
  return `${COMMENT_HEADER.replace(' */', ' * Regenerate it with `npm run client:generate`.\n */')}${astToString(ast)}`;
}

if (import.meta.main) {
  writeFileSync(SCHEMA_FILE, await typesOf(servedDocument()));
  process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
}
