// Verifies the deliveries a webhook receiver gets. Standalone (node:crypto only), so a receiver
// can import `@invoicing/client/webhooks` without the HTTP client.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { webhooks } from './schema.js';

/** The spec's tolerance for receivers in production (and Stripe's default). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

type EventOf<Item> = Item extends { post: { requestBody?: { content: { 'application/json': infer Event } } } } ? Event : never;
type DeclaredEvent = { [Type in keyof webhooks]: EventOf<webhooks[Type]> }[keyof webhooks];

/**
 * A delivered event: the union of the document's `webhooks` payloads, narrowed by `type`.
 * `unknown` only while the document declares no webhooks, since nothing is known then.
 */
export type WebhookEvent = [DeclaredEvent] extends [never] ? unknown : DeclaredEvent;

export type WebhookVerificationFailure = 'missing_header' | 'malformed_header' | 'timestamp_out_of_tolerance' | 'no_matching_signature';

export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: WebhookVerificationFailure,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

export interface VerifyOptions {
  /** How far the signed time may be from now, either way; 300 by default. */
  toleranceSeconds?: number;
  /** Now, for tests of old deliveries. */
  now?: Date;
}

/**
 * `t=<unix seconds>,v1=<hex>[,v1=<hex>…]`; other schemes are skipped, as Stripe's parser does.
 * The server's parseSignatureHeader (src/webhooks/signature.ts) is a twin kept on purpose: this
 * package imports nothing of the server, and the server's build leaves this folder out.
 */
function parseHeader(header: string): { timestamp: number; signatures: string[] } | null {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) return null;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') {
      if (timestamp !== null || !/^\d{1,12}$/.test(value)) return null;
      timestamp = Number(value);
    } else if (key === 'v1') {
      signatures.push(value);
    }
  }
  return timestamp === null || signatures.length === 0 ? null : { timestamp, signatures };
}

/**
 * Checks `X-Webhook-Signature` against the raw body: HMAC-SHA256 of `"<t>.<raw body>"` keyed with
 * the whole secret (`whsec_…`), compared in constant time, with `t` within the tolerance (an old
 * delivery replayed by someone who captured it is refused). Throws WebhookVerificationError.
 *
 * `payload` must be the bytes as received: a body parsed and re-serialised no longer matches.
 */
export function verifyWebhookSignature(payload: string | Uint8Array, header: string | string[] | null | undefined, secret: string, opts: VerifyOptions = {}): void {
  // Node joins a repeated header into an array; its parts are checked like one header's.
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!value) throw new WebhookVerificationError('missing_header', 'The X-Webhook-Signature header is missing.');
  const parsed = parseHeader(value);
  if (!parsed) throw new WebhookVerificationError('malformed_header', 'X-Webhook-Signature is not of the form t=<unix seconds>,v1=<hex>.');
  const now = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  const tolerance = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (Math.abs(now - parsed.timestamp) > tolerance) {
    throw new WebhookVerificationError('timestamp_out_of_tolerance', `The signature's time is more than ${tolerance} s away from now.`);
  }
  const expected = createHmac('sha256', secret).update(`${parsed.timestamp}.`, 'utf8').update(payload).digest();
  const matches = parsed.signatures.some((sig) => /^[0-9a-f]{64}$/i.test(sig) && timingSafeEqual(Buffer.from(sig, 'hex'), expected));
  if (!matches) throw new WebhookVerificationError('no_matching_signature', 'No v1 signature matches this body with this secret.');
}

/** The event of a verified delivery (see verifyWebhookSignature); order events by `created_at` and drop repeats by `id`. */
export function constructWebhookEvent(payload: string | Uint8Array, header: string | string[] | null | undefined, secret: string, opts: VerifyOptions = {}): WebhookEvent {
  verifyWebhookSignature(payload, header, secret, opts);
  return JSON.parse(typeof payload === 'string' ? payload : Buffer.from(payload).toString('utf8')) as WebhookEvent;
}
