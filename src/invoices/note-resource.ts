import { iso } from '../http/schemas.js';
import { wireAmount, wireQuantity, wireRate, wireUnitPrice } from '../money.js';
import type { CreditNoteResource, DebitNoteResource } from './note-schemas.js';
import type { NoteRow } from './note-queries.js';
import type { Urls } from './resource.js';

// Note rows → the API's CreditNote and DebitNote: the one mapping of each.

const PATHS = { credit: 'credit-notes', debit: 'debit-notes' } as const;
const TITLES = { credit: 'Credit note', debit: 'Debit note' } as const;

function common(row: NoteRow, urls: Urls) {
  const self = `${urls.apiBase}/${PATHS[row.kind]}/${row.id}`;
  const title = TITLES[row.kind];
  return {
    id: row.id,
    invoice_id: row.invoice_id,
    number: row.number,
    description: row.description,
    currency: row.currency,
    items: row.items.map((it) => ({
      id: it.id,
      item_id: it.invoice_item_id,
      description: it.description,
      quantity: it.quantity === null ? null : wireQuantity(it.quantity),
      unit_price: it.unit_price === null ? null : wireUnitPrice(it.unit_price, row.currency),
      discount_percent: it.discount_percent === null ? null : wireRate(it.discount_percent),
      discount_amount: wireAmount(it.discount_amount, row.currency),
      exempt: it.exempt,
      line_total: wireAmount(it.line_total, row.currency),
    })),
    subtotal: wireAmount(row.subtotal, row.currency),
    taxable_amount: wireAmount(row.taxable_amount, row.currency),
    exempt_amount: wireAmount(row.exempt_amount, row.currency),
    discount_total: wireAmount(row.discount_total, row.currency),
    tax_total: wireAmount(row.tax_total, row.currency),
    total: wireAmount(row.total, row.currency),
    dte_folio: row.dte_folio,
    dte_status: row.dte_status,
    dte_track_id: row.dte_track_id,
    references: row.references,
    created_at: iso(row.created_at)!,
    _links: {
      self: { href: self, method: 'GET' as const, rel: 'self', title },
      invoice: { href: `${urls.apiBase}/invoices/${row.invoice_id}`, method: 'GET' as const, rel: 'invoice', title: 'Invoice' },
      pdf: { href: `${self}/pdf`, method: 'GET' as const, rel: 'pdf', title: `${title} PDF` },
      dte: { href: `${self}/dte.xml`, method: 'GET' as const, rel: 'dte', title: `${title} DTE (XML)` },
    },
  };
}

export function creditNoteResource(row: NoteRow, urls: Urls): CreditNoteResource {
  return {
    ...common(row, urls),
    reason: row.reason as CreditNoteResource['reason'],
    dte_type: row.dte_type === null ? null : 61,
    cancelled_by_debit_note_id: row.cancelled_by_id,
  };
}

export function debitNoteResource(row: NoteRow, urls: Urls): DebitNoteResource {
  return {
    ...common(row, urls),
    reason: row.reason as DebitNoteResource['reason'],
    dte_type: row.dte_type === null ? null : 56,
    credit_note_id: row.cancels_note_id,
  };
}
