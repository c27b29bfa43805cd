// What submitting the documents to the SII records: uploads (dte_submissions), each document's
// answer, and the invoice's and note's mirror of it (docs/decisions.md §15).
import type { Queryable } from '../db/client.js';
import { DOCUMENT_COLUMNS, type DocumentRow } from '../dte/queries.js';

/** Merchants with documents waiting for an upload, or with an upload whose answer is owed. */
export async function merchantsToSubmit(db: Queryable): Promise<string[]> {
  const rows = await db<{ merchant_id: string }[]>`
    SELECT merchant_id FROM dte_documents WHERE status = 'pending'
    UNION SELECT merchant_id FROM dte_submissions WHERE status = 'uploading'`;
  return rows.map((r) => r.merchant_id);
}

/** Uploads with a track id and no final answer, untouched since `before`. */
export async function staleSentSubmissions(db: Queryable, before: Date): Promise<string[]> {
  const rows = await db<{ id: string }[]>`SELECT id FROM dte_submissions WHERE status = 'sent' AND updated_at < ${before}`;
  return rows.map((r) => r.id);
}

/** Which of the SII's services uploads a document: boletas (39, 41) go to the boleta service (docs/decisions.md §20). */
export type Channel = 'soap' | 'boleta';

/** Up to `limit` of the merchant's documents waiting for an upload through the channel, oldest first, locked for this transaction. */
export async function lockPendingDocuments(db: Queryable, merchantId: string, channel: Channel, limit: number): Promise<DocumentRow[]> {
  return db<DocumentRow[]>`
    SELECT ${db.unsafe(DOCUMENT_COLUMNS)} FROM dte_documents
     WHERE merchant_id = ${merchantId} AND status = 'pending' AND (dte_type IN (39, 41)) = ${channel === 'boleta'}
     ORDER BY created_at, dte_type, folio LIMIT ${limit}
       FOR UPDATE SKIP LOCKED`;
}

export interface SubmissionRow {
  id: string;
  merchant_id: string;
  channel: Channel;
  status: 'uploading' | 'sent' | 'done' | 'abandoned';
  envio_xml: Buffer;
  track_id: string | null;
  uploaded_at: Date;
}

/** The upload's intent, recorded before the call, its documents with it; leased to the caller. */
export async function insertSubmission(
  db: Queryable,
  s: { id: string; merchant_id: string; channel: Channel; envio_xml: Buffer; document_ids: string[]; now: Date; leased_until: Date },
): Promise<void> {
  await db`
    INSERT INTO dte_submissions (id, merchant_id, channel, status, envio_xml, leased_until, uploaded_at, created_at, updated_at)
    VALUES (${s.id}, ${s.merchant_id}, ${s.channel}, 'uploading', ${s.envio_xml}, ${s.leased_until}, ${s.now}, ${s.now}, ${s.now})`;
  await db`
    UPDATE dte_documents SET status = 'uploading', submission_id = ${s.id}, updated_at = ${s.now}
     WHERE id = ANY(${s.document_ids}::uuid[]) AND status = 'pending'`;
}

/** One of the merchant's uploads through the channel whose answer is owed, leased to the caller; null when none is free. */
export async function leaseOpenSubmission(db: Queryable, merchantId: string, channel: Channel, now: Date, until: Date): Promise<SubmissionRow | null> {
  const rows = await db<SubmissionRow[]>`
    UPDATE dte_submissions SET leased_until = ${until}
     WHERE id = (SELECT id FROM dte_submissions
                  WHERE merchant_id = ${merchantId} AND channel = ${channel} AND status = 'uploading' AND (leased_until IS NULL OR leased_until < ${now})
                  ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING id, merchant_id, channel, status, envio_xml, track_id, uploaded_at`;
  return rows[0] ?? null;
}

export async function releaseSubmission(db: Queryable, id: string): Promise<void> {
  await db`UPDATE dte_submissions SET leased_until = NULL WHERE id = ${id}`;
}

export async function getSubmission(db: Queryable, id: string): Promise<SubmissionRow | null> {
  const rows = await db<SubmissionRow[]>`SELECT id, merchant_id, channel, status, envio_xml, track_id, uploaded_at FROM dte_submissions WHERE id = ${id}`;
  return rows[0] ?? null;
}

export async function submissionDocuments(db: Queryable, submissionId: string): Promise<DocumentRow[]> {
  return db<DocumentRow[]>`
    SELECT ${db.unsafe(DOCUMENT_COLUMNS)} FROM dte_documents WHERE submission_id = ${submissionId} ORDER BY dte_type, folio`;
}

/** SII took the upload: its track id, on the submission and its documents. False when it was settled meanwhile. */
export async function markSubmissionSent(db: Queryable, id: string, trackId: string, now: Date): Promise<boolean> {
  const rows = await db`
    UPDATE dte_submissions SET status = 'sent', track_id = ${trackId}, leased_until = NULL, updated_at = ${now}
     WHERE id = ${id} AND status = 'uploading' RETURNING id`;
  if (rows.length === 0) return false;
  await db`UPDATE dte_documents SET status = 'sent', updated_at = ${now} WHERE submission_id = ${id} AND status = 'uploading'`;
  return true;
}

/** SII took nothing of this upload: its documents wait for the next one. */
export async function abandonSubmission(db: Queryable, id: string, now: Date): Promise<void> {
  await db`UPDATE dte_submissions SET status = 'abandoned', leased_until = NULL, updated_at = ${now} WHERE id = ${id} AND status = 'uploading'`;
  await db`
    UPDATE dte_documents SET status = 'pending', submission_id = NULL, updated_at = ${now}
     WHERE submission_id = ${id} AND status = 'uploading'`;
}

/** Some documents of an upload SII never received go back to waiting; the upload is over. */
export async function returnToPending(db: Queryable, ids: string[], now: Date): Promise<void> {
  await db`
    UPDATE dte_documents SET status = 'pending', submission_id = NULL, updated_at = ${now}
     WHERE id = ANY(${ids}::uuid[]) AND status = 'uploading'`;
}

export async function closeSubmission(db: Queryable, id: string, status: 'done' | 'abandoned', siiStatus: string | null, now: Date): Promise<void> {
  await db`
    UPDATE dte_submissions SET status = ${status}, sii_status = coalesce(${siiStatus}, sii_status), leased_until = NULL, updated_at = ${now}
     WHERE id = ${id} AND status IN ('uploading', 'sent')`;
}

/** SII's final answer on one document; null when it had one already (a concurrent run recorded it). */
export async function finishDocument(
  db: Queryable,
  id: string,
  status: 'accepted' | 'accepted_with_objections' | 'rejected',
  reason: string | null,
  now: Date,
): Promise<DocumentRow | null> {
  const rows = await db<DocumentRow[]>`
    UPDATE dte_documents SET status = ${status}, reason = ${reason}, updated_at = ${now}
     WHERE id = ${id} AND status IN ('uploading', 'sent')
    RETURNING ${db.unsafe(DOCUMENT_COLUMNS)}`;
  return rows[0] ?? null;
}

/**
 * What the invoice shows of one of its documents, from the document: its DTE's status and track
 * id, or its credit note's status. An upload under way is still `pending` to the API.
 */
export async function mirrorOnInvoice(db: Queryable, documentId: string, now: Date): Promise<void> {
  await db`
    UPDATE invoices i SET
      dte_status = CASE WHEN d.note_id IS NOT NULL THEN i.dte_status ELSE CASE d.status WHEN 'uploading' THEN 'pending' ELSE d.status END END,
      dte_track_id = CASE WHEN d.note_id IS NOT NULL THEN i.dte_track_id ELSE s.track_id END,
      credit_note_status = CASE WHEN d.dte_type = 61 AND d.folio = i.credit_note_folio THEN CASE d.status WHEN 'uploading' THEN 'pending' ELSE d.status END ELSE i.credit_note_status END,
      updated_at = ${now}
      FROM dte_documents d LEFT JOIN dte_submissions s ON s.id = d.submission_id
     WHERE d.id = ${documentId} AND i.id = d.invoice_id`;
  await db`
    UPDATE invoice_notes n SET dte_status = CASE d.status WHEN 'uploading' THEN 'pending' ELSE d.status END, dte_track_id = s.track_id, updated_at = ${now}
      FROM dte_documents d LEFT JOIN dte_submissions s ON s.id = d.submission_id
     WHERE d.id = ${documentId} AND n.id = d.note_id`;
}
