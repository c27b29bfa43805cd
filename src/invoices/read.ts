import type { Queryable } from '../db/client.js';
import { AppError } from '../errors.js';
import * as q from './queries.js';
import { invoiceResource, statusSummary, type Urls } from './resource.js';

export function invoiceNotFound(id: string): AppError {
  return new AppError('invoice_not_found', `No invoice ${id}.`);
}

/** The Invoice resource of one invoice of the merchant; 404 `invoice_not_found` when there is none. */
export async function getInvoice(db: Queryable, merchantId: string, id: string, urls: Urls) {
  const full = await q.getInvoiceWithItems(db, merchantId, id);
  if (!full) throw invoiceNotFound(id);
  return invoiceResource(full, urls);
}

export async function getInvoiceStatus(db: Queryable, merchantId: string, id: string, urls: Urls) {
  const row = await q.getInvoiceRow(db, merchantId, id);
  if (!row) throw invoiceNotFound(id);
  return statusSummary(row, urls);
}

export async function listInvoices(db: Queryable, merchantId: string, filters: q.InvoiceFilters, limit: number, offset: number, urls: Urls) {
  const rows = await q.listInvoices(db, merchantId, filters, limit + 1, offset);
  return rows.map((r) => invoiceResource(r, urls));
}

