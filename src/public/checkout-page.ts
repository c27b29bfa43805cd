import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Handlebars from 'handlebars';
import type { AppContext } from '../http/context.js';
import { clock } from '../clock.js';
import { isBoletaType } from '../dte/boleta.js';
import { toAppError } from '../http/envelope.js';
import { invoiceUrls } from '../http/urls.js';
import type { Locale } from '../invoices/schemas.js';
import { OPEN_STATUSES } from '../invoices/transition-queries.js';
import { getInvoiceRow } from '../invoices/queries.js';
import { getMerchant } from '../merchants/queries.js';
import { formatMoment, formatMoney } from '../format.js';
import { Decimal } from '../money.js';
import { payableSession } from '../checkout/gateway-session.js';
import { gatewayReturn, submitPayment } from '../checkout/pay.js';
import { effectiveStatus, ownsInvoice } from '../checkout/resource.js';
import { checkoutUrl } from '../checkout/urls.js';
import { sessionByToken, type CheckoutRow } from '../checkout/queries.js';
import { settleReturnedPayment, type ReturnedPayment } from '../checkout/notifications.js';
import { providerFor } from '../checkout/providers/registry.js';
import type { CustomerAction } from '../checkout/providers/provider.js';
import { csrfMatches, fromOurOrigin, registerFormParser } from './forms.js';
import { compilePublic, readLabels, readPublic, styleHash } from './templates.js';
import { publicInvoiceUrl } from '../invoices/public-url.js';

/** What a checkout token can look like (ours are 32 base64url characters): anything else is a 404 without a query. */
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;
// A gateway's payment id as a back URL carries it (Mercado Pago's are numbers).
const PAYMENT_ID = /^[0-9]{1,32}$/;
// How often the "being confirmed" page reloads itself (and looks the payment up again).
const CONFIRMING_REFRESH_SECONDS = 5;

const labelKeys = [
  'title', 'payTo', 'invoice', 'taxIncluded', 'pay', 'simulateDecline', 'sandboxNote', 'declined', 'expiresAt',
  'backToPayment', 'questions', 'completedTitle', 'completedBody', 'boleta', 'expiredTitle', 'closedTitle', 'notFoundTitle',
  'notFoundBody', 'confirmingTitle', 'confirmingBody', 'forbiddenTitle', 'forbiddenBody', 'sessionExpiredTitle', 'sessionExpiredBody', 'errorTitle', 'errorBody',
] as const;

/** What the page shows instead of the Pay button: the session's end, or an invoice closed meanwhile. */
type ClosedState = 'completed' | 'expired' | 'closed';
/** A pending session whose payment the gateway is still deciding: no Pay button, the page reloads itself. */
type PageState = ClosedState | 'open' | 'confirming';

// The words that depend on where the customer came from and goes back to: the shop's site for a
// session of POST /checkout, the invoice page for one opened there (docs/decisions.md §11).
const returnKeys = ['cancel', 'back', 'expiredBody', 'closedBody'] as const;
type ReturnLabels = Record<(typeof returnKeys)[number], string>;

type Labels = Record<(typeof labelKeys)[number], string> & {
  /** The amount's caption: to pay while open, paid once completed, plain otherwise. */
  amount: Record<PageState, string>;
  states: Record<ClosedState | 'confirming', string>;
  toStore: ReturnLabels;
  toInvoice: ReturnLabels;
};

interface Assets {
  css: string;
  /** CSP source for the one inline <style>: the page needs no 'unsafe-inline'. */
  styleHash: string;
  page: Handlebars.TemplateDelegate;
  message: Handlebars.TemplateDelegate;
  labels: Record<Locale, Labels>;
}

let assets: Assets | null = null;

/** Templates, CSS and labels, read and compiled on first use and kept. */
function load(): Assets {
  if (assets) return assets;
  // The invoice page's look, with the few rules a payment page adds.
  const css = `${readPublic('style.css')}${readPublic('checkout.css')}`;
  const labels = (file: string) =>
    readLabels<Labels>(file, labelKeys, {
      amount: ['open', 'confirming', 'completed', 'expired', 'closed'],
      states: ['confirming', 'completed', 'expired', 'closed'],
      toStore: returnKeys,
      toInvoice: returnKeys,
    });
  assets = {
    css,
    styleHash: styleHash(css),
    page: compilePublic('checkout.hbs'),
    message: compilePublic('checkout-message.hbs'),
    labels: { es: labels('checkout.es.json'), en: labels('checkout.en.json') },
  };
  return assets;
}

// scheme://host[:port] and nothing else: no character that could end a source or a directive.
const CLEAN_ORIGIN = /^https?:\/\/(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/;

/**
 * The origin a CSP source list may name, or null. The API checks these URLs' hosts already; this is
 * the second lock, for sessions stored before that check and for any gap in it.
 */
function cspOrigin(url: string): string | null {
  const origin = URL.canParse(url) ? new URL(url).origin : '';
  return CLEAN_ORIGIN.test(origin) ? origin : null;
}

/**
 * The hosted invoice page's headers. Forms may target only this site, and the URLs a form's answer
 * redirects to: browsers check a form's redirects against form-action too.
 */
function securityHeaders(reply: FastifyReply, formRedirects: string[] = []): void {
  const origins = [...new Set(formRedirects.flatMap((u) => cspOrigin(u) ?? []))].join(' ');
  reply.header(
    'Content-Security-Policy',
    `default-src 'none'; style-src ${load().styleHash}; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'${origins ? ` ${origins}` : ''}`,
  );
  reply.header('X-Frame-Options', 'DENY');
  // The token in the URL is the secret that opens the payment: never hand it to another site.
  reply.header('Referrer-Policy', 'no-referrer');
  reply.header('X-Content-Type-Options', 'nosniff');
  reply.header('Cache-Control', 'no-store');
  reply.header('X-Robots-Tag', 'noindex, nofollow');
}

/** The locale for a page with no session behind it: the browser's, when it prefers English. */
function browserLocale(request: FastifyRequest): Locale {
  const header = request.headers['accept-language'];
  const first = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim().toLowerCase() ?? '';
  return first.startsWith('en') ? 'en' : 'es';
}

type MessageKind = 'notFound' | 'forbidden' | 'sessionExpired' | 'error';

function sendMessagePage(reply: FastifyReply, status: number, locale: Locale, kind: MessageKind, backHref: string | null = null): FastifyReply {
  const a = load();
  const L = a.labels[locale];
  const html = a.message({ lang: locale, css: a.css, title: L[`${kind}Title`], message: L[`${kind}Body`], backHref, backLabel: L.backToPayment });
  securityHeaders(reply);
  return reply.code(status).type('text/html; charset=utf-8').send(html);
}

function redirect(reply: FastifyReply, to: string): FastifyReply {
  securityHeaders(reply);
  // The shop's URL as the URL parser writes it: percent-encoded, no CR/LF. Node refuses a header
  // value holding those or characters past Latin-1, which would turn a payment already recorded
  // into a 500 page for the customer.
  return reply.code(303).header('Location', new URL(to).href).send();
}

/**
 * The page of the session. `confirming`: the customer is back from the gateway with a payment it
 * is still deciding, so an open session shows that instead of a second Pay button.
 */
async function renderPage(ctx: AppContext, s: CheckoutRow, confirming = false): Promise<string | null> {
  const [merchant, invoice] = await Promise.all([getMerchant(ctx.sql, s.merchant_id), getInvoiceRow(ctx.sql, s.merchant_id, s.invoice_id)]);
  if (!merchant || !invoice) return null;
  const a = load();
  const L = a.labels[s.locale];
  const status = effectiveStatus(s, clock.now());
  const state: PageState =
    status !== 'pending' ? status : !(OPEN_STATUSES as readonly string[]).includes(invoice.status) ? 'closed' : confirming ? 'confirming' : 'open';
  const base = checkoutUrl(ctx.config.publicBaseUrl, s.token);
  const amount = formatMoney(s.amount, s.currency, s.locale);
  const closed = state === 'open' || state === 'confirming' ? null : state;
  const back = ownsInvoice(invoice) ? L.toStore : L.toInvoice;
  return a.page({
    lang: s.locale,
    css: a.css,
    labels: L,
    merchant: { name: merchant.name, email: merchant.email },
    description: s.description,
    invoiceNumber: invoice.invoice_number,
    amount,
    amountLabel: L.amount[state],
    // An exempt invoice, or one at 0 %, has no tax to include.
    taxIncluded: new Decimal(invoice.tax_total).gt(0),
    open: state === 'open',
    confirming: state === 'confirming',
    refreshSeconds: state === 'confirming' ? CONFIRMING_REFRESH_SECONDS : null,
    state,
    declined: s.payment_status === 'failed',
    csrfToken: s.csrf_token,
    payAction: `${base}/pay`,
    // A redirect gateway's session: Pay submits straight to the gateway's page.
    gateway: s.provider_redirect,
    declineAction: providerFor(s.provider).simulatesDecline ? `${base}/decline` : null,
    cancelHref: `${base}/cancel`,
    cancelLabel: back.cancel,
    expiresAt: formatMoment(s.expires_at, s.locale, merchant.timezone),
    stateLabel: closed ? L.states[closed] : state === 'confirming' ? L.states.confirming : '',
    stateTitle: closed ? L[`${closed}Title`] : state === 'confirming' ? L.confirmingTitle : '',
    stateBody: closed === 'completed' ? L.completedBody : closed ? back[`${closed}Body`] : state === 'confirming' ? L.confirmingBody : '',
    returnHref: closed === 'completed' ? s.success_url : s.cancel_url,
    returnLabel: back.back,
    // A paid sale's boleta is the customer's tax document (docs/decisions.md §20): its PDF is linked here.
    boletaHref: closed === 'completed' && isBoletaType(invoice.dte_type) ? `${publicInvoiceUrl(ctx.config.publicBaseUrl, invoice.public_token)}/pdf` : null,
  });
}

/**
 * The hosted checkout page `GET /checkout/:token`, its Pay and (sandbox) decline forms and its
 * cancel link: HTML for people, never the API's JSON envelope, even for a 404 or a failure.
 */
export function registerCheckoutPages(app: FastifyInstance, ctx: AppContext): void {
  const deps = { urls: invoiceUrls(ctx.config), boss: ctx.boss, secrets: ctx.secrets };

  async function submit(request: FastifyRequest<{ Params: { token: string } }>, reply: FastifyReply, action: CustomerAction) {
    const { token } = request.params;
    const locale = browserLocale(request);
    const s = TOKEN.test(token) ? await sessionByToken(ctx.sql, token) : null;
    // A redirect gateway's session is paid at the gateway: these forms are not its page's.
    if (!s || s.provider_redirect || (action === 'decline' && !providerFor(s.provider).simulatesDecline)) {
      return sendMessagePage(reply, 404, locale, 'notFound');
    }
    const page = checkoutUrl(ctx.config.publicBaseUrl, token);
    if (!fromOurOrigin(request, ctx.config.publicBaseUrl) || !csrfMatches(request.body, s.csrf_token)) {
      return sendMessagePage(reply, 403, s.locale, 'forbidden', page);
    }
    const outcome = await submitPayment(ctx.sql, token, action, deps);
    if (outcome.kind === 'paid') return redirect(reply, outcome.session.success_url);
    if (outcome.kind === 'declined') return redirect(reply, outcome.session.cancel_url);
    // Paid already (a double click, another tab): the customer lands where the first click did.
    const current = await sessionByToken(ctx.sql, token);
    return redirect(reply, action === 'pay' && current?.status === 'completed' ? current.success_url : page);
  }

  app.register(
    async (pages) => {
      registerFormParser(pages);
      pages.setErrorHandler((err, request, reply) => {
        const appErr = toAppError(err);
        if (appErr.status >= 500) request.log.error({ err }, 'checkout page failed');
        const token = (request.params as { token?: string } | undefined)?.token;
        const back = token && TOKEN.test(token) ? checkoutUrl(ctx.config.publicBaseUrl, token) : null;
        const kind: MessageKind = appErr.status === 404 ? 'notFound' : appErr.status === 410 ? 'sessionExpired' : 'error';
        return sendMessagePage(reply, appErr.status, browserLocale(request), kind, kind === 'notFound' ? null : back);
      });
      pages.setNotFoundHandler((request, reply) => sendMessagePage(reply, 404, browserLocale(request), 'notFound'));

      pages.get<{ Params: { token: string }; Querystring: Record<string, string | string[] | undefined> }>('/:token', async (request, reply) => {
        const { token } = request.params;
        let found = TOKEN.test(token) ? await sessionByToken(ctx.sql, token) : null;
        // Back from a gateway's page with the payment it made (Mercado Pago's back URL carries
        // payment_id): looked up (or found recorded) before anything is shown, and the customer
        // sent on as a Webpay return sends them (docs/decisions.md §11): paid → success_url, declined →
        // cancel_url with the session still payable, undecided → this page, confirming, reloading
        // itself. A payment id that proves nothing shows the page as it stands.
        const paymentId = request.query.payment_id;
        let returned: ReturnedPayment = null;
        if (found && typeof paymentId === 'string' && PAYMENT_ID.test(paymentId)) {
          returned = await settleReturnedPayment(ctx.sql, ctx.secrets, found, paymentId, deps);
          if (returned) found = await sessionByToken(ctx.sql, token);
        }
        if (found && returned) {
          const now = effectiveStatus(found, clock.now());
          if (now === 'completed') return redirect(reply, found.success_url);
          if (now === 'pending' && returned === 'failed') return redirect(reply, found.cancel_url);
        }
        const s = found && (await payableSession(ctx.sql, found, { publicBase: ctx.config.publicBaseUrl, secrets: ctx.secrets }));
        const html = s ? await renderPage(ctx, s, returned === 'pending') : null;
        if (!s || !html) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        securityHeaders(reply, [s.success_url, s.cancel_url, ...(s.provider_redirect ? [s.provider_redirect.url] : [])]);
        return reply.code(200).type('text/html; charset=utf-8').send(html);
      });

      pages.post<{ Params: { token: string } }>('/:token/pay', (request, reply) => submit(request, reply, 'pay'));
      pages.post<{ Params: { token: string } }>('/:token/decline', (request, reply) => submit(request, reply, 'decline'));

      // docs/decisions.md §16: the customer back from Webpay's form, by GET. token_ws alone: commit it;
      // TBK_TOKEN (abandoned, or an error page left) or only TBK_ORDEN_COMPRA (a timeout there):
      // nothing was paid. Each lands where the sandbox's Pay or cancel would.
      pages.get<{ Params: { token: string }; Querystring: Record<string, string | string[] | undefined> }>('/:token/return', async (request, reply) => {
        const { token } = request.params;
        const one = (v: string | string[] | undefined) => (typeof v === 'string' && v.length > 0 && v.length <= 128 ? v : null);
        const query = request.query;
        const tbkToken = one(query.TBK_TOKEN);
        const buyOrder = one(query.TBK_ORDEN_COMPRA);
        const back = {
          sessionId: one(query.token_ws),
          abandoned: tbkToken || buyOrder ? { sessionId: tbkToken, reference: buyOrder } : null,
        };
        const outcome = TOKEN.test(token) ? await gatewayReturn(ctx.sql, token, back, deps) : null;
        if (!outcome) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        if (outcome.kind === 'paid') return redirect(reply, outcome.session.success_url);
        if (outcome.kind === 'declined' || outcome.kind === 'abandoned') return redirect(reply, outcome.session.cancel_url);
        // Returned already (a reload, a second tab): the customer lands where the first return did.
        const current = await sessionByToken(ctx.sql, token);
        if (!current) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        if (current.status === 'completed') return redirect(reply, current.success_url);
        return redirect(reply, current.payment_status === 'failed' && current.status === 'pending' ? current.cancel_url : checkoutUrl(ctx.config.publicBaseUrl, token));
      });

      // A link, so a plain GET: it changes nothing, only sends the customer back to the store.
      pages.get<{ Params: { token: string } }>('/:token/cancel', async (request, reply) => {
        const { token } = request.params;
        const s = TOKEN.test(token) ? await sessionByToken(ctx.sql, token) : null;
        if (!s) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        return redirect(reply, s.cancel_url);
      });
    },
    { prefix: '/checkout' },
  );
}
