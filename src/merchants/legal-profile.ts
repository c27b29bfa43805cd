// The issuer's legal data as documents print it (PDF, hosted page, e-mails): a module of its own,
// so the worker's e-mail and PDF code reach it without the merchant administration beside it.
import { formatRut } from '../clients/rut.js';
import type { MerchantRow } from './queries.js';

/** The profile as the documents print it, RUT with its dots; null while the merchant has none. */
export function legalProfile(m: Pick<MerchantRow, 'rut' | 'razon_social' | 'giro' | 'direccion' | 'comuna' | 'ciudad'>) {
  if (m.rut === null || m.razon_social === null || m.giro === null || m.direccion === null || m.comuna === null || m.ciudad === null) return null;
  return { razon_social: m.razon_social, rut: formatRut(m.rut), giro: m.giro, direccion: m.direccion, comuna: m.comuna, ciudad: m.ciudad };
}
export type LegalProfile = NonNullable<ReturnType<typeof legalProfile>>;
