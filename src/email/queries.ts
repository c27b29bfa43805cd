import type { Queryable } from '../db/client.js';
import type { MerchantRow } from '../merchants/queries.js';
import type { InvoiceDte } from '../dte/queries.js';
import type { EmailRow } from '../email-queue/queries.js';

/** Another run of the same e-mail holds a live claim on its row: it is delivering right now. */
export class EmailInFlightError extends Error {
  constructor(id: string) {
    super(`e-mail ${id} is being delivered by another run; retry once it is done`);
    this.name = 'EmailInFlightError';
  }
}

export async function findEmail(db: Queryable, id: string): Promise<EmailRow | null> {
  const rows = await db<EmailRow[]>`SELECT * FROM emails WHERE id = ${id}`;
  return rows[0] ?? null;
}

/**
 * The common case of a run's claim in one statement: the row is queued, nobody's claim is live,
 * and its invoice has not made it stale (a reminder of a paid or cancelled invoice, the invoice
 * e-mail of a cancelled one). Counts the attempt. Null otherwise, and then the caller finds out
 * which. The returned `sending_until` is the run's token for recording its outcome: it is cut to
 * milliseconds so that it survives the round trip through a JavaScript Date.
 */
export async function claimFreshEmail(db: Queryable, id: string, seconds: number): Promise<EmailRow | null> {
  const rows = await db<EmailRow[]>`
    UPDATE emails e SET sending_until = date_trunc('milliseconds', now()) + make_interval(secs => ${seconds}),
                        attempts = attempts + 1
     WHERE e.id = ${id} AND e.status = 'queued' AND (e.sending_until IS NULL OR e.sending_until < now())
       AND NOT EXISTS (
         SELECT 1 FROM invoices i
          WHERE i.id = e.invoice_id AND i.merchant_id = e.merchant_id
            AND ((e.kind = 'reminder' AND i.status IN ('paid', 'cancelled')) OR (e.kind = 'invoice' AND i.status = 'cancelled')))
    RETURNING *`;
  return rows[0] ?? null;
}

/** Extends a live claim of this run (`lease` is its token); the new token, or null when lost. */
export async function renewEmailClaim(db: Queryable, id: string, lease: Date, seconds: number): Promise<Date | null> {
  const rows = await db<{ sending_until: Date }[]>`
    UPDATE emails SET sending_until = date_trunc('milliseconds', now()) + make_interval(secs => ${seconds})
     WHERE id = ${id} AND status = 'queued' AND sending_until = ${lease}
    RETURNING sending_until`;
  return rows[0]?.sending_until ?? null;
}

/**
 * Final: the message lost its reason before it went out; `reason` says which. Never while another
 * run's claim is live: that run may already have handed the message over. False when not skipped.
 */
export async function markSkipped(db: Queryable, id: string, reason: string): Promise<boolean> {
  const rows = await db`
    UPDATE emails SET status = 'skipped', last_error = ${reason}, sending_until = NULL
     WHERE id = ${id} AND status = 'queued' AND (sending_until IS NULL OR sending_until < now())
    RETURNING id`;
  return rows.length > 0;
}

/**
 * Records the delivery made under the claim `lease`. Also when that claim ran out, unless another
 * run has a live claim of its own (it will record its outcome): the message did go out, and
 * leaving the row queued would have it sent again. False when it was not recorded.
 */
export async function markSent(db: Queryable, id: string, lease: Date, subject: string, providerId: string, at: Date): Promise<boolean> {
  const rows = await db`
    UPDATE emails SET status = 'sent', subject = ${subject}, provider_message_id = ${providerId}, sent_at = ${at},
                      last_error = NULL, sending_until = NULL
     WHERE id = ${id} AND status = 'queued'
       AND (sending_until = ${lease} OR sending_until IS NULL OR sending_until < now())
    RETURNING id`;
  return rows.length > 0;
}

/**
 * Records a failed attempt, and ends the claim so that the retry need not wait for it to run
 * out. Only by the run whose claim `lease` still is: a run that lost its claim must not erase what
 * a later run did. False when it was not recorded.
 */
export async function recordFailure(db: Queryable, id: string, lease: Date, error: string, final: boolean): Promise<boolean> {
  const rows = await db`
    UPDATE emails SET last_error = ${error.slice(0, 1000)}, status = CASE WHEN ${final} THEN 'failed' ELSE status END,
                      sending_until = NULL
     WHERE id = ${id} AND status = 'queued' AND sending_until = ${lease}
    RETURNING id`;
  return rows.length > 0;
}

/** Beside the invoice itself, what an invoice's e-mail is made of. */
export interface InvoiceEmailSources {
  merchant: MerchantRow;
  /** The credential fields set for the merchant's payment provider. */
  provider_fields: string[];
  dte: InvoiceDte | null;
  /** The invoice's PDF as stored (issued invoices keep one forever), or null when not yet. */
  stored_pdf: { content: Buffer; sha256: string } | null;
}

type SourcesRow = MerchantRow & {
  provider_fields: string[];
  dte_type: InvoiceDte['dte_type'] | null;
  dte_folio: number | null;
  dte_ted: string | null;
  dte_envio_xml: Buffer | null;
  dte_resolucion_numero: number | null;
  dte_resolucion_fecha: string | null;
  pdf_content: Buffer | null;
  pdf_sha256: string | null;
};

/**
 * The merchant (with its provider's credential fields), the invoice's DTE and its stored PDF in
 * one statement, read beside the invoice: one by one they were three more round trips, each on a
 * pooled connection of its own, for every e-mail. The DTE's and the PDF's columns are prefixed so
 * that none is taken for a merchant's (the merchant has a resolution of its own). `documents`
 * says when the message attaches them: `always` (the invoice e-mail, a reminder), `checkout` (a
 * receipt: only a checkout's invoice, never e-mailed itself, has its documents go with it) or
 * `never`; otherwise they are not read: both null.
 */
export async function invoiceEmailSources(
  db: Queryable,
  merchantId: string,
  invoiceId: string,
  documents: 'always' | 'checkout' | 'never',
): Promise<InvoiceEmailSources | null> {
  const read = documents === 'checkout' ? db`i.source = 'checkout'` : db`${documents === 'always'}`;
  const [row] = await db<SourcesRow[]>`
    SELECT m.*, coalesce(c.fields, '{}') AS provider_fields,
           d.dte_type AS dte_type, d.folio AS dte_folio, d.ted AS dte_ted, d.envio_xml AS dte_envio_xml,
           d.resolucion_numero AS dte_resolucion_numero, d.resolucion_fecha AS dte_resolucion_fecha,
           p.content AS pdf_content, p.sha256 AS pdf_sha256
      FROM merchants m
      LEFT JOIN provider_credentials c ON c.merchant_id = m.id AND c.provider = m.payment_provider
      LEFT JOIN invoices i ON i.merchant_id = m.id AND i.id = ${invoiceId}
      LEFT JOIN invoice_dtes d ON d.invoice_id = i.id AND ${read}
      LEFT JOIN invoice_pdfs p ON p.invoice_id = i.id AND ${read}
     WHERE m.id = ${merchantId}`;
  if (!row) return null;
  const { provider_fields, dte_type, dte_folio, dte_ted, dte_envio_xml, dte_resolucion_numero, dte_resolucion_fecha, pdf_content, pdf_sha256, ...merchant } = row;
  return {
    merchant,
    provider_fields,
    dte:
      dte_type === null
        ? null
        : { dte_type, folio: dte_folio!, ted: dte_ted!, envio_xml: dte_envio_xml!, resolucion_numero: dte_resolucion_numero!, resolucion_fecha: dte_resolucion_fecha! },
    stored_pdf: pdf_content === null ? null : { content: pdf_content, sha256: pdf_sha256! },
  };
}
