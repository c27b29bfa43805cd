import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Decimal } from '../money.js';
import { formatMoney } from '../format.js';
import { templatesDir } from '../paths.js';
import type { Locale } from '../invoices/schemas.js';
import { printable } from './fonts.js';

const labelKeys = [
  'title',
  'creditNote',
  'debitNote',
  'number',
  'draft',
  'draftNotice',
  'from',
  'billTo',
  'consumer',
  'internalNumber',
  'email',
  'rut',
  'phone',
  'address',
  'issuerRut',
  'giro',
  'comuna',
  'ciudad',
  'issueDate',
  'dueDate',
  'reference',
  'references',
  'referenceType',
  'referenceFolio',
  'referenceDate',
  'referenceReason',
  'description',
  'quantity',
  'unitPrice',
  'lineTotal',
  'discount',
  'exemptLine',
  'subtotal',
  'globalDiscount',
  'netAmount',
  'exemptAmount',
  'tax',
  'taxExempt',
  'taxInclusive',
  'total',
  'currency',
  'exchangeRate',
  'viewAndPayOnline',
  'viewOnline',
  'viewDocumentOnline',
  'page',
  'of',
  'filenameDraft',
] as const;

// The SII's names of the documents a reference can point to, by their TpoDocRef code.
const referenceCodes = ['801', '802', '803', 'HES', 'HEM', 'SET', '33', '34', '52', '56', '61'] as const;

export type PdfLabels = Record<(typeof labelKeys)[number], string> & { referenceTypes: Record<string, string> };

let cache: Record<Locale, PdfLabels> | null = null;

function load(locale: Locale): PdfLabels {
  const file = path.join(templatesDir, 'pdf', `${locale}.json`);
  const raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  const types = (raw.referenceTypes ?? {}) as Record<string, unknown>;
  const missing = [
    ...labelKeys.filter((k) => typeof raw[k] !== 'string'),
    ...referenceCodes.filter((c) => typeof types[c] !== 'string').map((c) => `referenceTypes.${c}`),
  ];
  if (missing.length > 0) throw new Error(`${file} lacks the labels ${missing.join(', ')}`);
  const referenceTypes = Object.fromEntries(referenceCodes.map((c) => [c, types[c] as string]));
  return { ...(Object.fromEntries(labelKeys.map((k) => [k, raw[k]])) as Record<(typeof labelKeys)[number], string>), referenceTypes };
}

/** The PDF's labels, read from templates/pdf/{es,en}.json on first use and kept. */
export function pdfLabels(locale: Locale): PdfLabels {
  cache ??= { es: load('es'), en: load('en') };
  return cache[locale] ?? cache.es;
}

/**
 * Text the embedded font can show: every character it has prints as written; a letter it lacks
 * loses its accents when the plain letter is there; invisible format characters (a soft hyphen,
 * a zero-width joiner) go; typographic spaces and tabs become spaces; anything else becomes "?".
 * Without this, a character outside the font would print as an empty box and vanish from the
 * text a reader copies or searches.
 */
export function pdfText(value: string): string {
  let out = '';
  for (const ch of value.normalize('NFC')) {
    const code = ch.codePointAt(0)!;
    if (ch === '\n') {
      out += ch;
    } else if (/[\t\r\v\f\u0085\u2028\u2029]/.test(ch)) {
      out += ' ';
    } else if (code >= 0x20 && printable(code)) {
      out += ch;
    } else if (/\p{Default_Ignorable_Code_Point}/u.test(ch)) {
      continue;
    } else {
      const plain = ch.normalize('NFKD').replace(/\p{M}/gu, '');
      out += plain !== '' && [...plain].every((c) => printable(c.codePointAt(0)!)) ? plain : '?';
    }
  }
  return out;
}

/** A copy of an issued document other than the original: the SII's "cedible" copy of a factura. */
export type PdfCopy = 'cedible';

/** The page a document prints on: A4, or a receipt printer's 80 mm roll (a boleta's ticket, docs/decisions.md §20). */
export type PdfFormat = 'a4' | 'ticket';

const intlLocale: Record<Locale, string> = { es: 'es-CL', en: 'en-US' };
const currencyDigits = (currency: string) => (currency === 'CLP' ? 0 : currency === 'CLF' ? 4 : 2);

/**
 * A unit price for people: like formatMoney, but a price with more decimals than its currency
 * (they may carry up to 4) keeps them, so the line still adds up on paper.
 */
export function formatPrice(amount: string, currency: string, locale: Locale): string {
  const digits = currencyDigits(currency);
  const places = new Decimal(amount).decimalPlaces() ?? 0;
  if (places <= digits) return formatMoney(amount, currency, locale);
  const opts = { minimumFractionDigits: places, maximumFractionDigits: places };
  if (locale === 'es' && currency === 'CLP') {
    return new Intl.NumberFormat('es-CL', { ...opts, style: 'currency', currency: 'CLP' }).format(amount as never);
  }
  return `${currency} ${new Intl.NumberFormat(intlLocale[locale], opts).format(amount as never)}`;
}

/** "19 %" in Spanish, "19%" in English; "19.50" keeps its decimal ("19,5 %"). */
export function formatPercent(rate: string, locale: Locale): string {
  const n = new Intl.NumberFormat(intlLocale[locale], { maximumFractionDigits: 2 }).format(new Decimal(rate).toFixed() as never);
  return locale === 'es' ? `${n} %` : `${n}%`;
}

/** An exchange rate as a plain locale number with up to six decimals. */
export function formatRateNumber(rate: string, locale: Locale): string {
  return new Intl.NumberFormat(intlLocale[locale], { maximumFractionDigits: 6 }).format(new Decimal(rate).toFixed() as never);
}

/** A file name safe in a Content-Disposition header: INV-000001.pdf, INV-000001-cedible.pdf, INV-000001-ticket.pdf, borrador-<id>.pdf. */
export function pdfFilename(invoice: { id: string; invoice_number: string | null; status: string; locale: Locale }, copy?: PdfCopy | 'ticket'): string {
  const base =
    invoice.status === 'draft' || !invoice.invoice_number
      ? `${pdfLabels(invoice.locale).filenameDraft}-${invoice.id}`
      : invoice.invoice_number;
  return `${base.replace(/[^A-Za-z0-9._-]/g, '_')}${copy ? `-${copy}` : ''}.pdf`;
}
