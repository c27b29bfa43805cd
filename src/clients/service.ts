import type { PgBoss } from 'pg-boss';
import type { Queryable } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { iso } from '../http/schemas.js';
import { emitEvent } from '../events/emit.js';
import * as q from './queries.js';
import type { CreateClientInput, UpdateClientInput } from './schemas.js';

export function clientResource(row: q.ClientRow, apiBase: string) {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    rut: row.rut,
    phone: row.phone,
    address: row.address,
    giro: row.giro,
    comuna: row.comuna,
    ciudad: row.ciudad,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
    _links: { self: { href: `${apiBase}/clients/${row.id}`, method: 'GET' as const, rel: 'self', title: 'Client' } },
  };
}

function alreadyExists(email: string): AppError {
  return new AppError('client_already_exists', `A client with e-mail ${email} already exists.`, { details: { email } });
}

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string })?.code === '23505';
}

/** What writing a client needs beyond the transaction: its links, and the queue its event goes to. */
export interface ClientDeps {
  apiBase: string;
  boss: PgBoss;
}

/** Inserts the client and announces it; null when one with that e-mail (any case) exists. */
async function insertNewClient(db: Queryable, merchantId: string, input: CreateClientInput, deps: ClientDeps): Promise<q.ClientRow | null> {
  const row = await q.insertClient(db, {
    id: newId(),
    merchant_id: merchantId,
    name: input.name,
    email: input.email,
    rut: input.rut ?? null,
    phone: input.phone ?? null,
    address: input.address ?? null,
    giro: input.giro ?? null,
    comuna: input.comuna ?? null,
    ciudad: input.ciudad ?? null,
    now: clock.now(),
  });
  if (row) await emitEvent(db, deps.boss, merchantId, 'client.created', { object: clientResource(row, deps.apiBase) });
  return row;
}

export async function createClient(db: Queryable, merchantId: string, input: CreateClientInput, deps: ClientDeps) {
  const row = await insertNewClient(db, merchantId, input, deps);
  if (!row) throw alreadyExists(input.email);
  return clientResource(row, deps.apiBase);
}

/** Reuses the merchant's client with this e-mail as it is, or creates one (invoice and checkout creation). */
export async function findOrCreateClient(db: Queryable, merchantId: string, input: CreateClientInput, deps: ClientDeps): Promise<q.ClientRow> {
  const existing = await q.findClientByEmail(db, merchantId, input.email);
  if (existing) return existing;
  const row = await insertNewClient(db, merchantId, input, deps);
  if (row) return row;
  // Created by a concurrent request between our read and insert.
  const raced = await q.findClientByEmail(db, merchantId, input.email);
  if (!raced) throw new AppError('internal_error', 'Client could not be created.');
  return raced;
}

export async function getClient(db: Queryable, merchantId: string, id: string, apiBase: string) {
  const row = await q.getClient(db, merchantId, id);
  if (!row) throw new AppError('client_not_found', `No client ${id}.`);
  return clientResource(row, apiBase);
}

export async function listClients(db: Queryable, merchantId: string, limit: number, offset: number, apiBase: string) {
  const rows = await q.listClients(db, merchantId, limit + 1, offset);
  return rows.map((r) => clientResource(r, apiBase));
}

export async function updateClient(db: Queryable, merchantId: string, id: string, input: UpdateClientInput, deps: ClientDeps) {
  let row: q.ClientRow | null;
  try {
    row = await q.updateClient(db, merchantId, id, input, clock.now());
  } catch (err) {
    if (isUniqueViolation(err) && input.email) throw alreadyExists(input.email);
    throw err;
  }
  if (!row) throw new AppError('client_not_found', `No client ${id}.`);
  const resource = clientResource(row, deps.apiBase);
  await emitEvent(db, deps.boss, merchantId, 'client.updated', { object: resource });
  return resource;
}
