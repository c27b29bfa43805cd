import { createHash } from 'node:crypto';
import type { Queryable } from '../db/client.js';
import { clock } from '../clock.js';
import { publicInvoiceUrl } from '../invoices/public-url.js';
import { getNote, type NoteKind, type NoteRow } from '../invoices/note-queries.js';
import { getInvoiceWithItems, getInvoiceRow, type InvoiceRow, type InvoiceWithItems } from '../invoices/queries.js';
import { getMerchant, type MerchantRow } from '../merchants/queries.js';
import { chargingMerchant, type ChargingMerchant } from '../checkout/credentials.js';
import * as q from './queries.js';
import { findInvoiceDte, type InvoiceDte } from '../dte/queries.js';
import { AppError } from '../errors.js';
import type { ModifiedDocument, PrintedDte } from './render.js';
import { renderInvoicePdfInThread, renderNotePdfInThread } from './render-pool.js';
import { DraftPdfCache, draftPdfs } from './draft-cache.js';
import { pdfFilename, type PdfCopy } from './text.js';

export interface InvoicePdf {
  content: Buffer;
  /** Hex SHA-256 of `content`. */
  sha256: string;
  /** A draft's PDF: rendered on demand (kept in memory while unchanged), marked as a draft, never stored. */
  draft: boolean;
  /** For Content-Disposition: `INV-000001.pdf`, `borrador-<id>.pdf`, `draft-<id>.pdf`, a note's `CN-000001.pdf`. */
  filename: string;
}

const sha256 = (content: Buffer) => createHash('sha256').update(content).digest('hex');

/** What the PDF prints of the invoice's tax document: SII's printed representation (docs/decisions.md §15). */
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
  const invoice = await getInvoiceWithItems(db, merchantId, invoiceId);
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

/**
 * The SII's cedible copy of one of the merchant's invoices (docs/decisions.md §17), or null when there is
 * no such invoice; a 422 on `copy` for an invoice without a factura (a DTE of type 33 or 34), a
 * draft included. Rendered on every request and never stored nor cached: the stored document is
 * the original, which every other caller serves. It prints the merchant as it is now, so a legal
 * profile changed since the original was stored shows on the copy only.
 */
export async function invoiceCopyPdf(db: Queryable, merchantId: string, invoiceId: string, copy: PdfCopy, publicBase: string): Promise<InvoicePdf | null> {
  const invoice = await getInvoiceWithItems(db, merchantId, invoiceId);
  if (!invoice) return null;
  const [merchant, dte] = await Promise.all([chargingMerchant(db, merchantId), findInvoiceDte(db, invoiceId)]);
  if (!merchant) return null;
  if (dte?.dte_type !== 33 && dte?.dte_type !== 34) throw AppError.validation([{ path: 'copy', message: 'only a factura (DTE type 33 or 34) has a cedible copy, and this invoice has none' }]);
  const publicUrl = publicInvoiceUrl(publicBase, invoice.public_token);
  const content = await renderInvoicePdfInThread(invoice, merchant, { draft: false, publicUrl, canCharge: merchant.can_charge, dte: printedDte(dte), copy });
  return { content, sha256: sha256(content), draft: false, filename: pdfFilename(invoice, copy) };
}

/**
 * A boleta's ticket (docs/decisions.md §20): the boleta on a receipt printer's 80 mm roll, or null when
 * there is no such invoice; a 422 on `format` for an invoice without a boleta (a DTE of type 39 or
 * 41), a draft included: a factura's printed representation is the A4 one, with its receiver's
 * data and room for the cedible copy. Rendered once and stored apart from the invoice's document
 * (invoice_pdf_variants), as that document is: every reprint is the same bytes.
 */
export async function invoiceTicketPdf(db: Queryable, merchantId: string, invoiceId: string, publicBase: string): Promise<InvoicePdf | null> {
  const stored = await q.storedVariantFor(db, merchantId, invoiceId, 'ticket');
  if (stored) return ticketPdf(stored, stored.invoice);
  const invoice = await getInvoiceWithItems(db, merchantId, invoiceId);
  if (!invoice) return null;
  const [merchant, dte] = await Promise.all([chargingMerchant(db, merchantId), findInvoiceDte(db, invoiceId)]);
  if (!merchant) return null;
  if (dte?.dte_type !== 39 && dte?.dte_type !== 41) {
    throw AppError.validation([{ path: 'format', message: 'only a boleta (DTE type 39 or 41) prints as a ticket, and this invoice has none' }]);
  }
  const publicUrl = publicInvoiceUrl(publicBase, invoice.public_token);
  const content = await renderInvoicePdfInThread(invoice, merchant, { draft: false, publicUrl, canCharge: merchant.can_charge, dte: printedDte(dte), format: 'ticket' });
  const hash = sha256(content);
  if (await q.insertVariantIfAbsent(db, invoice.id, 'ticket', content, hash, clock.now())) return ticketPdf({ content, sha256: hash }, invoice);
  // Another caller stored first: theirs is the ticket.
  const kept = await q.storedVariantFor(db, merchantId, invoice.id, 'ticket');
  if (!kept) throw new Error(`invoice_pdf_variants row of ${invoice.id} vanished after insert`);
  return ticketPdf(kept, kept.invoice);
}

const ticketPdf = (pdf: { content: Buffer; sha256: string }, invoice: Parameters<typeof pdfFilename>[0]): InvoicePdf => ({
  content: pdf.content,
  sha256: pdf.sha256,
  draft: false,
  filename: pdfFilename(invoice, 'ticket'),
});

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

/** What a credit or debit note's PDF is rendered from besides its DTE: the note, its invoice and its merchant. */
export interface NoteSources {
  note: NoteRow;
  invoice: InvoiceRow;
  merchant: MerchantRow;
}

/** The PDF of one of the merchant's credit or debit notes (docs/decisions.md §17), or null when there is no such note. */
export async function notePdf(db: Queryable, merchantId: string, kind: NoteKind, noteId: string): Promise<InvoicePdf | null> {
  const note = await getNote(db, merchantId, kind, noteId);
  if (!note) return null;
  const [invoice, merchant] = await Promise.all([getInvoiceRow(db, merchantId, note.invoice_id), getMerchant(db, merchantId)]);
  if (!invoice || !merchant) return null;
  return printNote(db, { note, invoice, merchant });
}

/**
 * notePdf for a caller that has read the note, its invoice and its merchant already (the e-mail
 * job). Rendered on every call and never stored: what it states comes from the issued note and its
 * DTE, which never change, so every rendering gives the same bytes; only a legal profile the
 * merchant changed since shows, as on an invoice's cedible copy.
 */
export async function printNote(db: Queryable, { note, invoice, merchant }: NoteSources): Promise<InvoicePdf> {
  const printed = await q.notePrintSources(db, note.id);
  if (!printed) throw new Error(`note ${note.id} vanished while its PDF was printed`);
  const content = await renderNotePdfInThread({ note, invoice, issueDate: printed.issue_date, modifies: modifiedDocument(note, invoice, printed) }, merchant, printedNoteDte(note, printed));
  return { content, sha256: sha256(content), draft: false, filename: `${note.number}.pdf` };
}

/** The note's DTE as its PDF prints it, or null for a note without one. */
function printedNoteDte(note: NoteRow, { dte }: q.NotePrintSources): PrintedDte | null {
  if (note.dte_type === null) return null;
  if (!dte) throw new Error(`note ${note.id} has a DTE of type ${note.dte_type} but no document`);
  return { type: note.dte_type, folio: note.dte_folio!, ted: dte.ted, resolutionNumber: dte.resolucion_numero, resolutionDate: dte.resolucion_fecha };
}

/**
 * What the note modifies as its last reference prints it: the DTE its own DTE references, or, for
 * a note without a DTE, the credit note a debit note cancels or else the invoice, by number.
 */
function modifiedDocument(note: NoteRow, invoice: InvoiceRow, { target, cancels }: q.NotePrintSources): ModifiedDocument {
  if (note.dte_type !== null) {
    if (!target) throw new Error(`note ${note.id} has a DTE but the document it modifies has none`);
    return { dteType: target.dte_type, folio: target.folio, date: target.issue_date };
  }
  if (cancels) return { kind: 'credit', number: cancels.number, date: cancels.date };
  return { kind: 'invoice', number: invoice.invoice_number ?? '', date: invoice.issue_date };
}
