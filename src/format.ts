/** The languages of documents, e-mails and pages (docs/decisions.md §3). */
export const locales = ['es', 'en'] as const;
export type Locale = (typeof locales)[number];

const intlLocale: Record<Locale, string> = { es: 'es-CL', en: 'en-US' };

const fractionDigits: Record<string, number> = { CLP: 0, CLF: 4 };

// Building an Intl formatter costs far more than using one (a PDF formats dozens of amounts, and
// formatting was a tenth of the worker's time in a burst of e-mails): each is built once per key.
const numberFormats = new Map<string, Intl.NumberFormat>();
const dateFormats = new Map<Locale, Intl.DateTimeFormat>();

function numberFormat(key: string, make: () => Intl.NumberFormat): Intl.NumberFormat {
  let f = numberFormats.get(key);
  if (!f) numberFormats.set(key, (f = make()));
  return f;
}

/**
 * Money for people: es-CL `$11.900`, en `CLP 11,900`. Intl takes the amount as a decimal string,
 * so no amount passes through a float.
 */
export function formatMoney(amount: string, currency: string, locale: Locale): string {
  const digits = fractionDigits[currency] ?? 2;
  const base = { minimumFractionDigits: digits, maximumFractionDigits: digits };
  if (locale === 'es' && currency === 'CLP') {
    return numberFormat('es CLP', () => new Intl.NumberFormat('es-CL', { ...base, style: 'currency', currency: 'CLP' })).format(amount as never);
  }
  const number = numberFormat(`${locale} ${digits}`, () => new Intl.NumberFormat(intlLocale[locale], base)).format(amount as never);
  return `${currency} ${number}`;
}

export function formatDate(isoDate: string, locale: Locale): string {
  const [y, m, d] = isoDate.split('-').map(Number) as [number, number, number];
  let f = dateFormats.get(locale);
  if (!f) dateFormats.set(locale, (f = new Intl.DateTimeFormat(intlLocale[locale], { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' })));
  return f.format(new Date(Date.UTC(y, m - 1, d)));
}

export function formatQuantityFor(quantity: string, locale: Locale): string {
  return numberFormat(`${locale} quantity`, () => new Intl.NumberFormat(intlLocale[locale], { maximumFractionDigits: 4 })).format(quantity as never);
}

interface MomentFormats {
  date: Intl.DateTimeFormat;
  time: Intl.DateTimeFormat;
  zone: Intl.DateTimeFormat;
}

// Kept per locale and zone, as the number formats above.
const formats = new Map<string, MomentFormats>();

function formatsFor(locale: Locale, timeZone: string): MomentFormats {
  const key = `${locale} ${timeZone}`;
  let f = formats.get(key);
  if (!f) {
    const lang = intlLocale[locale];
    f = {
      date: new Intl.DateTimeFormat(lang, { dateStyle: 'long', timeZone }),
      // Chile writes times on a 24-hour clock.
      time: new Intl.DateTimeFormat(lang, { timeStyle: 'short', timeZone, ...(locale === 'es' ? { hourCycle: 'h23' as const } : {}) }),
      zone: new Intl.DateTimeFormat(lang, { timeZone, timeZoneName: 'longGeneric' }),
    };
    formats.set(key, f);
  }
  return f;
}

/**
 * A moment as a customer reads it, with the zone it is told in, which may not be the customer's:
 * es `25 de noviembre de 2026, 14:30 (hora de Chile)`, en `November 25, 2026, 2:30 PM (Chile Time)`.
 * The zone's generic name does not change with daylight saving; zones with none print their offset.
 */
export function formatMoment(at: Date, locale: Locale, timeZone: string): string {
  const f = formatsFor(locale, timeZone);
  const zone = f.zone.formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? timeZone;
  return `${f.date.format(at)}, ${f.time.format(at)} (${zone})`;
}
