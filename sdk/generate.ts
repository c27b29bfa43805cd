// `npm run client:generate`: rewrites schema.ts from the document the API serves. A development
// tool of this repository, not part of the package (see `files`): it reads the server's routes.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, COMMENT_HEADER, type OpenAPI3 } from 'openapi-typescript';
import { buildOpenApi, type JsonSchema } from '../src/docs/openapi.js';
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

/** The `paths`, `webhooks` and `components` types of a document, as openapi-typescript prints them. */
export async function typesOf(document: JsonSchema): Promise<string> {
  const ast = await openapiTS(document as unknown as OpenAPI3, { silent: true });
  return `${COMMENT_HEADER.replace(' */', ' * Regenerate it with `npm run client:generate`.\n */')}${astToString(ast)}`;
}

if (import.meta.main) {
  writeFileSync(SCHEMA_FILE, await typesOf(servedDocument()));
  process.stdout.write(`wrote ${SCHEMA_FILE}\n`);
}
