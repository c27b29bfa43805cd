import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Handlebars from 'handlebars';
import type { AppContext } from '../http/context.js';
import { toAppError } from '../http/envelope.js';
import { invoiceUrls } from '../http/urls.js';
import { publicInvoiceUrl } from '../invoices/public-url.js';
import { getInvoiceWithItems, type InvoiceWithItems } from '../invoices/queries.js';
import type { Locale } from '../invoices/schemas.js';
import { viewInvoice as recordView } from '../invoices/transitions.js';
import { chargingMerchant, type ChargingMerchant } from '../checkout/credentials.js';
import { checkoutUrl } from '../checkout/urls.js';
import { invoiceCheckout } from '../checkout/invoice-session.js';
import { pdfCopy, pdfHeaders } from '../pdf/routes.js';
import { invoiceCopyPdf, invoicePdf } from '../pdf/store.js';
import { fromOurOrigin, invoicePayToken, invoicePayTokenMatches, registerFormParser } from './forms.js';
import { invoiceView, labelKeys, type PublicLabels } from './invoice-view.js';
import * as q from './queries.js';
import { compilePublic, readLabels, readPublic, styleHash } from './templates.js';
import { SAMPLE_TOKEN } from '../webhooks/samples.js';

/** What a public token can look like (ours are 32 base64url characters): anything else is a 404 without a query. */
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;

interface Assets {
  css: string;
  /** CSP source for the one inline <style>: the page needs no 'unsafe-inline'. */
  styleHash: string;
  invoice: Handlebars.TemplateDelegate;
  notFound: Handlebars.TemplateDelegate;
  labels: Record<Locale, PublicLabels>;
}

let assets: Assets | null = null;

/** Templates, CSS and labels, read and compiled on first use and kept. */
function load(): Assets {
  if (assets) return assets;
  const css = readPublic('style.css');
  const labels = (file: string) => readLabels<PublicLabels>(file, labelKeys, { statuses: [], boleta: [] });
  assets = {
    css,
    styleHash: styleHash(css),
    invoice: compilePublic('invoice.hbs'),
    notFound: compilePublic('not-found.hbs'),
    labels: { es: labels('es.json'), en: labels('en.json') },
  };
  return assets;
}

function securityHeaders(reply: FastifyReply, html: boolean): void {
  const a = load();
  if (html) {
    reply.header(
      'Content-Security-Policy',
      `default-src 'none'; style-src ${a.styleHash}; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`,
    );
  }
  reply.header('X-Frame-Options', 'DENY');
  // The token in the URL is the secret that opens the invoice: never hand it to another site.
  reply.header('Referrer-Policy', 'no-referrer');
  reply.header('X-Content-Type-Options', 'nosniff');
  reply.header('Cache-Control', 'no-store');
  reply.header('X-Robots-Tag', 'noindex, nofollow');
}

/** The locale for a page with no invoice behind it: the browser's, when it prefers English. */
function browserLocale(request: FastifyRequest): Locale {
  const header = request.headers['accept-language'];
  const first = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim().toLowerCase() ?? '';
  return first.startsWith('en') ? 'en' : 'es';
}

type MessageKind = 'notFound' | 'error' | 'tooMany' | 'forbidden' | 'payFailed';

function sendMessagePage(reply: FastifyReply, status: number, locale: Locale, kind: MessageKind, backHref: string | null = null): FastifyReply {
  const a = load();
  const L = a.labels[locale];
  const html = a.notFound({
    lang: locale,
    css: a.css,
    title: L[`${kind}Title`],
    message: L[`${kind}Body`],
    backHref,
    backLabel: L.backToInvoice,
  });
  securityHeaders(reply, true);
  return reply.code(status).type('text/html; charset=utf-8').send(html);
}

/** The plain page a browser gets when its address is over the hosted pages' limit. */
export function sendTooManyPage(request: FastifyRequest, reply: FastifyReply, retryAfterSeconds: number): FastifyReply {
  reply.header('Retry-After', String(retryAfterSeconds));
  return sendMessagePage(reply, 429, browserLocale(request), 'tooMany');
}

/** What `/i/sample` and every link of a test event under it say: no merchant's data. */
const SAMPLE_PAGE: Record<Locale, { title: string; message: string }> = {
  es: {
    title: 'Ejemplo de un evento de prueba',
    message: 'Este enlace viene de un evento de prueba de webhooks (is_test: true). Sus datos son inventados: no hay una factura, un pago ni un cliente reales detrás.',
  },
  en: {
    title: 'Sample from a test event',
    message: 'This link comes from a webhook test event (is_test: true). Its data are made up: no real invoice, payment or client is behind it.',
  },
};

const SAMPLE_PATH = new RegExp(`^/i/${SAMPLE_TOKEN}(?:[/?#]|$)`);

function isSamplePath(request: FastifyRequest): boolean {
  return (request.method === 'GET' || request.method === 'HEAD') && SAMPLE_PATH.test(request.url);
}

function sendSamplePage(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const a = load();
  const text = SAMPLE_PAGE[browserLocale(request)];
  securityHeaders(reply, true);
  return reply.code(200).type('text/html; charset=utf-8').send(a.notFound({ lang: browserLocale(request), css: a.css, ...text, backHref: null }));
}

function invoicePage(ctx: AppContext, invoice: InvoiceWithItems, merchant: ChargingMerchant): string {
  const a = load();
  const page = publicInvoiceUrl(ctx.config.publicBaseUrl, invoice.public_token);
  const payForm = { action: `${page}/pay`, csrfToken: invoicePayToken(ctx.secrets, invoice.public_token) };
  return a.invoice({ css: a.css, ...invoiceView(invoice, merchant, a.labels[invoice.locale], `${page}/pdf`, payForm) });
}

function redirect(reply: FastifyReply, to: string): FastifyReply {
  securityHeaders(reply, false);
  return reply.code(303).header('Location', to).send();
}

/**
 * Records a view (transitions.ts: the first one moves sent → viewed) and loads what the page
 * shows, in one transaction. Null for an unknown token or a draft.
 */
async function viewInvoice(ctx: AppContext, token: string): Promise<{ invoice: InvoiceWithItems; merchant: ChargingMerchant } | null> {
  return ctx.sql.begin(async (tx) => {
    const invoice = await recordView(tx, token, { urls: invoiceUrls(ctx.config), boss: ctx.boss });
    const merchant = invoice && (await chargingMerchant(tx, invoice.merchant_id));
    return invoice && merchant ? { invoice, merchant } : null;
  });
}

/** Reads without recording a view (HEAD requests: link checkers, prefetchers). */
async function peekInvoice(ctx: AppContext, token: string): Promise<{ invoice: InvoiceWithItems; merchant: ChargingMerchant } | null> {
  const target = await q.invoiceByToken(ctx.sql, token);
  if (!target || target.status === 'draft') return null;
  const [invoice, merchant] = await Promise.all([getInvoiceWithItems(ctx.sql, target.merchant_id, target.id), chargingMerchant(ctx.sql, target.merchant_id)]);
  return invoice && merchant ? { invoice, merchant } : null;
}

/**
 * The hosted invoice page `GET /i/:token` and its PDF `GET /i/:token/pdf`: HTML for people,
 * never the API's JSON envelope, even for a 404 or a failure.
 */
export function registerPublicPages(app: FastifyInstance, ctx: AppContext): void {
  const deps = { urls: invoiceUrls(ctx.config), boss: ctx.boss, ttlSeconds: ctx.config.CHECKOUT_TTL_SECONDS, secrets: ctx.secrets };

  app.register(
    async (pages) => {
      registerFormParser(pages);
      pages.setErrorHandler((err, request, reply) => {
        const appErr = toAppError(err);
        if (appErr.status >= 500) request.log.error({ err }, 'public page failed');
        const token = (request.params as { token?: string } | undefined)?.token;
        // The Pay button's failures (a gateway down or refusing) lead back to the invoice, to try again.
        if (request.method === 'POST' && token && TOKEN.test(token)) {
          return sendMessagePage(reply, appErr.status, browserLocale(request), 'payFailed', publicInvoiceUrl(ctx.config.publicBaseUrl, token));
        }
        const status = appErr.status >= 500 ? appErr.status : 404;
        return sendMessagePage(reply, status, browserLocale(request), status === 404 ? 'notFound' : 'error');
      });
      // A test event's links (src/webhooks/samples.ts) are `/i/sample` and paths under it: the
      // sample page, with no route of their own and no token looked up.
      pages.setNotFoundHandler((request, reply) =>
        isSamplePath(request) ? sendSamplePage(request, reply) : sendMessagePage(reply, 404, browserLocale(request), 'notFound'),
      );

      pages.get<{ Params: { token: string } }>('/:token', async (request, reply) => {
        const { token } = request.params;
        if (isSamplePath(request)) return sendSamplePage(request, reply);
        if (!TOKEN.test(token)) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        const found = request.method === 'HEAD' ? await peekInvoice(ctx, token) : await viewInvoice(ctx, token);
        if (!found) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        securityHeaders(reply, true);
        return reply.code(200).type('text/html; charset=utf-8').send(invoicePage(ctx, found.invoice, found.merchant));
      });

      // docs/decisions.md §11: Pay opens (or reuses) the invoice's checkout session and sends the customer
      // there; an invoice that cannot be paid now sends them back to its page, which says why.
      pages.post<{ Params: { token: string } }>('/:token/pay', async (request, reply) => {
        const { token } = request.params;
        const target = TOKEN.test(token) ? await q.invoiceByToken(ctx.sql, token) : null;
        if (!target || target.status === 'draft') return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        const page = publicInvoiceUrl(ctx.config.publicBaseUrl, token);
        if (!fromOurOrigin(request, ctx.config.publicBaseUrl) || !invoicePayTokenMatches(ctx.secrets, request.body, token)) {
          return sendMessagePage(reply, 403, target.locale, 'forbidden', page);
        }
        const outcome = await invoiceCheckout(ctx.sql, target.merchant_id, target.id, page, deps);
        return redirect(reply, outcome.kind === 'session' ? checkoutUrl(ctx.config.publicBaseUrl, outcome.session.token) : page);
      });

      // `?copy=cedible`: a factura's cedible copy, as the API's route gives it; one without a factura is not found.
      pages.get<{ Params: { token: string }; Querystring: { copy?: unknown } }>('/:token/pdf', async (request, reply) => {
        const { token } = request.params;
        const copy = request.query.copy === undefined ? null : pdfCopy.safeParse(request.query.copy);
        if (!TOKEN.test(token) || (copy && !copy.success)) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        const target = await q.invoiceByToken(ctx.sql, token);
        if (!target || target.status === 'draft') return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        const pdf = copy?.data
          ? await invoiceCopyPdf(ctx.sql, target.merchant_id, target.id, copy.data, ctx.config.publicBaseUrl)
          : await invoicePdf(ctx.sql, target.merchant_id, target.id, ctx.config.publicBaseUrl);
        if (!pdf || pdf.draft) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        // No CSP on the document itself: browsers' built-in PDF viewers run under the document's policy.
        securityHeaders(reply, false);
        return reply.code(200).headers(pdfHeaders(pdf)).send(pdf.content);
      });
    },
    { prefix: '/i' },
  );
}
