import { z } from 'zod';
import type { Queryable } from '../db/client.js';
import { AppError } from '../errors.js';
import { Decimal } from '../money.js';
import { findRate, upsertRate } from '../invoices/queries.js';

const PROVIDER_TIMEOUT_MS = 5_000;
const providerAnswer = z.object({ rate: z.union([z.number().positive(), z.string().regex(/^\d+(\.\d+)?$/)]) });

function conversionFailed(currency: string, base: string, date: string): AppError {
  return new AppError('currency_conversion_failed', `No ${currency}→${base} exchange rate for ${date} or the 7 days before it.`, {
    details: { currency, base_currency: base, date },
  });
}

/**
 * Value of one unit of `currency` in `base` for a date: the merchant's rate table first (a rate
 * up to 7 days old counts), then the optional HTTP provider
 * (`GET {EXCHANGE_RATES_URL}?base=CLP&currency=USD&date=YYYY-MM-DD` → `{"rate": 950.25}`),
 * whose answers are stored so each day is asked once.
 */
export async function exchangeRate(
  db: Queryable,
  providerUrl: string | undefined,
  merchantId: string,
  currency: string,
  base: string,
  date: string,
): Promise<string> {
  const stored = await findRate(db, merchantId, currency, date);
  if (stored) return stored;
  if (!providerUrl) throw conversionFailed(currency, base, date);
  let rate: string;
  try {
    const url = new URL(providerUrl);
    url.searchParams.set('base', base);
    url.searchParams.set('currency', currency);
    url.searchParams.set('date', date);
    const res = await fetch(url, { signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS), redirect: 'error' });
    if (!res.ok) throw new Error(`provider answered ${res.status}`);
    rate = new Decimal(providerAnswer.parse(await res.json()).rate).toFixed();
  } catch {
    throw conversionFailed(currency, base, date);
  }
  await upsertRate(db, merchantId, currency, date, rate);
  return rate;
}

export async function setRate(db: Queryable, merchantId: string, currency: string, date: string, rate: string): Promise<void> {
  await upsertRate(db, merchantId, currency, date, rate);
}
