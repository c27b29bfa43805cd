import { createHash } from 'node:crypto';
import type { Queryable } from '../db/client.js';
import { clock } from '../clock.js';
import { publicInvoiceUrl } from '../invoices/public-url.js';
import { getInvoice, type InvoiceWithItems } from '../invoices/queries.js';
import { chargingMerchant, type ChargingMerchant } from '../checkout/credentials.js';
import * as q from './queries.js';
import { findInvoiceDte, type InvoiceDte } from '../dte/queries.js';
import type { PrintedDte } from './render.js';
import { renderInvoicePdfInThread } from './render-pool.js';
import { DraftPdfCache, draftPdfs } from './draft-cache.js';
import { pdfFilename } from './text.js';

export interface InvoicePdf {
  content: Buffer;
  /** Hex SHA-256 of `content`. */
  sha256: string;
  /** A draft's PDF: rendered on demand (kept in memory while unchanged), marked as a draft, never stored. */
  draft: boolean;
  /** For Content-Disposition: `INV-000001.pdf`, `borrador-<id>.pdf`, `draft-<id>.pdf`. */
  filename: string;
}

const sha256 = (content: Buffer) => createHash('sha256').update(content).digest('hex');

/** What the PDF prints of the invoice's tax document: SII's printed representation (decisions §15). */
function printedDte(d: InvoiceDte): PrintedDte {
  return { type: d.dte_type, folio: d.folio, ted: d.ted, resolutionNumber: d.resolucion_numero, resolutionDate: d.resolucion_fecha };
}

/**
 * The PDF of one of the merchant's invoices, or null when there is no such invoice.
 *
 * An issued invoice (any status but draft) has one document forever: the first caller renders
 * and stores it (`ON CONFLICT DO NOTHING`), then everybody — this caller included — serves the
 * stored row, so the API download, the hosted page and the e-mail attachment are the same bytes
 * even when two of them race to render it first. A draft is never stored; an unchanged one is
 * rendered once per process (draft-cache.ts).
 *
 * `publicBase` is the service's public base URL (`config.publicBaseUrl`): every caller must pass
 * the same one, since the stored document prints the hosted page's address.
 */
export async function invoicePdf(db: Queryable, merchantId: string, invoiceId: string, publicBase: string): Promise<InvoicePdf | null> {
  const stored = await q.storedPdfFor(db, merchantId, invoiceId);
  if (stored) return storedPdf(stored);
  const invoice = await getInvoice(db, merchantId, invoiceId);
  if (!invoice) return null;
  const merchant = await chargingMerchant(db, merchantId);
  if (!merchant) return null;
  if (invoice.status !== 'draft') return renderAndStore(db, { invoice, merchant, dte: await findInvoiceDte(db, invoiceId) }, publicBase);
  const publicUrl = publicInvoiceUrl(publicBase, invoice.public_token);
  const content = await draftPdfs.get(DraftPdfCache.keyOf([invoice, merchant, publicUrl]), () =>
    renderInvoicePdfInThread(invoice, merchant, { draft: true, publicUrl, canCharge: merchant.can_charge }),
  );
  return { content, sha256: sha256(content), draft: true, filename: pdfFilename(invoice) };
}

/** An issued invoice's stored document, named after the invoice. */
const issuedPdf = (pdf: { content: Buffer; sha256: string }, invoice: Parameters<typeof pdfFilename>[0]): InvoicePdf => ({
  content: pdf.content,
  sha256: pdf.sha256,
  draft: false,
  filename: pdfFilename(invoice),
});
const storedPdf = (stored: q.StoredPdf): InvoicePdf => issuedPdf(stored, stored.invoice);

/** What an issued invoice's PDF is rendered from. */
export interface PdfSources {
  invoice: InvoiceWithItems;
  merchant: ChargingMerchant;
  dte: InvoiceDte | null;
}

async function renderAndStore(db: Queryable, { invoice, merchant, dte }: PdfSources, publicBase: string): Promise<InvoicePdf> {
  const publicUrl = publicInvoiceUrl(publicBase, invoice.public_token);
  const content = await renderInvoicePdfInThread(invoice, merchant, { draft: false, publicUrl, canCharge: merchant.can_charge, dte: dte ? printedDte(dte) : undefined });
  const hash = sha256(content);
  if (await q.insertPdfIfAbsent(db, invoice.id, content, hash, clock.now())) return issuedPdf({ content, sha256: hash }, invoice);
  // Another caller stored first: theirs is the document.
  const kept = await q.storedPdfFor(db, invoice.merchant_id, invoice.id);
  if (!kept) throw new Error(`invoice_pdfs row of ${invoice.id} vanished after insert`);
  return storedPdf(kept);
}

/**
 * invoicePdf for a caller that has read the invoice, its merchant, its DTE and its stored PDF
 * already (the e-mail job): the stored document, or one rendered from those rows and stored first
 * when there was none. Null for a draft (a draft's PDF is never stored).
 */
export async function issuedInvoicePdf(
  db: Queryable,
  sources: PdfSources,
  stored: { content: Buffer; sha256: string } | null,
  publicBase: string,
): Promise<InvoicePdf | null> {
  const { invoice } = sources;
  if (invoice.status === 'draft') return null;
  return stored ? issuedPdf(stored, invoice) : renderAndStore(db, sources, publicBase);
}

/**
 * For a caller handed only the invoice id: renders and stores the issued invoice's PDF unless it
 * already is, and returns the stored document. Null for an unknown id or a draft (a draft's PDF
 * is never stored). The e-mail job, which has the rows already, calls issuedInvoicePdf instead.
 */
export async function storeInvoicePdf(db: Queryable, invoiceId: string, publicBase: string): Promise<InvoicePdf | null> {
  const merchantId = await q.invoiceMerchantId(db, invoiceId);
  if (!merchantId) return null;
  const pdf = await invoicePdf(db, merchantId, invoiceId, publicBase);
  return pdf && !pdf.draft ? pdf : null;
}
