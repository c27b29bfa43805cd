import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SecretBox } from '../secret-box.js';

// A form carries one short field; anything bigger is not from our pages.
const FORM_BODY_LIMIT = 4096;

/** The hosted pages' forms arrive URL-encoded: parsed into a plain object of strings. */
export function registerFormParser(pages: FastifyInstance): void {
  pages.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(String(body))));
  });
}

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * A form submission from our own page, not from another site: browsers that send Sec-Fetch-Site
 * must say same-origin; otherwise an Origin, when given, must be ours. Our pages' Referrer-Policy
 * (no-referrer) makes browsers send `Origin: null` with their own forms, so null passes here and
 * the form's CSRF token, which only our page knows, decides.
 */
export function fromOurOrigin(request: FastifyRequest, publicBaseUrl: string): boolean {
  const site = header(request, 'sec-fetch-site');
  if (site !== undefined) return site === 'same-origin';
  const origin = header(request, 'origin');
  return origin === undefined || origin === 'null' || origin === new URL(publicBaseUrl).origin;
}

function csrfField(body: unknown): string | undefined {
  const given = body && typeof body === 'object' ? (body as Record<string, unknown>).csrf_token : undefined;
  return typeof given === 'string' ? given : undefined;
}

/** The form's CSRF token is the one stored with what it acts on (a checkout session's). */
export function csrfMatches(body: unknown, expected: string): boolean {
  const given = csrfField(body);
  if (given === undefined) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

// Binds a sealed token to the one form it was made for.
const INVOICE_PAY = 'invoice-pay:';

/**
 * The invoice page's Pay form token: the page's public token sealed with the app's key, so no
 * column has to hold one and no other site can make one. It names the invoice it was made for.
 */
export function invoicePayToken(secrets: SecretBox, publicToken: string): string {
  return secrets.seal(`${INVOICE_PAY}${publicToken}`).toString('base64url');
}

/** The form carries a Pay token this app sealed for this invoice page. */
export function invoicePayTokenMatches(secrets: SecretBox, body: unknown, publicToken: string): boolean {
  const given = csrfField(body);
  if (given === undefined) return false;
  try {
    return secrets.open(Buffer.from(given, 'base64url')) === `${INVOICE_PAY}${publicToken}`;
  } catch {
    // Not sealed by us (GCM's tag does not verify), or not a sealed token at all.
    return false;
  }
}
