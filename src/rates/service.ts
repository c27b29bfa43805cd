import { z } from 'zod';
import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { Decimal } from '../money.js';
import { findRate, upsertRate } from './queries.js';

const PROVIDER_TIMEOUT_MS = 5_000;
// A bulk call can need up to 50 rates; a few questions at a time spare the provider a burst.
const PROVIDER_CONCURRENCY = 4;
const providerAnswer = z.object({ rate: z.union([z.number().positive(), z.string().regex(/^\d+(\.\d+)?$/)]) });

/** One rate a request will read: a currency on an issue date. */
export interface RateNeed {
  currency: string;
  date: string;
}

function conversionFailed(currency: string, base: string, date: string): AppError {
  return new AppError('currency_conversion_failed', `No ${currency}→${base} exchange rate for ${date} or the 7 days before it.`, {
    details: { currency, base_currency: base, date },
  });
}

/**
 * Value of one unit of `currency` in `base` for a date, from the merchant's rate table (a rate up
 * to 7 days old counts). Only the table is read: the provider was asked before the request's
 * transaction began (`fetchMissingRates`), so a rate still missing here is a 503.
 */
export async function exchangeRate(db: Queryable, merchantId: string, currency: string, base: string, date: string): Promise<string> {
  const stored = await findRate(db, merchantId, currency, date);
  if (!stored) throw conversionFailed(currency, base, date);
  return stored;
}

/**
 * Asks the optional HTTP provider
 * (`GET {EXCHANGE_RATES_URL}?base=CLP&currency=USD&date=YYYY-MM-DD` → `{"rate": 950.25}`) for
 * each needed rate the table lacks, and stores its answers so each day is asked once. It runs on
 * the pool with no transaction open (docs/decisions.md §10). A provider that fails leaves its rate
 * missing: the request's own read of the table then reports it, for that request or bulk item.
 */
export async function fetchMissingRates(sql: Sql, providerUrl: string | undefined, merchantId: string, base: string, needs: RateNeed[]): Promise<void> {
  if (!providerUrl || needs.length === 0) return;
  const queue = [...new Map(needs.map((n) => [`${n.currency} ${n.date}`, n])).values()];
  const worker = async () => {
    for (let need = queue.shift(); need; need = queue.shift()) await fetchRate(sql, providerUrl, merchantId, base, need);
  };
  await Promise.all(Array.from({ length: Math.min(PROVIDER_CONCURRENCY, queue.length) }, worker));
}

async function fetchRate(sql: Sql, providerUrl: string, merchantId: string, base: string, { currency, date }: RateNeed): Promise<void> {
  if (await findRate(sql, merchantId, currency, date)) return;
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
    return;
  }
  await upsertRate(sql, merchantId, currency, date, rate);
}

export async function setRate(db: Queryable, merchantId: string, currency: string, date: string, rate: string): Promise<void> {
  await upsertRate(db, merchantId, currency, date, rate);
}
