import type { Locale } from '../invoices/schemas.js';

const intlLocale: Record<Locale, string> = { es: 'es-CL', en: 'en-US' };

/**
 * A moment as a customer reads it, with the zone it is told in, which may not be the customer's:
 * es `25 de noviembre de 2026, 14:30 (hora de Chile)`, en `November 25, 2026, 2:30 PM (Chile Time)`.
 * The zone's generic name does not change with daylight saving; zones with none print their offset.
 */
export function formatMoment(at: Date, locale: Locale, timeZone: string): string {
  const lang = intlLocale[locale];
  const date = new Intl.DateTimeFormat(lang, { dateStyle: 'long', timeZone }).format(at);
  // Chile writes times on a 24-hour clock.
  const time = new Intl.DateTimeFormat(lang, { timeStyle: 'short', timeZone, ...(locale === 'es' ? { hourCycle: 'h23' as const } : {}) }).format(at);
  const zone = new Intl.DateTimeFormat(lang, { timeZone, timeZoneName: 'longGeneric' }).formatToParts(at).find((p) => p.type === 'timeZoneName')?.value ?? timeZone;
  return `${date}, ${time} (${zone})`;
}
