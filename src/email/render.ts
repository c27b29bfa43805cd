import { readFileSync } from 'node:fs';
import path from 'node:path';
import Handlebars from 'handlebars';
import { templatesDir } from '../paths.js';
import type { Locale } from '../invoices/schemas.js';
import type { LegalProfile } from '../merchants/legal-profile.js';
import type { EmailKind } from '../email-queue/queries.js';

export type DisabledReason = 'consecutive_failures' | 'gone';

interface KindStrings {
  subject: string;
  greeting: string;
  body: string;
  /** The button's text: what the linked page lets the reader do. */
  cta: string;
  /** The button's text when the merchant can take the payment on that page (docs/decisions.md §11). */
  cta_pay?: string;
}

/** The document an invoice's e-mails name: a consumer's boleta (39, 41) is no factura. */
export type DocumentNoun = 'invoice' | 'boleta';

type Strings = Record<EmailKind, KindStrings> & {
  footer: string;
  issuer: string;
  reasons: Record<DisabledReason, string>;
  /** `{{document}}` in a phrase, lower case; `{{Document}}` opens a sentence with it. */
  documents: Record<DocumentNoun, string>;
};

export interface RenderedEmail {
  subject: string;
  html: string;
  text: string;
}

const dir = path.join(templatesDir, 'email');
// The HTML layout escapes every value; the plain-text one must not (it is not HTML).
const htmlLayout = Handlebars.compile(readFileSync(path.join(dir, 'layout.html.hbs'), 'utf8'), { strict: true });
const textLayout = Handlebars.compile(readFileSync(path.join(dir, 'layout.text.hbs'), 'utf8'), { strict: true, noEscape: true });
const strings: Record<Locale, Strings> = {
  es: JSON.parse(readFileSync(path.join(dir, 'es.json'), 'utf8')),
  en: JSON.parse(readFileSync(path.join(dir, 'en.json'), 'utf8')),
};
const compiled = new Map<string, HandlebarsTemplateDelegate>();

/** Interpolates a phrase as plain text: the layouts escape it where the output is HTML. */
function phrase(template: string, vars: Record<string, string>): string {
  let fn = compiled.get(template);
  if (!fn) {
    fn = Handlebars.compile(template, { strict: true, noEscape: true });
    compiled.set(template, fn);
  }
  return fn(vars);
}

export interface EmailVars {
  merchant: string;
  merchant_email: string;
  url: string;
  client?: string;
  number?: string;
  /** A credit or debit note's number (CN-000001); `number` stays its invoice's. */
  note?: string;
  total?: string;
  due_date?: string;
  amount?: string;
  paid_on?: string;
  endpoint_url?: string;
  endpoint_id?: string;
  reason?: string;
}

/** Why an endpoint was disabled, in the merchant's words: a phrase of the endpoint_disabled body. */
export function disabledReason(locale: Locale, reason: DisabledReason, failures: number): string {
  return phrase(strings[locale].reasons[reason], { failures: String(failures) });
}

export interface EmailOptions {
  /** Replaces the body (a reminder's custom_message); blank lines split paragraphs. */
  customMessage?: string | null;
  /** The merchant takes payments on the hosted page, so the button may say "pay". */
  canPay?: boolean;
  /** The issuer's legal profile, printed under the footer when the merchant has one. */
  issuer?: LegalProfile | null;
  /** What the invoice is to its reader; a factura (an invoice) unless said. */
  document?: DocumentNoun;
}

export function renderEmail(kind: EmailKind, locale: Locale, vars: EmailVars, opts: EmailOptions = {}): RenderedEmail {
  const s = strings[locale];
  const noun = s.documents[opts.document ?? 'invoice'];
  const v = {
    client: '',
    number: '',
    note: '',
    total: '',
    due_date: '',
    amount: '',
    paid_on: '',
    endpoint_url: '',
    endpoint_id: '',
    reason: '',
    document: noun,
    Document: noun.charAt(0).toUpperCase() + noun.slice(1),
    ...vars,
  };
  const body = opts.customMessage ?? phrase(s[kind].body, v);
  const view = {
    lang: locale,
    subject: phrase(s[kind].subject, v),
    merchant: vars.merchant,
    greeting: phrase(s[kind].greeting, v),
    paragraphs: body.split(/\r?\n\s*\r?\n/).map((p) => p.trim()).filter(Boolean),
    cta: phrase((opts.canPay ? s[kind].cta_pay : undefined) ?? s[kind].cta, v),
    url: vars.url,
    footer: phrase(s.footer, v),
    issuer: opts.issuer ? phrase(s.issuer, opts.issuer) : null,
  };
  return { subject: view.subject, html: htmlLayout(view), text: textLayout(view).trim() + '\n' };
}
