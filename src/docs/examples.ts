import type { RouteDef } from '../http/route.js';
import { API_PREFIX } from '../http/urls.js';
import { componentResolver, deref, SAMPLE_UUID, sampleValue, type JsonSchema } from './schema.js';

/** Single-quoted for a POSIX shell. */
function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * A curl call for a route: `def.example` where given; otherwise path ids are a sample UUID and
 * the body holds the required fields with sample values taken from the schema.
 */
export function curlExample(
  def: RouteDef,
  publicBaseUrl: string,
  schemas: { params?: JsonSchema; body?: JsonSchema },
  components: Record<string, JsonSchema>,
): string {
  const resolve = componentResolver(components);
  const paramProps = (deref(schemas.params, resolve).properties ?? {}) as Record<string, JsonSchema>;
  const path = def.path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => {
    const given = def.example?.params?.[name];
    if (given !== undefined) return encodeURIComponent(given);
    const sample = paramProps[name] ? sampleValue(paramProps[name], resolve) : SAMPLE_UUID;
    return encodeURIComponent(typeof sample === 'string' ? sample : SAMPLE_UUID);
  });
  const query = def.example?.query ? `?${def.example.query.replace(/^\?/, '')}` : '';
  const url = `${publicBaseUrl}${API_PREFIX}${path}${query}`;
  const lines = [`curl -sS${def.method === 'GET' ? '' : ` -X ${def.method}`} "${url}"`, `  -H "X-API-Key: $API_KEY"`];
  if (def.idempotent) lines.push(`  -H "Idempotency-Key: $(uuidgen)"`);
  const media = (def.response.contentType ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  if (media !== 'application/json') lines.push(`  -o response.${(media.split('/')[1] ?? 'bin').replace(/[^a-z0-9]/g, '') || 'bin'}`);
  if (def.body) {
    const body = def.example?.body !== undefined ? def.example.body : schemas.body ? sampleValue(schemas.body, resolve) : {};
    lines.push(`  -H "Content-Type: application/json"`, `  -d ${shellQuote(JSON.stringify(body))}`);
  }
  return lines.join(' \\\n');
}
