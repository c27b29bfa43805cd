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
