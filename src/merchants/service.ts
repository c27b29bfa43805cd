import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import type { Queryable } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { newId, randomBase62 } from '../ids.js';
import { iso, multiLine, oneLine } from '../http/schemas.js';
import { hashApiKey } from '../http/auth.js';
import { scopes } from '../http/scopes.js';
import { currencies } from '../money.js';
import { looksLikeRut } from '../clients/rut.js';
import { clientRut } from '../clients/schemas.js';
import { parseOrThrow } from '../http/validation.js';
import * as q from './queries.js';

export const paymentProviders = ['sandbox', 'webpay', 'mercadopago'] as const;

const cidr = z.string().superRefine((v, ctx) => {
  const [addr, bits, extra] = v.split('/');
  const family = addr ? isIP(addr) : 0;
  if (extra !== undefined || !addr || !family || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128)))) {
    ctx.addIssue({ code: 'custom', message: 'must be an IP address or CIDR range' });
    return;
  }
  if (bits === undefined) return;
  // A range names its network: 10.1.2.3/8 has host bits set, which PostgreSQL's cidr refuses.
  const network = (family === 4 ? ipaddr.IPv4 : ipaddr.IPv6).networkAddressFromCIDR(v).toString();
  if (network !== ipaddr.parse(addr).toString()) {
    ctx.addIssue({ code: 'custom', message: `must be a range's network address (${network}/${bits}), with no host bits set` });
  }
});

export const createMerchantInput = z.strictObject({
  name: oneLine().trim().min(1).max(200),
  email: z.email().max(254),
  base_currency: z.enum(Object.keys(currencies) as [keyof typeof currencies]).default('CLP'),
  payment_provider: z.enum(paymentProviders).nullable().default(null),
});

export const createKeyInput = z.strictObject({
  merchant_id: z.uuid(),
  scopes: z.array(z.enum(scopes)).min(1, 'at least one scope'),
  allowed_ips: z.array(cidr).default([]),
  rate_limit: z.number().int().positive().nullable().default(null),
});

// One line of text each (docs/decisions.md §19): the documents print them.
const line = (max: number) => oneLine().trim().min(1).max(max);

/** A Chilean RUT with a valid check digit, with or without dots; kept as `76086428-5`, as a client's is. */
const rut = oneLine().trim().refine(looksLikeRut, 'must be a RUT such as 76.086.428-5').pipe(clientRut);

/**
 * The issuer's legal profile (docs/decisions.md §15; issue: documents carry the issuer's legal data). The
 * printed fields are required; acteco, the SII resolution and environment are needed only to
 * issue DTEs, and may come later.
 */
export const taxProfileInput = z.strictObject({
  rut,
  razon_social: line(200),
  giro: line(200),
  acteco: oneLine().trim().regex(/^\d{5,6}$/, 'must be the 5 or 6 digits of an SII activity code').nullable().default(null),
  direccion: line(200),
  comuna: line(100),
  ciudad: line(100),
  resolucion_numero: z.number().int().min(0).max(999_999).nullable().default(null),
  resolucion_fecha: z.iso.date().nullable().default(null),
  sii_env: z.enum(['certificacion', 'produccion']).nullable().default(null),
});

/** Free text the hosted invoice page shows when the merchant cannot take payments online (docs/decisions.md §11); at most 50 line breaks (§19). */
export const paymentInstructionsInput = multiLine(50).trim().min(1).max(2000).nullable();


function taxProfileView(m: q.MerchantRow) {
  if (m.rut === null) return null;
  return {
    rut: m.rut,
    razon_social: m.razon_social,
    giro: m.giro,
    acteco: m.acteco,
    direccion: m.direccion,
    comuna: m.comuna,
    ciudad: m.ciudad,
    resolucion_numero: m.resolucion_numero,
    resolucion_fecha: m.resolucion_fecha,
    sii_env: m.sii_env,
  };
}

export function merchantView(m: q.MerchantRow) {
  return {
    id: m.id,
    name: m.name,
    email: m.email,
    base_currency: m.base_currency,
    default_tax_rate: m.default_tax_rate,
    default_locale: m.default_locale,
    timezone: m.timezone,
    invoice_prefix: m.invoice_prefix,
    payment_provider: m.payment_provider,
    tax_profile: taxProfileView(m),
    payment_instructions: m.payment_instructions,
    created_at: iso(m.created_at),
  };
}

export function keyView(k: q.ApiKeyRow) {
  return {
    id: k.id,
    merchant_id: k.merchant_id,
    prefix: k.prefix,
    scopes: k.scopes,
    allowed_ips: k.allowed_ips,
    rate_limit: k.rate_limit,
    created_at: iso(k.created_at),
    revoked_at: iso(k.revoked_at),
  };
}

export async function createMerchant(db: Queryable, input: z.input<typeof createMerchantInput>) {
  const m = parseOrThrow(createMerchantInput, input);
  const row = await q.insertMerchant(db, { id: newId(), ...m, created_at: clock.now() });
  return merchantView(row);
}

export async function listMerchants(db: Queryable) {
  return (await q.listMerchants(db)).map(merchantView);
}

export async function setPaymentProvider(db: Queryable, merchantId: string, provider: string | null) {
  const parsed = parseOrThrow(z.enum(paymentProviders).nullable(), provider, 422, 'payment_provider');
  const row = await q.setPaymentProvider(db, merchantId, parsed, clock.now());
  if (!row) throw AppError.validation([{ path: 'merchant_id', message: 'no such merchant' }]);
  return merchantView(row);
}

function noSuchMerchant(): AppError {
  return AppError.validation([{ path: 'merchant_id', message: 'no such merchant' }]);
}

/** Sets (or, with null, clears) the legal profile the merchant's documents print. */
export async function setTaxProfile(db: Queryable, merchantId: string, profile: z.input<typeof taxProfileInput> | null) {
  const parsedId = parseOrThrow(z.uuid(), merchantId, 422, 'merchant_id');
  const parsed = profile === null ? null : parseOrThrow(taxProfileInput, profile);
  const row = await q.setTaxProfile(db, parsedId, parsed, clock.now());
  if (!row) throw noSuchMerchant();
  return merchantView(row);
}

/** Sets (or, with null, clears) what the hosted invoice page says about paying when the merchant cannot charge. */
export async function setPaymentInstructions(db: Queryable, merchantId: string, text: string | null) {
  const parsedId = parseOrThrow(z.uuid(), merchantId, 422, 'merchant_id');
  const parsed = parseOrThrow(paymentInstructionsInput, text, 422, 'payment_instructions');
  const row = await q.setPaymentInstructions(db, parsedId, parsed, clock.now());
  if (!row) throw noSuchMerchant();
  return merchantView(row);
}

/** Creates a key and returns it in full: the only time it is ever shown. */
export async function createApiKey(db: Queryable, input: z.input<typeof createKeyInput>) {
  const k = parseOrThrow(createKeyInput, input);
  if (!(await q.getMerchant(db, k.merchant_id))) throw AppError.validation([{ path: 'merchant_id', message: 'no such merchant' }]);
  const key = `ik_live_${randomBase62(32)}`;
  const row = await q.insertApiKey(db, {
    id: newId(),
    merchant_id: k.merchant_id,
    prefix: key.slice(0, 12),
    hash: hashApiKey(key),
    scopes: k.scopes,
    allowed_ips: k.allowed_ips,
    rate_limit: k.rate_limit,
    created_at: clock.now(),
  });
  return { ...keyView(row), key };
}

export async function listApiKeys(db: Queryable, merchantId?: string) {
  return (await q.listApiKeys(db, merchantId)).map(keyView);
}

export async function revokeApiKey(db: Queryable, keyId: string) {
  const parsedId = parseOrThrow(z.uuid(), keyId, 422, 'key_id');
  const row = await q.revokeApiKey(db, parsedId, clock.now());
  if (!row) throw AppError.validation([{ path: 'key_id', message: 'no such key' }]);
  return keyView(row);
}
