import https from 'node:https';
import type { IncomingMessage } from 'node:http';
import { assertConnectPort, assertConnectTarget, guardedLookup } from './address-guard.js';
import type { DeliveryErrorCategory } from './schemas.js';

// docs/decisions.md §10: an attempt that has no answer within 15 s failed. A test attempt is made while
// the merchant's request waits for it, so it gives up sooner.
export const DELIVERY_TIMEOUT_MS = 15_000;
export const TEST_DELIVERY_TIMEOUT_MS = 10_000;
// What an attempt keeps of the receiver's answer: enough to read an error page.
export const RESPONSE_KEEP_BYTES = 4096;

export interface PostResult {
  /** Null when no HTTP answer arrived (refused, timed out, TLS error, forbidden address). */
  status: number | null;
  body: string | null;
  /** A 429's or 503's Retry-After, in seconds. */
  retryAfterSeconds: number | null;
  error: string | null;
  /** Set with `error`: what the API may tell of it. */
  errorCategory: DeliveryErrorCategory | null;
  durationMs: number;
}

// OpenSSL's certificate verification codes, as node reports them.
const CERTIFICATE_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_CRL',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECRYPT_CRL_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CRL_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CRL_NOT_YET_VALID',
  'CRL_HAS_EXPIRED',
  'ERROR_IN_CERT_NOT_BEFORE_FIELD',
  'ERROR_IN_CERT_NOT_AFTER_FIELD',
  'ERROR_IN_CRL_LAST_UPDATE_FIELD',
  'ERROR_IN_CRL_NEXT_UPDATE_FIELD',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_CHAIN_TOO_LONG',
  'CERT_REVOKED',
  'INVALID_CA',
  'PATH_LENGTH_EXCEEDED',
  'INVALID_PURPOSE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'HOSTNAME_MISMATCH',
]);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NODATA', 'EAI_NONAME']);
// No route to the host: like a refusal, no connection was ever made.
const UNREACHABLE_CODES = new Set(['EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EADDRNOTAVAIL']);

/** The category of an attempt that got no HTTP answer. */
export function transportErrorCategory(err: NodeJS.ErrnoException): DeliveryErrorCategory {
  const code = err.code ?? '';
  if (code === 'ETIMEDOUT') return 'timeout';
  if (code === 'EADDRNOTALLOWED') return 'address_not_allowed';
  if (code === 'ECONNREFUSED' || UNREACHABLE_CODES.has(code)) return 'connection_refused';
  if (DNS_CODES.has(code)) return 'dns_error';
  if (CERTIFICATE_CODES.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || code === 'EPROTO') return 'tls_error';
  // ECONNRESET, EPIPE, "socket hang up", and any other way an open connection ended early.
  return 'connection_reset';
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
  return text.replaceAll('\u0000', '\uFFFD');
}

async function readHead(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    // The rest is not kept, so it is not waited for either.
    if (size >= RESPONSE_KEEP_BYTES) {
      // Dropping the rest means dropping the connection too.
      res.destroy();
      break;
    }
  }
  return storable(Buffer.concat(chunks).subarray(0, RESPONSE_KEEP_BYTES).toString('utf8'));
}

function failure(message: string, category: DeliveryErrorCategory, durationMs: number): PostResult {
  return { status: null, body: null, retryAfterSeconds: null, error: storable(message).slice(0, 1000), errorCategory: category, durationMs };
}

// Attempts to one receiver reuse their connections (keep-alive). A reused connection was checked
// by the SSRF guard when it was opened; the two agents keep the guard's two modes apart.
// Idle connections close before receivers commonly do (Node's server: 5 s), so a request is rarely
// written to a socket the receiver is closing.
const agentOptions = { keepAlive: true, timeout: 4_000, maxFreeSockets: 64 };
const agents = { guarded: new https.Agent(agentOptions), allowingPrivate: new https.Agent(agentOptions) };

/**
 * One POST, never following a redirect (node's https does not), connecting only to addresses
 * and ports the SSRF guard allows — the address checked on the one the socket really uses, not
 * the one resolved when the endpoint was created. Gives up after `timeoutMs`.
 */
export async function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  allowPrivate: boolean,
  now: Date,
  timeoutMs: number,
): Promise<PostResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let target: URL;
  try {
    target = new URL(url);
    if (target.protocol !== 'https:') throw new Error('the endpoint URL is not https');
    assertConnectTarget(target.hostname, allowPrivate);
    assertConnectPort(target, allowPrivate);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return failure(`${e.code ? `${e.code}: ` : ''}${e.message}`, 'address_not_allowed', elapsed());
  }
  // It bounds the whole attempt, reading the answer included, not only the wait for its headers.
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = https.request(target, {
        method: 'POST',
        headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
        lookup: guardedLookup(allowPrivate),
        agent: allowPrivate ? agents.allowingPrivate : agents.guarded,
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
      // docs/decisions.md §10: only a 429 or a 503 asks to wait; another status's header is not heeded.
      retryAfterSeconds: res.statusCode === 429 || res.statusCode === 503 ? parseRetryAfter(res.headers['retry-after'], now) : null,
      error: null,
      errorCategory: null,
      durationMs: elapsed(),
    };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (signal.aborted) return failure(`no answer within ${timeoutMs / 1000} s`, 'timeout', elapsed());
    return failure(`${e.code ? `${e.code}: ` : ''}${e.message}`, transportErrorCategory(e), elapsed());
  }
}
