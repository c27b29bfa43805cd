import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { assertConnectTarget, guardedLookup } from './address-guard.js';

// Decisions §10: an attempt that has no answer within 15 s failed.
export const DELIVERY_TIMEOUT_MS = 15_000;
// What an attempt keeps of the receiver's answer: enough to read an error page.
export const RESPONSE_KEEP_BYTES = 4096;

export interface PostResult {
  /** Null when no HTTP answer arrived (refused, timed out, TLS error, forbidden address). */
  status: number | null;
  body: string | null;
  retryAfterSeconds: number | null;
  error: string | null;
  durationMs: number;
}

/** Seconds from a `Retry-After` of either form (delta-seconds or an HTTP date). */
export function parseRetryAfter(value: string | undefined, now: Date): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return null;
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}

// PostgreSQL text cannot hold NUL; a receiver's binary answer is kept readable instead.
function storable(text: string): string {
  return text.replace(/\u0000/g, '\uFFFD');
}

async function readHead(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    // The rest is not kept, so it is not waited for either.
    if (size >= RESPONSE_KEEP_BYTES) break;
  }
  res.destroy();
  return storable(Buffer.concat(chunks).subarray(0, RESPONSE_KEEP_BYTES).toString('utf8'));
}

/**
 * One POST, never following a redirect (node's https does not), connecting only to addresses
 * the SSRF guard allows — checked on the address the socket really uses, not the one resolved
 * when the endpoint was created.
 */
export async function postWebhook(url: string, body: string, headers: Record<string, string>, allowPrivate: boolean, now: Date): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const target = new URL(url);
    if (target.protocol !== 'https:') throw new Error('the endpoint URL is not https');
    assertConnectTarget(target.hostname, allowPrivate);
    const signal = AbortSignal.timeout(DELIVERY_TIMEOUT_MS);
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = https.request(target, {
        method: 'POST',
        headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
        lookup: guardedLookup(allowPrivate),
        agent: false,
        signal,
      });
      req.on('response', resolve);
      req.on('error', reject);
      req.end(body);
    });
    const text = await readHead(res);
    return {
      status: res.statusCode ?? null,
      body: text,
      retryAfterSeconds: parseRetryAfter(res.headers['retry-after'], now),
      error: null,
      durationMs: elapsed(),
    };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const message = e.name === 'TimeoutError' || e.name === 'AbortError' ? `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` : `${e.code ? `${e.code}: ` : ''}${e.message}`;
    return { status: null, body: null, retryAfterSeconds: null, error: storable(message).slice(0, 1000), durationMs: elapsed() };
  }
}
