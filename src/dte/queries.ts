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

/**
 * What issuing a document takes beyond the tax profile: the sealed certificate, when there is one
 * and CAFs too. Every send asks, so both lookups are by primary key: a merchant has a folio counter
 * of a type exactly when it loaded a CAF of it (they are created together, in addCaf).
 */
export async function signingSetup(db: Queryable, merchantId: string): Promise<{ sealed_pkcs12: Buffer } | null> {
  const rows = await db<{ sealed_pkcs12: Buffer }[]>`
    SELECT c.sealed_pkcs12 FROM dte_certificates c
     WHERE c.merchant_id = ${merchantId} AND EXISTS (SELECT 1 FROM dte_folio_counters f WHERE f.merchant_id = c.merchant_id)`;
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

/** Whether the merchant has loaded CAFs of the type (its folio counter exists exactly then, see signingSetup). */
export async function issuesType(db: Queryable, merchantId: string, type: DteType): Promise<boolean> {
  const rows = await db`SELECT 1 FROM dte_folio_counters WHERE merchant_id = ${merchantId} AND dte_type = ${type}`;
  return rows.length > 0;
}

/** An invoice's own document: a factura (33, 34) or a boleta (39, 41). */
export type InvoiceDteType = 33 | 34 | 39 | 41;

export interface NewInvoiceDte {
  invoice_id: string;
  merchant_id: string;
  dte_type: InvoiceDteType;
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

/** A CLP-only document for an invoice in another currency (docs/decisions.md §15). */
export async function markDteNotApplicable(db: Queryable, invoiceId: string): Promise<void> {
  await db`UPDATE invoices SET dte_status = 'not_applicable' WHERE id = ${invoiceId}`;
}

export interface InvoiceDte {
  dte_type: InvoiceDteType;
  folio: number;
  /** The TED as signed: the PDF's barcode. */
  ted: string;
  /** The signed EnvioDTE (an EnvioBOLETA for a boleta), ISO-8859-1. */
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

// ─── Documents issued, as the SII is to receive them ─────────────────────────

export const DOCUMENT_STATUSES = ['pending', 'uploading', 'sent', 'accepted', 'accepted_with_objections', 'rejected'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];

export interface DocumentRow {
  id: string;
  merchant_id: string;
  invoice_id: string;
  dte_type: DteType;
  folio: number;
  signed_dte: string;
  receiver_rut: string;
  /** YYYY-MM-DD. */
  issue_date: string;
  /** Whole pesos. */
  total: string;
  status: DocumentStatus;
  submission_id: string | null;
  reason: string | null;
}

export const DOCUMENT_COLUMNS = 'id, merchant_id, invoice_id, dte_type, folio, signed_dte, receiver_rut, issue_date::text, total::text, status, submission_id, reason';

export async function insertDocument(
  db: Queryable,
  d: Pick<DocumentRow, 'id' | 'merchant_id' | 'invoice_id' | 'dte_type' | 'folio' | 'signed_dte' | 'receiver_rut' | 'issue_date' | 'total'> & {
    note_id: string | null;
    ted: string;
    created_at: Date;
  },
): Promise<void> {
  await db`
    INSERT INTO dte_documents (id, merchant_id, invoice_id, note_id, dte_type, folio, signed_dte, ted, receiver_rut, issue_date, total, status, created_at, updated_at)
    VALUES (${d.id}, ${d.merchant_id}, ${d.invoice_id}, ${d.note_id}, ${d.dte_type}, ${d.folio}, ${d.signed_dte}, ${d.ted}, ${d.receiver_rut},
            ${d.issue_date}::date, ${d.total}, 'pending', ${d.created_at}, ${d.created_at})`;
}

/** The invoice's own DTE (not a note's) as submitted, for a note that modifies it. */
export async function invoiceDocument(db: Queryable, invoiceId: string): Promise<DocumentRow | null> {
  const rows = await db<DocumentRow[]>`
    SELECT ${db.unsafe(DOCUMENT_COLUMNS)} FROM dte_documents WHERE invoice_id = ${invoiceId} AND note_id IS NULL`;
  return rows[0] ?? null;
}

/** A note's DTE as submitted, for a debit note that cancels it. */
export async function noteDocument(db: Queryable, noteId: string): Promise<DocumentRow | null> {
  const rows = await db<DocumentRow[]>`SELECT ${db.unsafe(DOCUMENT_COLUMNS)} FROM dte_documents WHERE note_id = ${noteId}`;
  return rows[0] ?? null;
}

/** The note's DTE once issued: its type, folio and the signed EnvioDTE that is its dte.xml. */
export async function setNoteDte(db: Queryable, noteId: string, type: 56 | 61, folio: number, envioXml: Buffer): Promise<void> {
  await db`
    UPDATE invoice_notes SET dte_type = ${type}, dte_folio = ${folio}, dte_status = 'pending', envio_xml = ${envioXml}
     WHERE id = ${noteId}`;
}

/** The credit note that cancelled the invoice, as the invoice's `credit_note` shows it. */
export async function setCreditNote(db: Queryable, invoiceId: string, folio: number): Promise<void> {
  await db`UPDATE invoices SET credit_note_folio = ${folio}, credit_note_status = 'pending' WHERE id = ${invoiceId}`;
}

export interface AdminDocumentRow {
  id: string;
  invoice_id: string;
  invoice_number: string | null;
  /** A note's own number (CN-000001, DN-000001), null for the invoice's DTE. */
  note_number: string | null;
  dte_type: number;
  folio: number;
  status: DocumentStatus;
  reason: string | null;
  track_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A merchant's documents, newest first, optionally of one status: what support staff look at. */
export async function listDocuments(db: Queryable, merchantId: string, status: DocumentStatus | undefined, limit: number): Promise<AdminDocumentRow[]> {
  return db<AdminDocumentRow[]>`
    SELECT d.id, d.invoice_id, i.invoice_number, n.number AS note_number, d.dte_type, d.folio, d.status, d.reason, s.track_id, d.created_at, d.updated_at
      FROM dte_documents d JOIN invoices i ON i.id = d.invoice_id LEFT JOIN invoice_notes n ON n.id = d.note_id
      LEFT JOIN dte_submissions s ON s.id = d.submission_id
     WHERE d.merchant_id = ${merchantId} ${status ? db`AND d.status = ${status}` : db``}
     ORDER BY d.created_at DESC, d.folio DESC LIMIT ${limit}`;
}
