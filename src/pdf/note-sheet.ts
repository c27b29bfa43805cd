// A credit or debit note as its sheet (docs/decisions.md §17): its invoice's client, its lines and
// totals, its references and last the document it modifies with the note's reason.
import { formatDate } from '../format.js';
import type { NoteRow } from '../invoices/note-queries.js';
import type { InvoiceRow } from '../invoices/queries.js';
import type { Locale } from '../invoices/schemas.js';
import { dteTitle, type PrintedDte } from './dte-box.js';
import { referenceLabels, referenceRows, type ReferenceRow } from './references.js';
import { clientBlock, itemRow, totalsRows, type Sheet, type Treatment } from './sheet.js';
import type { PdfLabels } from './text.js';

/** The document a note modifies, as its last reference names it: by its DTE, or by its own number when it has none. */
export type ModifiedDocument = { date: string } & ({ dteType: number; folio: number } | { kind: 'invoice' | 'credit'; number: string });

/** A credit or debit note as its PDF prints it (docs/decisions.md §17). */
export interface PrintedNote {
  note: NoteRow;
  /** The note's invoice: its client, language, tax treatment and number. */
  invoice: InvoiceRow;
  /** YYYY-MM-DD: its DTE's issue date, or the merchant's date of the note. */
  issueDate: string;
  modifies: ModifiedDocument;
}

/** The row of the document a note modifies, with the note's reason: the SII's RazonRef. */
function modifiedRow(modifies: ModifiedDocument, reason: string, L: PdfLabels, locale: Locale): ReferenceRow {
  if ('dteType' in modifies) return referenceRows([{ type: String(modifies.dteType), folio: String(modifies.folio), date: modifies.date, reason }], L, locale)[0]!;
  return { type: modifies.kind === 'invoice' ? L.title : L.creditNote, folio: modifies.number, date: formatDate(modifies.date, locale), reason };
}

/** The note as it prints: with `dte` its own number moves to the dates, as an invoice's does; no payment link. */
export function noteSheet({ note, invoice, issueDate, modifies }: PrintedNote, dte: PrintedDte | null, L: PdfLabels, locale: Locale): Sheet {
  const name = note.kind === 'credit' ? L.creditNote : L.debitNote;
  const dates: [string, string][] = [
    [L.issueDate, formatDate(issueDate, locale)],
    [`${L.title} ${L.number}`, invoice.invoice_number ?? ''],
    [L.currency, note.currency],
  ];
  // The red box shows the folio: the note's own number goes here, as an invoice's does.
  if (dte) dates.unshift([`${name} ${L.number}`, note.number]);
  const treatment: Treatment = { currency: note.currency, is_tax_exempt: invoice.is_tax_exempt, tax_rate: invoice.tax_rate };
  return {
    locale,
    title: name.toUpperCase(),
    number: `${L.number} ${note.number}`,
    info: { title: dte ? dteTitle(dte) : `${name} ${note.number}`, subject: `${name} - ${invoice.client_name}`, created: note.created_at },
    client: clientBlock(invoice, L),
    dates,
    references: [{ labels: referenceLabels(L), rows: [...referenceRows(note.references, L, locale), modifiedRow(modifies, note.description, L, locale)] }],
    items: note.items.map((item) => itemRow(item, treatment, L, locale)),
    totals: totalsRows({ ...note, ...treatment }, L, locale, { itemised: true }),
    taxInclusive: invoice.tax_inclusive && !invoice.is_tax_exempt,
    vatNotice: null,
    link: null,
    footer: note.number,
  };
}
