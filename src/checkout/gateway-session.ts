import type { Sql } from '../db/client.js';
import { clock } from '../clock.js';
import { newId, randomToken } from '../ids.js';
import type { SecretBox } from '../secret-box.js';
import { openSession, providerFor } from './providers/registry.js';
import type { Credentials, GatewayRedirect, PaymentProvider, SessionRequest } from './providers/provider.js';
import { loadCredentials } from './credentials.js';
import { effectiveStatus } from './resource.js';
import { checkoutUrl, gatewayReturnUrl, notificationUrl } from './urls.js';
import * as q from './queries.js';

/** What opening a gateway session needs besides the request. */
export interface GatewayDeps {
  /** How long a session can be paid (CHECKOUT_TTL_SECONDS). */
  ttlSeconds: number;
  /** The hosted pages' origin: the gateway sends the customer back, and notifies, there. */
  publicBase: string;
  /** Opens the merchant's gateway credentials. */
  secrets: SecretBox;
}

/** The gateway's session, opened before the transaction under the id our session row then gets. */
export interface OpenedSession {
  checkoutId: string;
  /** The hosted page's token: the gateway was given URLs under it. */
  token: string;
  currency: string;
  amount: string;
  provider: string;
  providerSessionId: string;
  redirect: GatewayRedirect | null;
  reference: string | null;
  expiresAt: Date;
}

type GatewayRequest = Omit<SessionRequest, 'checkoutId' | 'expiresAt' | 'attempt' | 'pageUrl' | 'returnUrl' | 'notificationUrl' | 'credentials'>;

/** The gateway's session for a checkout (a new one, or the next attempt of one), at the URLs of its page. */
function gatewayRequest(
  req: GatewayRequest,
  at: { checkoutId: string; token: string; expiresAt: Date; attempt: number },
  credentials: Credentials,
  provider: PaymentProvider,
  publicBase: string,
): SessionRequest {
  return {
    ...req,
    ...at,
    pageUrl: checkoutUrl(publicBase, at.token),
    returnUrl: gatewayReturnUrl(publicBase, at.token),
    notificationUrl: notificationUrl(publicBase, provider.name, req.merchantId),
    credentials,
  };
}

/**
 * The gateway's session, under the id our session row then gets, payable for `ttlSeconds` from
 * `now`. Called on the pool with no transaction open (docs/decisions.md §10); POST /checkout and the
 * invoice page's Pay both open theirs here.
 */
export async function openGatewaySession(
  provider: PaymentProvider,
  credentials: Credentials,
  request: GatewayRequest,
  now: Date,
  deps: Pick<GatewayDeps, 'ttlSeconds' | 'publicBase'>,
): Promise<OpenedSession> {
  const at = { checkoutId: newId(), token: randomToken(), expiresAt: new Date(now.getTime() + deps.ttlSeconds * 1000), attempt: 1 };
  const session = await openSession(provider, gatewayRequest(request, at, credentials, provider, deps.publicBase));
  return {
    checkoutId: at.checkoutId,
    token: at.token,
    currency: request.currency,
    amount: request.amount,
    provider: provider.name,
    providerSessionId: session.sessionId,
    redirect: session.redirect ?? null,
    reference: session.reference ?? null,
    expiresAt: at.expiresAt,
  };
}

/** The pending session row of the gateway's `opened` one, with its own page and CSRF tokens. */
export function newSession(
  opened: OpenedSession,
  fields: Omit<
    q.NewCheckout,
    'id' | 'token' | 'csrf_token' | 'amount' | 'currency' | 'provider' | 'provider_session_id' | 'provider_redirect' | 'provider_reference' | 'expires_at'
  >,
): q.NewCheckout {
  return {
    ...fields,
    id: opened.checkoutId,
    token: opened.token,
    csrf_token: randomToken(),
    amount: opened.amount,
    currency: opened.currency,
    provider: opened.provider,
    provider_session_id: opened.providerSessionId,
    provider_redirect: opened.redirect,
    provider_reference: opened.reference,
    expires_at: opened.expiresAt,
  };
}

/**
 * The session as its page offers it: a redirect gateway's session that ended unpaid (abandoned,
 * declined, expired at the gateway) is replaced by a new one while the checkout is payable, so
 * the customer can pay again (docs/decisions.md §16: "the checkout can be opened again"). The gateway is
 * asked with no transaction open; of two pages opening at once, one replacement is kept.
 */
export async function payableSession(sql: Sql, s: q.CheckoutRow, deps: Pick<GatewayDeps, 'publicBase' | 'secrets'>): Promise<q.CheckoutRow> {
  if (!s.provider_redirect || s.provider_session_ended_at === null || effectiveStatus(s, clock.now()) !== 'pending') return s;
  const provider = providerFor(s.provider);
  const credentials = await loadCredentials(sql, deps.secrets, s.merchant_id, provider);
  const at = { checkoutId: s.id, token: s.token, expiresAt: s.expires_at, attempt: s.provider_attempt + 1 };
  const request = { merchantId: s.merchant_id, amount: s.amount, currency: s.currency, description: s.description, customerEmail: s.customer_email };
  const next = await openSession(provider, gatewayRequest(request, at, credentials, provider, deps.publicBase));
  const replaced = await q.replaceGatewaySession(
    sql,
    s.id,
    s.provider_session_id,
    { provider_session_id: next.sessionId, provider_redirect: next.redirect ?? null, provider_reference: next.reference ?? null },
    clock.now(),
  );
  return replaced ?? (await q.sessionById(sql, s.id)) ?? s;
}
