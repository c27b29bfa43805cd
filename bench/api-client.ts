import { API_PREFIX } from '../src/http/urls.js';

/** One API call as a bench client makes it: the status and the body's text, never a throw. */
export async function apiRequest(
  baseUrl: string,
  key: string,
  method: 'GET' | 'POST',
  route: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(`${baseUrl}${API_PREFIX}${route}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    return { status: res.status, text: await res.text() };
  } catch (err) {
    // Status 0: no answer (refused, reset, timed out); the text says why.
    return { status: 0, text: err instanceof Error ? err.message : String(err) };
  }
}
