import type { Queryable } from '../db/client.js';
import type { DteType } from './caf.js';

export interface CertificateInfo {
  id: string;
  merchant_id: string;
  subject_rut: string | null;
  subject_name: string;
  not_after: Date;
  created_at: Date;
}

export type CertificateRow = CertificateInfo & { sealed_pkcs12: Buffer };

/** A merchant has one certificate: a new one replaces the old. */
export async function upsertCertificate(db: Queryable, c: CertificateRow): Promise<CertificateInfo> {
  const [row] = await db<CertificateInfo[]>`
    INSERT INTO dte_certificates (id, merchant_id, sealed_pkcs12, subject_rut, subject_name, not_after, created_at)
    VALUES (${c.id}, ${c.merchant_id}, ${c.sealed_pkcs12}, ${c.subject_rut}, ${c.subject_name}, ${c.not_after}, ${c.created_at})
    ON CONFLICT (merchant_id) DO UPDATE
      SET id = EXCLUDED.id, sealed_pkcs12 = EXCLUDED.sealed_pkcs12, subject_rut = EXCLUDED.subject_rut,
          subject_name = EXCLUDED.subject_name, not_after = EXCLUDED.not_after, created_at = EXCLUDED.created_at
    RETURNING id, merchant_id, subject_rut, subject_name, not_after, created_at`;
  return row!;
}

export async function certificateInfo(db: Queryable, merchantId: string): Promise<CertificateInfo | null> {
  const rows = await db<CertificateInfo[]>`
    SELECT id, merchant_id, subject_rut, subject_name, not_after, created_at FROM dte_certificates WHERE merchant_id = ${merchantId}`;
  return rows[0] ?? null;
}

/**
 * Creates the merchant's counter of the type when it has none, and holds it until the
 * transaction ends: CAF loads and folio assignments of one merchant and type go one at a time.
 */
export async function lockFolioCounter(db: Queryable, merchantId: string, type: DteType): Promise<void> {
  await db`INSERT INTO dte_folio_counters (merchant_id, dte_type) VALUES (${merchantId}, ${type}) ON CONFLICT DO NOTHING`;
  await db`SELECT 1 FROM dte_folio_counters WHERE merchant_id = ${merchantId} AND dte_type = ${type} FOR UPDATE`;
}

/** The loaded CAF of the type whose range shares a folio with from..to, if any. */
export async function overlappingCaf(db: Queryable, merchantId: string, type: DteType, from: number, to: number): Promise<{ folio_from: number; folio_to: number } | null> {
  const rows = await db<{ folio_from: number; folio_to: number }[]>`
    SELECT folio_from, folio_to FROM dte_cafs
     WHERE merchant_id = ${merchantId} AND dte_type = ${type} AND folio_from <= ${to} AND folio_to >= ${from}
     LIMIT 1`;
  return rows[0] ?? null;
}

export interface CafRow {
  id: string;
  merchant_id: string;
  dte_type: DteType;
  folio_from: number;
  folio_to: number;
  next_folio: number;
  /** YYYY-MM-DD. */
  authorized_on: string;
  created_at: Date;
}

export async function insertCaf(
  db: Queryable,
  c: Omit<CafRow, 'next_folio'> & { caf_xml: string; sealed_private_key: Buffer },
): Promise<CafRow> {
  const [row] = await db<CafRow[]>`
    INSERT INTO dte_cafs (id, merchant_id, dte_type, folio_from, folio_to, next_folio, authorized_on, caf_xml, sealed_private_key, created_at)
    VALUES (${c.id}, ${c.merchant_id}, ${c.dte_type}, ${c.folio_from}, ${c.folio_to}, ${c.folio_from}, ${c.authorized_on}::date,
            ${c.caf_xml}, ${c.sealed_private_key}, ${c.created_at})
    RETURNING id, merchant_id, dte_type, folio_from, folio_to, next_folio, authorized_on, created_at`;
  return row!;
}

export async function listCafs(db: Queryable, merchantId: string): Promise<CafRow[]> {
  return db<CafRow[]>`
    SELECT id, merchant_id, dte_type, folio_from, folio_to, next_folio, authorized_on, created_at
      FROM dte_cafs WHERE merchant_id = ${merchantId} ORDER BY dte_type, authorized_on, folio_from`;
}

/** Folios left per type, of one merchant or of all; types without CAFs are absent. */
export async function foliosLeft(db: Queryable, merchantId?: string): Promise<{ merchant_id: string; dte_type: DteType; left: number }[]> {
  return db<{ merchant_id: string; dte_type: DteType; left: number }[]>`
    SELECT merchant_id, dte_type, sum(folio_to - next_folio + 1)::int AS left
      FROM dte_cafs
     ${merchantId ? db`WHERE merchant_id = ${merchantId}` : db``}
     GROUP BY merchant_id, dte_type
     ORDER BY merchant_id, dte_type`;
}

/** What issuing a document takes beyond the tax profile: the sealed certificate, when there is one and CAFs too. */
export async function signingSetup(db: Queryable, merchantId: string): Promise<{ sealed_pkcs12: Buffer } | null> {
  const rows = await db<{ sealed_pkcs12: Buffer }[]>`
    SELECT c.sealed_pkcs12 FROM dte_certificates c
     WHERE c.merchant_id = ${merchantId} AND EXISTS (SELECT 1 FROM dte_cafs f WHERE f.merchant_id = c.merchant_id)`;
  return rows[0] ?? null;
}

/**
 * The next folio of the type, gapless: the counter row is locked first (the first statement),
 * so this second statement's snapshot sees every folio taken before; the oldest CAF with folios
 * left gives one. Null when the merchant has none left (the caller's transaction must roll back
 * to undo the count).
 */
export async function takeFolio(db: Queryable, merchantId: string, type: DteType): Promise<{ caf_id: string; folio: number; caf_xml: string; sealed_private_key: Buffer } | null> {
  const counted = await db`
    UPDATE dte_folio_counters SET issued = issued + 1 WHERE merchant_id = ${merchantId} AND dte_type = ${type} RETURNING issued`;
  if (counted.length === 0) return null;
  const rows = await db<{ caf_id: string; folio: number; caf_xml: string; sealed_private_key: Buffer }[]>`
    UPDATE dte_cafs SET next_folio = next_folio + 1
     WHERE id = (SELECT id FROM dte_cafs
                  WHERE merchant_id = ${merchantId} AND dte_type = ${type} AND next_folio <= folio_to
                  ORDER BY authorized_on, folio_from LIMIT 1)
    RETURNING id AS caf_id, next_folio - 1 AS folio, caf_xml, sealed_private_key`;
  return rows[0] ?? null;
}

export interface NewInvoiceDte {
  invoice_id: string;
  merchant_id: string;
  dte_type: 33 | 34;
  folio: number;
  caf_id: string;
  ted: string;
  envio_xml: Buffer;
  resolucion_numero: number;
  resolucion_fecha: string;
  created_at: Date;
}

/** The document and what the invoice shows of it, written together. */
export async function insertInvoiceDte(db: Queryable, d: NewInvoiceDte): Promise<void> {
  await db`
    WITH dte AS (
      INSERT INTO invoice_dtes (invoice_id, merchant_id, dte_type, folio, caf_id, ted, envio_xml, resolucion_numero, resolucion_fecha, created_at)
      VALUES (${d.invoice_id}, ${d.merchant_id}, ${d.dte_type}, ${d.folio}, ${d.caf_id}, ${d.ted}, ${d.envio_xml},
              ${d.resolucion_numero}, ${d.resolucion_fecha}::date, ${d.created_at})
      RETURNING invoice_id, dte_type, folio
    )
    UPDATE invoices i SET dte_type = dte.dte_type, dte_folio = dte.folio, dte_status = 'pending'
      FROM dte WHERE i.id = dte.invoice_id`;
}

/** A CLP-only document for an invoice in another currency (decisions §15). */
export async function markDteNotApplicable(db: Queryable, invoiceId: string): Promise<void> {
  await db`UPDATE invoices SET dte_status = 'not_applicable' WHERE id = ${invoiceId}`;
}

export interface InvoiceDte {
  dte_type: 33 | 34;
  folio: number;
  /** The TED as signed: the PDF's barcode. */
  ted: string;
  /** The signed EnvioDTE, ISO-8859-1. */
  envio_xml: Buffer;
  resolucion_numero: number;
  /** YYYY-MM-DD. */
  resolucion_fecha: string;
}

/** The tax document of an invoice, or null when it has none. */
export async function findInvoiceDte(db: Queryable, invoiceId: string): Promise<InvoiceDte | null> {
  const rows = await db<InvoiceDte[]>`
    SELECT dte_type, folio, ted, envio_xml, resolucion_numero, resolucion_fecha FROM invoice_dtes WHERE invoice_id = ${invoiceId}`;
  return rows[0] ?? null;
}

/** Whether the merchant has the invoice, and its signed EnvioDTE when it has one. */
export async function merchantInvoiceDte(db: Queryable, merchantId: string, invoiceId: string): Promise<{ envio_xml: Buffer | null; dte_type: number | null; folio: number | null } | null> {
  const rows = await db<{ envio_xml: Buffer | null; dte_type: number | null; folio: number | null }[]>`
    SELECT d.envio_xml, d.dte_type, d.folio
      FROM invoices i LEFT JOIN invoice_dtes d ON d.invoice_id = i.id
     WHERE i.merchant_id = ${merchantId} AND i.id = ${invoiceId}`;
  return rows[0] ?? null;
}
