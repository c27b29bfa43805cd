// An invoice as its sheet: its client, dates, references, lines and totals, and for an issued DTE
// the invoice's own number among the dates (the red box shows the folio).
import { formatDate } from '../format.js';
import type { InvoiceWithItems } from '../invoices/queries.js';
import type { Locale } from '../invoices/schemas.js';
import { cancelledDocumentTable, dteTitle, type PrintedDte } from './dte-box.js';
import { referenceLabels, referenceRows, type ReferenceTable } from './references.js';
import { clientBlock, itemRow, totalsRows, type Sheet } from './sheet.js';
import { formatRateNumber, type PdfLabels } from './text.js';

/** What the sheet reads of the render options: a draft's marks and the hosted page's link. */
export interface InvoiceSheetOptions {
  draft: boolean;
  publicUrl: string;
  canCharge?: boolean | undefined;
}

/** The invoice (a factura or an invoice without DTE, never a boleta: boleta-sheet.ts) as it prints. */
export function invoiceSheet(invoice: InvoiceWithItems, dte: PrintedDte | null, opts: InvoiceSheetOptions, L: PdfLabels, locale: Locale): Sheet {
  // What the PDF's title and the footer call the invoice.
  const shownAs = opts.draft ? L.draft : (invoice.invoice_number ?? '');
  const dates: [string, string][] = [
    [L.issueDate, formatDate(invoice.issue_date, locale)],
    [L.dueDate, formatDate(invoice.due_date, locale)],
    [L.currency, invoice.currency],
  ];
  // The red box shows the folio: the invoice's own number, which its page and e-mails show, goes here.
  if (dte) dates.unshift([`${L.title} ${L.number}`, invoice.invoice_number ?? '']);
  if (invoice.exchange_rate !== null && invoice.base_currency) {
    dates.push([L.exchangeRate, `1 ${invoice.currency} = ${formatRateNumber(invoice.exchange_rate, locale)} ${invoice.base_currency}`]);
  }
  if (invoice.external_reference) dates.push([L.reference, invoice.external_reference]);
  // The documents this one points to (an orden de compra), then the one a credit note cancels.
  const references: ReferenceTable[] = [];
  if (invoice.references.length > 0) references.push({ labels: referenceLabels(L), rows: referenceRows(invoice.references, L, locale) });
  if (dte?.reference) references.push(cancelledDocumentTable(dte.reference, locale));

  return {
    locale,
    title: L.title.toUpperCase(),
    number: opts.draft ? L.draft : `${L.number} ${invoice.invoice_number ?? ''}`,
    info: {
      title: dte ? dteTitle(dte) : `${L.title} ${shownAs}`.trim(),
      subject: `${L.title} - ${invoice.client_name}`,
      created: invoice.sent_at ?? invoice.created_at,
    },
    client: clientBlock(invoice, L),
    dates,
    references,
    items: invoice.items.map((item) => itemRow(item, invoice, L, locale)),
    totals: totalsRows(invoice, L, locale, { itemised: false }),
    taxInclusive: invoice.tax_inclusive && !invoice.is_tax_exempt,
    vatNotice: null,
    // The payment link: the hosted page (a draft has none yet). What a merchant that cannot charge
    // offers on its page is a view, not a payment.
    link: opts.draft ? null : { label: opts.canCharge ? L.viewAndPayOnline : L.viewOnline, url: opts.publicUrl },
    footer: shownAs,
  };
}
