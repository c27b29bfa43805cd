import type { Locale } from './invoices/schemas.js';

const intlLocale: Record<Locale, string> = { es: 'es-CL', en: 'en-US' };

const fractionDigits: Record<string, number> = { CLP: 0, CLF: 4 };

/**
 * Money for people: es-CL `$11.900`, en `CLP 11,900`. Intl takes the amount as a decimal string,
 * so no amount passes through a float.
 */
export function formatMoney(amount: string, currency: string, locale: Locale): string {
  const digits = fractionDigits[currency] ?? 2;
  const base = { minimumFractionDigits: digits, maximumFractionDigits: digits };
  if (locale === 'es' && currency === 'CLP') {
    return new Intl.NumberFormat('es-CL', { ...base, style: 'currency', currency: 'CLP' }).format(amount as never);
  }
  const number = new Intl.NumberFormat(intlLocale[locale], base).format(amount as never);
  return `${currency} ${number}`;
}

export function formatDate(isoDate: string, locale: Locale): string {
  const [y, m, d] = isoDate.split('-').map(Number) as [number, number, number];
  return new Intl.DateTimeFormat(intlLocale[locale], { year: 'numeric', month: 'long', day: 'numeric', timeZone: 'UTC' }).format(
    new Date(Date.UTC(y, m - 1, d)),
  );
}

export function formatQuantityFor(quantity: string, locale: Locale): string {
  return new Intl.NumberFormat(intlLocale[locale], { maximumFractionDigits: 4 }).format(quantity as never);
}

interface MomentFormats {
  date: Intl.DateTimeFormat;
  time: Intl.DateTimeFormat;
  zone: Intl.DateTimeFormat;
}

// Building an Intl formatter costs far more than using one (as in clock.ts): kept per locale and zone.
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
