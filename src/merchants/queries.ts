import type { Queryable } from '../db/client.js';

export interface MerchantRow {
  id: string;
  name: string;
  email: string;
  base_currency: string;
  default_tax_rate: string;
  default_locale: 'es' | 'en';
  timezone: string;
  invoice_prefix: string;
  payment_provider: string | null;
  rut: string | null;
  razon_social: string | null;
  giro: string | null;
  acteco: string | null;
  direccion: string | null;
  comuna: string | null;
  ciudad: string | null;
  resolucion_numero: number | null;
  resolucion_fecha: string | null;
  sii_env: 'certificacion' | 'produccion' | null;
  payment_instructions: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The legal profile's columns (docs/decisions.md §15): all of them are set together. */
export interface TaxProfile {
  rut: string;
  razon_social: string;
  giro: string;
  acteco: string | null;
  direccion: string;
  comuna: string;
  ciudad: string;
  resolucion_numero: number | null;
  resolucion_fecha: string | null;
  sii_env: 'certificacion' | 'produccion' | null;
}

export interface ApiKeyRow {
  id: string;
  merchant_id: string;
  prefix: string;
  scopes: string[];
  allowed_ips: string[];
  rate_limit: number | null;
  created_at: Date;
  revoked_at: Date | null;
}

export async function insertMerchant(db: Queryable, m: Pick<MerchantRow, 'id' | 'name' | 'email' | 'base_currency' | 'payment_provider' | 'created_at'>): Promise<MerchantRow> {
  const [row] = await db<MerchantRow[]>`
    INSERT INTO merchants (id, name, email, base_currency, payment_provider, created_at, updated_at)
    VALUES (${m.id}, ${m.name}, ${m.email}, ${m.base_currency}, ${m.payment_provider}, ${m.created_at}, ${m.created_at})
    RETURNING *`;
  await db`INSERT INTO invoice_counters (merchant_id) VALUES (${m.id})`;
  return row!;
}

export async function listMerchants(db: Queryable): Promise<MerchantRow[]> {
  return db<MerchantRow[]>`SELECT * FROM merchants ORDER BY created_at, id`;
}

export async function getMerchant(db: Queryable, id: string): Promise<MerchantRow | null> {
  const rows = await db<MerchantRow[]>`SELECT * FROM merchants WHERE id = ${id}`;
  return rows[0] ?? null;
}

/** null clears the profile. */
export async function setTaxProfile(db: Queryable, id: string, p: TaxProfile | null, now: Date): Promise<MerchantRow | null> {
  const rows = await db<MerchantRow[]>`
    UPDATE merchants
       SET rut = ${p?.rut ?? null}, razon_social = ${p?.razon_social ?? null}, giro = ${p?.giro ?? null}, acteco = ${p?.acteco ?? null},
           direccion = ${p?.direccion ?? null}, comuna = ${p?.comuna ?? null}, ciudad = ${p?.ciudad ?? null},
           resolucion_numero = ${p?.resolucion_numero ?? null}, resolucion_fecha = ${p?.resolucion_fecha ?? null}, sii_env = ${p?.sii_env ?? null},
           updated_at = ${now}
     WHERE id = ${id}
     RETURNING *`;
  return rows[0] ?? null;
}

export async function setPaymentInstructions(db: Queryable, id: string, text: string | null, now: Date): Promise<MerchantRow | null> {
  const rows = await db<MerchantRow[]>`
    UPDATE merchants SET payment_instructions = ${text}, updated_at = ${now} WHERE id = ${id} RETURNING *`;
  return rows[0] ?? null;
}

export async function setPaymentProvider(db: Queryable, id: string, provider: string | null, now: Date): Promise<MerchantRow | null> {
  const rows = await db<MerchantRow[]>`
    UPDATE merchants SET payment_provider = ${provider}, updated_at = ${now} WHERE id = ${id} RETURNING *`;
  return rows[0] ?? null;
}

const keyColumns = (db: Queryable) => db`id, merchant_id, prefix, scopes, allowed_ips::text[] AS allowed_ips, rate_limit, created_at, revoked_at`;

export async function insertApiKey(
  db: Queryable,
  k: { id: string; merchant_id: string; prefix: string; hash: Buffer; scopes: string[]; allowed_ips: string[]; rate_limit: number | null; created_at: Date },
): Promise<ApiKeyRow> {
  const [row] = await db<ApiKeyRow[]>`
    INSERT INTO api_keys (id, merchant_id, prefix, key_hash, scopes, allowed_ips, rate_limit, created_at)
    VALUES (${k.id}, ${k.merchant_id}, ${k.prefix}, ${k.hash}, ${k.scopes}::text[], ${k.allowed_ips}::cidr[], ${k.rate_limit}, ${k.created_at})
    RETURNING ${keyColumns(db)}`;
  return row!;
}

export async function listApiKeys(db: Queryable, merchantId?: string): Promise<ApiKeyRow[]> {
  return db<ApiKeyRow[]>`
    SELECT ${keyColumns(db)} FROM api_keys
     ${merchantId ? db`WHERE merchant_id = ${merchantId}` : db``}
     ORDER BY created_at, id`;
}

export async function revokeApiKey(db: Queryable, id: string, now: Date): Promise<ApiKeyRow | null> {
  const rows = await db<ApiKeyRow[]>`
    UPDATE api_keys SET revoked_at = coalesce(revoked_at, ${now}) WHERE id = ${id} RETURNING ${keyColumns(db)}`;
  return rows[0] ?? null;
}

/** Whether any merchant exists: `npm start` shows how to make the first one until one does. */
export async function anyMerchant(db: Queryable): Promise<boolean> {
  const [row] = await db<{ any: boolean }[]>`SELECT EXISTS (SELECT 1 FROM merchants) AS any`;
  return row!.any;
}
