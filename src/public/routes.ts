import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Handlebars from 'handlebars';
import type { AppContext } from '../context.js';
import { clock } from '../clock.js';
import { emitEvent } from '../events/emit.js';
import { toAppError } from '../http/envelope.js';
import { apiBase } from '../http/urls.js';
import { getInvoice, type InvoiceWithItems } from '../invoices/queries.js';
import type { Locale } from '../invoices/schemas.js';
import { invoiceResource } from '../invoices/service.js';
import { getMerchant, type MerchantRow } from '../merchants/queries.js';
import { Decimal } from '../money.js';
import { formatDate, formatMoney, formatQuantityFor } from '../format.js';
import { pdfHeaders } from '../pdf/routes.js';
import { invoicePdf } from '../pdf/store.js';
import { formatPercent, formatPrice, formatRateNumber } from '../pdf/text.js';
import * as q from './queries.js';
import { compilePublic, readLabels, readPublic, styleHash } from './templates.js';

/** What a public token can look like (ours are 32 base64url characters): anything else is a 404 without a query. */
const TOKEN = /^[A-Za-z0-9_-]{16,128}$/;

const labelKeys = [
  'invoice', 'draft', 'from', 'billTo', 'rut', 'issueDate', 'dueDate', 'status', 'reference', 'description', 'quantity',
  'unitPrice', 'lineTotal', 'subtotal', 'tax', 'taxExempt', 'taxInclusive', 'total', 'amountPaid', 'balanceDue',
  'exchangeRate', 'downloadPdf', 'questions', 'notFoundTitle', 'notFoundBody', 'errorTitle', 'errorBody',
  'tooManyTitle', 'tooManyBody',
] as const;

type PublicLabels = Record<(typeof labelKeys)[number], string> & { statuses: Record<string, string> };

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
  const labels = (file: string) => readLabels<PublicLabels>(file, labelKeys, { statuses: [] });
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

function sendMessagePage(reply: FastifyReply, status: number, locale: Locale, kind: 'notFound' | 'error' | 'tooMany'): FastifyReply {
  const a = load();
  const L = a.labels[locale];
  const html = a.notFound({
    lang: locale,
    css: a.css,
    title: L[`${kind}Title`],
    message: L[`${kind}Body`],
  });
  securityHeaders(reply, true);
  return reply.code(status).type('text/html; charset=utf-8').send(html);
}

/** The plain page a browser gets when its address is over the hosted pages' limit. */
export function sendTooManyPage(request: FastifyRequest, reply: FastifyReply, retryAfterSeconds: number): FastifyReply {
  reply.header('Retry-After', String(retryAfterSeconds));
  return sendMessagePage(reply, 429, browserLocale(request), 'tooMany');
}

function invoicePage(invoice: InvoiceWithItems, merchant: MerchantRow, publicBase: string): string {
  const a = load();
  const locale: Locale = invoice.locale === 'en' ? 'en' : 'es';
  const L = a.labels[locale];
  const money = (amount: string) => formatMoney(amount, invoice.currency, locale);
  const balance = new Decimal(invoice.total).minus(invoice.amount_paid);
  const open = invoice.status !== 'paid' && invoice.status !== 'cancelled';
  return a.invoice({
    lang: locale,
    css: a.css,
    labels: L,
    merchant: { name: merchant.name, email: merchant.email },
    number: invoice.invoice_number ?? '',
    status: invoice.status,
    statusLabel: L.statuses[invoice.status] ?? invoice.status,
    client: { name: invoice.client_name, email: invoice.client_email, rut: invoice.client_rut },
    issueDate: formatDate(invoice.issue_date, locale),
    dueDate: formatDate(invoice.due_date, locale),
    reference: invoice.external_reference,
    exchangeRate:
      invoice.exchange_rate !== null && invoice.base_currency
        ? `1 ${invoice.currency} = ${formatRateNumber(invoice.exchange_rate, locale)} ${invoice.base_currency}`
        : null,
    items: invoice.items.map((it) => ({
      description: it.description,
      quantity: formatQuantityFor(it.quantity, locale),
      unitPrice: formatPrice(it.unit_price, invoice.currency, locale),
      lineTotal: money(it.line_total),
    })),
    subtotal: money(invoice.subtotal),
    taxLabel: invoice.is_tax_exempt ? L.taxExempt : `${L.tax} (${formatPercent(invoice.tax_rate, locale)})`,
    taxTotal: money(invoice.tax_total),
    taxInclusive: invoice.tax_inclusive && !invoice.is_tax_exempt,
    total: money(invoice.total),
    amountPaid: money(invoice.amount_paid),
    balanceDue: open && balance.gt(0) ? money(balance.toFixed()) : null,
    pdfUrl: `${publicBase}/i/${invoice.public_token}/pdf`,
  });
}

/**
 * Records a view and loads what the page shows, in one transaction: the first view moves
 * sent → viewed and emits `invoice.viewed`; every view sets `last_viewed_at`. Null for an
 * unknown token or a draft (a draft has no public page).
 */
async function viewInvoice(ctx: AppContext, token: string): Promise<{ invoice: InvoiceWithItems; merchant: MerchantRow } | null> {
  const urls = { apiBase: apiBase(ctx), publicBase: ctx.config.publicBaseUrl };
  return ctx.sql.begin(async (tx) => {
    const now = clock.now();
    const firstView = await q.markViewed(tx, token, now);
    const target = firstView ?? (await q.touchViewed(tx, token, now));
    if (!target) return null;
    const invoice = await getInvoice(tx, target.merchant_id, target.id);
    const merchant = await getMerchant(tx, target.merchant_id);
    if (!invoice || !merchant) return null;
    if (firstView) await emitEvent(tx, ctx.boss, target.merchant_id, 'invoice.viewed', { object: invoiceResource(invoice, urls) });
    return { invoice, merchant };
  });
}

/** Reads without recording a view (HEAD requests: link checkers, prefetchers). */
async function peekInvoice(ctx: AppContext, token: string): Promise<{ invoice: InvoiceWithItems; merchant: MerchantRow } | null> {
  const target = await q.invoiceByToken(ctx.sql, token);
  if (!target || target.status === 'draft') return null;
  const [invoice, merchant] = await Promise.all([getInvoice(ctx.sql, target.merchant_id, target.id), getMerchant(ctx.sql, target.merchant_id)]);
  return invoice && merchant ? { invoice, merchant } : null;
}

/**
 * The hosted invoice page `GET /i/:token` and its PDF `GET /i/:token/pdf`: HTML for people,
 * never the API's JSON envelope, even for a 404 or a failure.
 */
export function registerPublicPages(app: FastifyInstance, ctx: AppContext): void {
  app.register(
    async (pages) => {
      pages.setErrorHandler((err, request, reply) => {
        const appErr = toAppError(err);
        if (appErr.status >= 500) request.log.error({ err }, 'public page failed');
        const status = appErr.status >= 500 ? appErr.status : 404;
        return sendMessagePage(reply, status, browserLocale(request), status === 404 ? 'notFound' : 'error');
      });
      pages.setNotFoundHandler((request, reply) => sendMessagePage(reply, 404, browserLocale(request), 'notFound'));

      pages.get<{ Params: { token: string } }>('/:token', async (request, reply) => {
        const { token } = request.params;
        if (!TOKEN.test(token)) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        const found = request.method === 'HEAD' ? await peekInvoice(ctx, token) : await viewInvoice(ctx, token);
        if (!found) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        securityHeaders(reply, true);
        return reply.code(200).type('text/html; charset=utf-8').send(invoicePage(found.invoice, found.merchant, ctx.config.publicBaseUrl));
      });

      pages.get<{ Params: { token: string } }>('/:token/pdf', async (request, reply) => {
        const { token } = request.params;
        if (!TOKEN.test(token)) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        const target = await q.invoiceByToken(ctx.sql, token);
        if (!target || target.status === 'draft') return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        const pdf = await invoicePdf(ctx.sql, target.merchant_id, target.id, ctx.config.publicBaseUrl);
        if (!pdf || pdf.draft) return sendMessagePage(reply, 404, browserLocale(request), 'notFound');
        // No CSP on the document itself: browsers' built-in PDF viewers run under the document's policy.
        securityHeaders(reply, false);
        return reply.code(200).headers(pdfHeaders(pdf)).send(pdf.content);
      });
    },
    { prefix: '/i' },
  );
}
