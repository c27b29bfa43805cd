import { z } from 'zod';
import { DOCUMENT_STATUSES } from './queries.js';

const folios = z.number().int().min(0);

/** GET /me's `dte` (docs/decisions.md §15). */
export const dteSummary = z
  .object({
    enabled: z.boolean().meta({
      description: "True when the merchant issues Chilean tax documents: its tax profile is complete for them, and it has a signing certificate and CAFs",
    }),
    folios_left: z
      .object({ 33: folios, 34: folios, 39: folios, 41: folios, 56: folios, 61: folios })
      .meta({
        description:
          'Folios left to issue per document type (33 factura, 34 factura exenta, 39 boleta, 41 boleta exenta, 56 nota de débito, 61 nota de crédito), from the CAFs loaded',
      }),
  })
  .meta({ id: 'DteSummary' });

// Admin inputs: files travel as base64 inside the JSON of a tRPC call, and reach services as bytes.
const base64File = z
  .base64()
  .min(1, 'must not be empty')
  .max(1_400_000, 'at most 1 MB')
  .transform((s) => Buffer.from(s, 'base64'));

export const addCertificateInput = z.strictObject({
  merchant_id: z.uuid(),
  file_base64: base64File.meta({ description: 'The PKCS#12 (.p12 / .pfx) file, base64' }),
  password: z.string().max(1000),
});

export const addCafInput = z.strictObject({
  merchant_id: z.uuid(),
  file_base64: base64File.meta({ description: 'The CAF XML file as SII issued it, base64' }),
});

export const dteStatusInput = z.strictObject({ merchant_id: z.uuid() });

export const dteDocumentsInput = z.strictObject({
  merchant_id: z.uuid(),
  status: z.enum(DOCUMENT_STATUSES).optional(),
});
