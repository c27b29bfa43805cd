import { hash } from 'node:crypto';
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import type { Sql } from '../db/client.js';

export interface MerchantSettings {
  id: string;
  name: string;
  email: string;
  base_currency: string;
  default_tax_rate: string;
  default_locale: 'es' | 'en';
  timezone: string;
  invoice_prefix: string;
}

/** An API key and its merchant, as the store looks them up and caches them. */
export interface ApiKey {
  keyId: string;
  prefix: string;
  scopes: string[];
  keyCreatedAt: Date;
  rateLimit: number | null;
  allowedIps: string[];
  merchant: MerchantSettings;
}

/** The caller of one request: its key, and the key's rate-limit window with this request counted. */
export interface AuthContext extends ApiKey {
  rateLimitWindow: { limit: number; remaining: number; reset: number };
}

export function hashApiKey(key: string): Buffer {
  return hash('sha256', key, 'buffer');
}

// Keys are looked up by their SHA-256, never compared as plain strings, so response time says
// nothing about how much of a guessed key was right. A short in-process cache keeps the hot path
// to one round trip; a revoked key stops working within this many milliseconds.
const KEY_CACHE_MS = 5_000;

export class ApiKeyStore {
  private cache = new Map<string, { auth: ApiKey; until: number }>();

  constructor(private readonly sql: Sql) {}

  async lookup(key: string): Promise<ApiKey | null> {
    // The digest as text first: it is the cache key, and a hit needs no bytes.
    const cacheKey = hash('sha256', key, 'base64');
    const now = Date.now();
    const hit = this.cache.get(cacheKey);
    if (hit && hit.until > now) return hit.auth;
    const rows = await this.sql<
      (MerchantSettings & { key_id: string; prefix: string; scopes: string[]; key_created_at: Date; rate_limit: number | null; allowed_ips: string[] })[]
    >`
      SELECT k.id AS key_id, k.prefix, k.scopes, k.created_at AS key_created_at, k.rate_limit,
             k.allowed_ips::text[] AS allowed_ips,
             m.id, m.name, m.email, m.base_currency, m.default_tax_rate::text AS default_tax_rate,
             m.default_locale, m.timezone, m.invoice_prefix
        FROM api_keys k JOIN merchants m ON m.id = k.merchant_id
       WHERE k.key_hash = ${Buffer.from(cacheKey, 'base64')} AND k.revoked_at IS NULL`;
    const r = rows[0];
    if (!r) {
      this.cache.delete(cacheKey);
      return null;
    }
    const auth: ApiKey = {
      keyId: r.key_id,
      prefix: r.prefix,
      scopes: r.scopes,
      keyCreatedAt: r.key_created_at,
      rateLimit: r.rate_limit,
      allowedIps: r.allowed_ips,
      merchant: {
        id: r.id,
        name: r.name,
        email: r.email,
        base_currency: r.base_currency,
        default_tax_rate: r.default_tax_rate,
        default_locale: r.default_locale,
        timezone: r.timezone,
        invoice_prefix: r.invoice_prefix,
      },
    };
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(cacheKey, { auth, until: now + KEY_CACHE_MS });
    return auth;
  }
}

const blockLists = new Map<string, BlockList>();

function blockListFor(ranges: string[]): BlockList {
  const cacheKey = ranges.join(',');
  let list = blockLists.get(cacheKey);
  if (!list) {
    list = new BlockList();
    for (const range of ranges) {
      const [addr, bits] = range.split('/') as [string, string | undefined];
      const type = isIPv6(addr) ? 'ipv6' : 'ipv4';
      list.addSubnet(addr, Number(bits ?? (type === 'ipv6' ? 128 : 32)), type);
    }
    blockLists.set(cacheKey, list);
  }
  return list;
}

/** True when the key has no allow list or the address is inside one of its ranges. */
export function ipAllowed(allowed: string[], ip: string): boolean {
  if (allowed.length === 0) return true;
  const list = blockListFor(allowed);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
  if (mapped) return list.check(mapped, 'ipv4') || list.check(ip, 'ipv6');
  if (isIPv4(ip)) return list.check(ip, 'ipv4');
  if (isIPv6(ip)) return list.check(ip, 'ipv6');
  return false;
}

