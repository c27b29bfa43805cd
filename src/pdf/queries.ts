import type { Queryable } from '../db/client.js';

export interface StoredPdf {
  content: Buffer;
  sha256: string;
  /** What the file name is made of. */
  invoice: { id: string; invoice_number: string | null; status: string; locale: 'es' | 'en' };
}

/** The stored PDF of one of the merchant's invoices, in one round trip (the hot path). */
export async function storedPdfFor(db: Queryable, merchantId: string, invoiceId: string): Promise<StoredPdf | null> {
  const rows = await db<StoredPdf[]>`
    SELECT p.content, p.sha256,
           json_build_object('id', i.id, 'invoice_number', i.invoice_number, 'status', i.status, 'locale', i.locale) AS invoice
      FROM invoice_pdfs p JOIN invoices i ON i.id = p.invoice_id
     WHERE i.merchant_id = ${merchantId} AND p.invoice_id = ${invoiceId}`;
  return rows[0] ?? null;
}

/** Keeps the first rendering: a concurrent second one is dropped, never overwrites. True when this one is kept. */
export async function insertPdfIfAbsent(db: Queryable, invoiceId: string, content: Buffer, sha256: string, now: Date): Promise<boolean> {
  const rows = await db`
    INSERT INTO invoice_pdfs (invoice_id, content, sha256, created_at)
    VALUES (${invoiceId}, ${content}, ${sha256}, ${now})
    ON CONFLICT (invoice_id) DO NOTHING
    RETURNING invoice_id`;
  return rows.length > 0;
}

/** A rendering of an issued invoice other than its document: a boleta's ticket (docs/decisions.md §20). */
export type PdfVariant = 'ticket';

/** The stored variant of one of the merchant's invoices, in one round trip. */
export async function storedVariantFor(db: Queryable, merchantId: string, invoiceId: string, variant: PdfVariant): Promise<StoredPdf | null> {
  const rows = await db<StoredPdf[]>`
    SELECT p.content, p.sha256,
           json_build_object('id', i.id, 'invoice_number', i.invoice_number, 'status', i.status, 'locale', i.locale) AS invoice
      FROM invoice_pdf_variants p JOIN invoices i ON i.id = p.invoice_id
     WHERE i.merchant_id = ${merchantId} AND p.invoice_id = ${invoiceId} AND p.variant = ${variant}`;
  return rows[0] ?? null;
}

/** insertPdfIfAbsent for a variant: the first rendering is kept. True when this one is. */
export async function insertVariantIfAbsent(db: Queryable, invoiceId: string, variant: PdfVariant, content: Buffer, sha256: string, now: Date): Promise<boolean> {
  const rows = await db`
    INSERT INTO invoice_pdf_variants (invoice_id, variant, content, sha256, created_at)
    VALUES (${invoiceId}, ${variant}, ${content}, ${sha256}, ${now})
    ON CONFLICT (invoice_id, variant) DO NOTHING
    RETURNING invoice_id`;
  return rows.length > 0;
}

/** The merchant of an invoice, for a job that is handed only the invoice id. */
export async function invoiceMerchantId(db: Queryable, invoiceId: string): Promise<string | null> {
  const rows = await db<{ merchant_id: string }[]>`SELECT merchant_id FROM invoices WHERE id = ${invoiceId}`;
  return rows[0]?.merchant_id ?? null;
}

/** Beside the note, its invoice and its merchant, what a note's PDF prints (docs/decisions.md §17). */
export interface NotePrintSources {
  /** YYYY-MM-DD: its DTE's FchEmis, or the merchant's date of the note when it has no DTE. */
  issue_date: string;
  /** The note's own DTE, null without one: its timbre and the resolution it was issued under. */
  dte: { ted: string; resolucion_numero: number; resolucion_fecha: string } | null;
  /** The DTE of the document the note modifies (the invoice's, or the credit note's a debit note cancels), when it has one. */
  target: { dte_type: number; folio: number; issue_date: string } | null;
  /** The credit note a debit note cancels: its number and the merchant's date of it. */
  cancels: { number: string; date: string } | null;
}

/**
 * One statement for the note. Only the EnvioDTE records the resolution a note was issued under
 * (an invoice's stands in invoice_dtes): it is read from its Carátula, so a merchant that moved
 * from certificación to producción since still prints the note's own. Both DTE rows are found
 * through the invoice, whose documents are indexed.
 */
export async function notePrintSources(db: Queryable, noteId: string): Promise<NotePrintSources | null> {
  const rows = await db<NotePrintSources[]>`
    SELECT
      coalesce(d.issue_date, (n.created_at AT TIME ZONE m.timezone)::date)::text AS issue_date,
      CASE WHEN d.id IS NULL THEN NULL ELSE json_build_object(
        'ted', d.ted,
        'resolucion_numero', substring(convert_from(n.envio_xml, 'LATIN1') from '<NroResol>([0-9]+)</NroResol>')::int,
        'resolucion_fecha', substring(convert_from(n.envio_xml, 'LATIN1') from '<FchResol>([0-9-]+)</FchResol>')) END AS dte,
      CASE WHEN t.id IS NULL THEN NULL ELSE json_build_object('dte_type', t.dte_type, 'folio', t.folio, 'issue_date', t.issue_date::text) END AS target,
      CASE WHEN c.id IS NULL THEN NULL ELSE json_build_object('number', c.number, 'date', (c.created_at AT TIME ZONE m.timezone)::date::text) END AS cancels
      FROM invoice_notes n
      JOIN merchants m ON m.id = n.merchant_id
      LEFT JOIN dte_documents d ON d.invoice_id = n.invoice_id AND d.note_id = n.id
      LEFT JOIN dte_documents t ON t.invoice_id = n.invoice_id AND t.note_id IS NOT DISTINCT FROM n.cancels_note_id
      LEFT JOIN invoice_notes c ON c.id = n.cancels_note_id
     WHERE n.id = ${noteId}`;
  return rows[0] ?? null;
}
