import { z } from 'zod';
import { normaliseTaxId } from './rut.js';
import { link, oneLine, oneLineCheck, pagingQuery, timestamp, uuid } from '../http/schemas.js';

export const clientName = oneLine().trim().min(1, 'must not be empty').max(200);
export const clientEmail = z.email().max(254).superRefine(oneLineCheck);
export const clientRut = oneLine()
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
export const clientPhone = oneLine().trim().max(50);
export const clientAddress = oneLine().trim().max(500);
// The SII's lengths for a receiver's giro, comuna and ciudad (docs/tax-documents.md).
export const clientGiro = oneLine().trim().min(1, 'must not be empty').max(40, 'at most 40 characters (the SII\'s GiroRecep)');
export const clientComuna = oneLine().trim().min(1, 'must not be empty').max(20, 'at most 20 characters (the SII\'s CmnaRecep)');
export const clientCiudad = oneLine().trim().min(1, 'must not be empty').max(20, 'at most 20 characters (the SII\'s CiudadRecep)');

export const createClientBody = z.strictObject({
  name: clientName,
  email: clientEmail,
  rut: clientRut.optional(),
  phone: clientPhone.optional(),
  address: clientAddress.optional(),
  giro: clientGiro.optional().meta({ description: "The client's line of business; a factura to a Chilean RUT requires it" }),
  comuna: clientComuna.optional().meta({ description: 'A factura to a Chilean RUT requires it' }),
  ciudad: clientCiudad.optional(),
});
export type CreateClientInput = z.output<typeof createClientBody>;

export const updateClientBody = z.strictObject({
  name: clientName.optional(),
  email: clientEmail.optional(),
  rut: clientRut.nullable().optional(),
  phone: clientPhone.nullable().optional(),
  address: clientAddress.nullable().optional(),
  giro: clientGiro.nullable().optional(),
  comuna: clientComuna.nullable().optional(),
  ciudad: clientCiudad.nullable().optional(),
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
    giro: z.string().nullable(),
    comuna: z.string().nullable(),
    ciudad: z.string().nullable(),
    created_at: timestamp,
    updated_at: timestamp,
    _links: z.object({ self: link }),
  })
  .meta({ id: 'Client' });
