import { createHmac, timingSafeEqual } from 'node:crypto';

/** Stripe's scheme, so its SDK (and any verifier written for it) accepts our deliveries. */
export function computeSignature(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex');
}

export function signatureHeader(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},v1=${computeSignature(secret, timestamp, body)}`;
}

export interface ParsedSignature {
  timestamp: number;
  v1: string[];
}

/**
 * `t=<unix seconds>,v1=<hex>[,v1=…]`; other schemes are ignored as Stripe's parser does. The
 * client package (sdk/webhooks.ts) has its own copy, since it ships without the server.
 */
export function parseSignatureHeader(header: string): ParsedSignature | null {
  let timestamp: number | null = null;
  const v1: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) return null;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') {
      if (!/^\d{1,12}$/.test(value) || timestamp !== null) return null;
      timestamp = Number(value);
    } else if (key === 'v1') {
      v1.push(value);
    }
  }
  if (timestamp === null || v1.length === 0) return null;
  return { timestamp, v1 };
}

export interface VerifyResult {
  valid: boolean;
  message: string;
  expected_signature?: string;
}

// docs/decisions.md §10: the debugging route checks format, a 24-hour timestamp tolerance, then the HMAC.
export const VERIFY_TOLERANCE_SECONDS = 24 * 60 * 60;

export function verifySignature(header: string, secret: string, payload: string | undefined, nowSeconds: number): VerifyResult {
  const parsed = parseSignatureHeader(header);
  if (!parsed) return { valid: false, message: 'The signature is not of the form t=<unix seconds>,v1=<hex HMAC-SHA256>.' };
  const expected = payload === undefined ? undefined : signatureHeader(secret, parsed.timestamp, payload);
  const withExpected = (r: VerifyResult): VerifyResult => (expected ? { ...r, expected_signature: expected } : r);
  if (Math.abs(nowSeconds - parsed.timestamp) > VERIFY_TOLERANCE_SECONDS) {
    return withExpected({ valid: false, message: 'The timestamp is more than 24 hours away from now.' });
  }
  if (payload === undefined) {
    return { valid: false, message: 'Format and timestamp are valid; give the raw body as `payload` to check the HMAC.' };
  }
  const want = Buffer.from(computeSignature(secret, parsed.timestamp, payload), 'hex');
  const matches = parsed.v1.some((sig) => {
    const got = /^[0-9a-f]{64}$/i.test(sig) ? Buffer.from(sig, 'hex') : null;
    return got !== null && timingSafeEqual(got, want);
  });
  if (!matches) return withExpected({ valid: false, message: 'No v1 signature matches the payload with this secret.' });
  return { valid: true, message: 'The signature is valid.' };
}
