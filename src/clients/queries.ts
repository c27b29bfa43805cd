import type { Queryable } from '../db/client.js';

export interface ClientRow {
  id: string;
  merchant_id: string;
  name: string;
  email: string;
  rut: string | null;
  phone: string | null;
  address: string | null;
  giro: string | null;
  comuna: string | null;
  ciudad: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewClient {
  id: string;
  merchant_id: string;
  name: string;
  email: string;
  rut: string | null;
  phone: string | null;
  address: string | null;
  giro: string | null;
  comuna: string | null;
  ciudad: string | null;
  now: Date;
}

/** Inserts unless a client with that e-mail (any case) exists; null on conflict. */
export async function insertClient(db: Queryable, c: NewClient): Promise<ClientRow | null> {
  const rows = await db<ClientRow[]>`
    INSERT INTO clients (id, merchant_id, name, email, rut, phone, address, giro, comuna, ciudad, created_at, updated_at)
    VALUES (${c.id}, ${c.merchant_id}, ${c.name}, ${c.email}, ${c.rut}, ${c.phone}, ${c.address}, ${c.giro}, ${c.comuna}, ${c.ciudad}, ${c.now}, ${c.now})
    ON CONFLICT (merchant_id, lower(email)) DO NOTHING
    RETURNING *`;
  return rows[0] ?? null;
}

export async function findClientByEmail(db: Queryable, merchantId: string, email: string): Promise<ClientRow | null> {
  const rows = await db<ClientRow[]>`
    SELECT * FROM clients WHERE merchant_id = ${merchantId} AND lower(email) = lower(${email})`;
  return rows[0] ?? null;
}

export async function getClient(db: Queryable, merchantId: string, id: string): Promise<ClientRow | null> {
  const rows = await db<ClientRow[]>`SELECT * FROM clients WHERE merchant_id = ${merchantId} AND id = ${id}`;
  return rows[0] ?? null;
}

export async function listClients(db: Queryable, merchantId: string, limit: number, offset: number): Promise<ClientRow[]> {
  return db<ClientRow[]>`
    SELECT * FROM clients WHERE merchant_id = ${merchantId}
     ORDER BY lower(name), id LIMIT ${limit} OFFSET ${offset}`;
}

export interface ClientChanges {
  name?: string;
  email?: string;
  rut?: string | null;
  phone?: string | null;
  address?: string | null;
  giro?: string | null;
  comuna?: string | null;
  ciudad?: string | null;
}

/** Applies only the fields given; `undefined` keeps, `null` clears. Null when absent. */
export async function updateClient(db: Queryable, merchantId: string, id: string, ch: ClientChanges, now: Date): Promise<ClientRow | null> {
  const has = (k: keyof ClientChanges) => ch[k] !== undefined;
  const rows = await db<ClientRow[]>`
    UPDATE clients SET
      name    = CASE WHEN ${has('name')}    THEN ${ch.name ?? null}    ELSE name END,
      email   = CASE WHEN ${has('email')}   THEN ${ch.email ?? null}   ELSE email END,
      rut     = CASE WHEN ${has('rut')}     THEN ${ch.rut ?? null}     ELSE rut END,
      phone   = CASE WHEN ${has('phone')}   THEN ${ch.phone ?? null}   ELSE phone END,
      address = CASE WHEN ${has('address')} THEN ${ch.address ?? null} ELSE address END,
      giro    = CASE WHEN ${has('giro')}    THEN ${ch.giro ?? null}    ELSE giro END,
      comuna  = CASE WHEN ${has('comuna')}  THEN ${ch.comuna ?? null}  ELSE comuna END,
      ciudad  = CASE WHEN ${has('ciudad')}  THEN ${ch.ciudad ?? null}  ELSE ciudad END,
      updated_at = ${now}
    WHERE merchant_id = ${merchantId} AND id = ${id}
    RETURNING *`;
  return rows[0] ?? null;
}
