// The PDFs of an invoice (as itself, as its DTE's printed representation, as its boleta on A4 or on
// a ticket) and of a note: each document becomes a `Sheet` (invoice-sheet.ts, boleta-sheet.ts,
// note-sheet.ts; sheet.ts holds what they share) and the sheet is printed on A4 (print-sheet.ts)
// or a receipt printer's roll (ticket.ts). What the options allow is checked here.
import type { InvoiceWithItems } from '../invoices/queries.js';
import type { MerchantRow } from '../merchants/queries.js';
import { boletaSheet } from './boleta-sheet.js';
import { isBoleta, type PrintedDte } from './dte-box.js';
import { invoiceSheet } from './invoice-sheet.js';
import { noteSheet, type PrintedNote } from './note-sheet.js';
import { printSheet } from './print-sheet.js';
import { pdfLabels, type PdfCopy, type PdfFormat } from './text.js';
import { printTicket } from './ticket.js';

export interface RenderOptions {
  /** A draft is marked as such on every page and carries no payment link. */
  draft: boolean;
  /** The hosted invoice page (`public_url`): printed as the payment link. */
  publicUrl: string;
  /** The merchant can take payments on that page (`can_charge`): the link says "view and pay", else "view". */
  canCharge?: boolean;
  /** An issued DTE: the PDF becomes SII's printed representation of it (docs/decisions.md §15). Never on a draft. */
  dte?: PrintedDte;
  /** The SII's cedible copy of a factura (a `dte` of type 33 or 34): the receipt box and CEDIBLE beside the timbre (docs/decisions.md §17). */
  copy?: PdfCopy;
  /** `ticket`: a boleta (a `dte` of type 39 or 41) on a receipt printer's 80 mm roll (docs/decisions.md §20); A4 otherwise. */
  format?: PdfFormat;
}

export type { PrintedDte };
export type { ModifiedDocument, PrintedNote } from './note-sheet.js';
export type { Sheet, SheetItem } from './sheet.js';

/**
 * The invoice as a PDF, in the invoice's locale, in an embedded Unicode font (fonts.ts). The
 * issuer prints with its legal profile when it has one; the hosted page's link says "view and pay"
 * only when the merchant can take payments (docs/decisions.md §11). Deterministic: the same invoice gives
 * the same bytes, as the creation date (and so the file id) comes from the invoice, not from the
 * clock.
 *
 * With `opts.dte` it is SII's printed representation of that DTE: the red box takes the title's
 * place, the invoice's own number moves to the dates, and the timbre closes the last page.
 */
export function renderInvoicePdf(invoice: InvoiceWithItems, merchant: MerchantRow, opts: RenderOptions): Promise<Buffer> {
  const locale = invoice.locale === 'en' ? 'en' : 'es';
  const L = pdfLabels(locale);
  const dte = opts.dte ?? null;
  if (dte && opts.draft) throw new Error('a draft carries no DTE');
  if (dte && (dte.type === 61) !== (dte.reference !== undefined)) throw new Error('a credit note, and only a credit note, prints the document it cancels');
  if (dte?.type === 56) throw new Error('a debit note prints as a note (renderNotePdf), never as its invoice');
  if (opts.copy === 'cedible' && dte?.type !== 33 && dte?.type !== 34) throw new Error('only a factura (a DTE of type 33 or 34) has a cedible copy');
  if (opts.format === 'ticket' && !(dte && isBoleta(dte))) throw new Error('only a boleta (a DTE of type 39 or 41) prints as a ticket');
  if (dte && isBoleta(dte)) {
    const sheet = boletaSheet(invoice, merchant, dte, opts, L, locale);
    return opts.format === 'ticket' ? printTicket(sheet, merchant, dte) : printSheet(sheet, merchant, { draft: false, dte });
  }
  return printSheet(invoiceSheet(invoice, dte, opts, L, locale), merchant, { draft: opts.draft, dte, copy: opts.copy });
}

/**
 * A credit or debit note as a PDF, in its invoice's locale: the invoice's client, the note's lines
 * and totals, its references and last the document it modifies with the note's reason. With `dte`
 * (a 61 for a credit note, a 56 for a debit note) it is SII's printed representation of it, as an
 * invoice's is; without, its title and number stand at the top right. No payment link: a note is
 * not paid on the invoice's page. Deterministic, as the invoice's PDF is.
 */
export function renderNotePdf(printed: PrintedNote, merchant: MerchantRow, dte: PrintedDte | null): Promise<Buffer> {
  const { note, invoice } = printed;
  const locale = invoice.locale === 'en' ? 'en' : 'es';
  const L = pdfLabels(locale);
  if (dte && dte.type !== (note.kind === 'credit' ? 61 : 56)) throw new Error(`a ${note.kind} note does not print as a DTE of type ${dte.type}`);
  if (dte?.reference) throw new Error('a note names the document it modifies among its references, not on its DTE');
  return printSheet(noteSheet(printed, dte, L, locale), merchant, { draft: false, dte });
}
