import { z } from 'zod';
import { normaliseTaxId } from './rut.js';
import { link, pagingQuery, timestamp, uuid } from '../http/schemas.js';

export const clientName = z.string().trim().min(1, 'must not be empty').max(200);
export const clientEmail = z.email({ message: 'must be a valid e-mail address' }).max(254);
export const clientRut = z
  .string()
  .trim()
  .max(32)
  .transform((v, ctx) => {
    const r = normaliseTaxId(v);
    if (!r.ok) {
      ctx.addIssue({ code: 'custom', message: r.message });
      return z.NEVER;
    }
    return r.value;
  })
  .meta({ description: 'Chilean RUT (12.345.678-5 or 12345678-5; stored as 12345678-5) or another tax id', example: '12.345.678-5' });
export const clientPhone = z.string().trim().max(50);
export const clientAddress = z.string().trim().max(500);

export const createClientBody = z.strictObject({
  name: clientName,
  email: clientEmail,
  rut: clientRut.optional(),
  phone: clientPhone.optional(),
  address: clientAddress.optional(),
});
export type CreateClientInput = z.output<typeof createClientBody>;

export const updateClientBody = z.strictObject({
  name: clientName.optional(),
  email: clientEmail.optional(),
  rut: clientRut.nullable().optional(),
  phone: clientPhone.nullable().optional(),
  address: clientAddress.nullable().optional(),
});
export type UpdateClientInput = z.output<typeof updateClientBody>;

export const clientIdParams = z.strictObject({ client_id: uuid });
export const listClientsQuery = z.strictObject({ ...pagingQuery });

export const clientResource = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string().nullable(),
    rut: z.string().nullable(),
    phone: z.string().nullable(),
    address: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    _links: z.object({ self: link }),
  })
  .meta({ id: 'Client' });
