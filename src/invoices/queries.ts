import type { Queryable } from '../db/client.js';
import {
  asColumnType,
  clientColumnNames,
  commaList,
  identifiers,
  invoiceColumns,
  invoiceRowColumns,
  itemColumnNames,
  itemColumns,
  itemObject,
  listedObject,
  valueColumnNames,
  type ListedInvoice,
  type NewInvoice,
} from './columns.js';
import type { InvoiceStatus } from './schemas.js';
import type { SourceItem, SourceReference } from '../dte/source.js';

export type { ListedInvoice, NewInvoice } from './columns.js';

/** An item as stored: what its tax document reads, and its own identity. */
export interface InvoiceItemRow extends SourceItem {
  id: string;
  product_id: string | null;
}

/** A reference to another document (docs/tax-documents.md): the SII's Referencia. */
export type DocumentReference = SourceReference;

export interface InvoiceRow {
  id: string;
  merchant_id: string;
  client_id: string;
  client_name: string;
  client_email: string;
  client_rut: string | null;
  client_phone: string | null;
  client_address: string | null;
  client_giro: string | null;
  client_comuna: string | null;
  client_ciudad: string | null;
  invoice_number: string | null;
  external_reference: string | null;
  status: InvoiceStatus;
  currency: string;
  exchange_rate: string | null;
  base_currency: string | null;
  issue_date: string;
  due_date: string;
  is_tax_exempt: boolean;
  tax_inclusive: boolean;
  tax_rate: string;
  subtotal: string;
  taxable_amount: string;
  exempt_amount: string;
  discount_total: string;
  global_discount_percent: string | null;
  global_discount_amount: string | null;
  global_discount_description: string | null;
  references: DocumentReference[];
  tax_total: string;
  total: string;
  amount_paid: string;
  amount_credited: string;
  amount_debited: string;
  public_token: string;
  locale: 'es' | 'en';
  sent_at: Date | null;
  paid_at: Date | null;
  cancelled_at: Date | null;
  cancel_reason: string | null;
  last_viewed_at: Date | null;
  reminders_sent: number;
  payment_provider: string | null;
  payment_transaction_id: string | null;
  source: 'api' | 'checkout';
  /** docs/decisions.md §15: the tax document, null for a merchant that issues none. */
  dte_type: number | null;
  dte_folio: number | null;
  dte_status: string | null;
  dte_track_id: string | null;
  /** The credit note that cancelled the DTE (type 61). */
  credit_note_folio: number | null;
  credit_note_status: string | null;
  created_at: Date;
  updated_at: Date;
}

/** An invoice as its public token finds it. */
export interface TokenInvoice {
  id: string;
  merchant_id: string;
  status: InvoiceStatus;
  locale: 'es' | 'en';
}

export type InvoiceWithItems = InvoiceRow & { items: InvoiceItemRow[] };

export type NewInvoiceItem = InvoiceItemRow & { position: number };

/** The client an invoice is for, whose details the invoice keeps as they are now. */
export interface ClientSnapshot {
  id: string;
  name: string;
  email: string;
  rut: string | null;
  phone: string | null;
  address: string | null;
  giro: string | null;
  comuna: string | null;
  ciudad: string | null;
}

/** The merchant's client with this e-mail, ignoring case. */
export interface ClientByEmail {
  email: string;
}

/**
 * The invoice and its items in one statement. The row comes back as getInvoiceWithItems reads it (items
 * as text, in order), so the caller can describe the new invoice without reading it again. Null
 * when the client is given by e-mail and the merchant has none with it.
 */
export async function insertInvoice(db: Queryable, inv: NewInvoice, client: ClientSnapshot, items: NewInvoiceItem[]): Promise<InvoiceWithItems>;
export async function insertInvoice(db: Queryable, inv: NewInvoice, client: ClientByEmail, items: NewInvoiceItem[]): Promise<InvoiceWithItems | null>;
export async function insertInvoice(
  db: Queryable,
  inv: NewInvoice,
  client: ClientSnapshot | ClientByEmail,
  items: NewInvoiceItem[],
): Promise<InvoiceWithItems | null> {
  const clientRow =
    'id' in client
      ? db`SELECT ${client.id}::uuid AS id, ${client.name}::text AS name, ${client.email}::text AS email,
                  ${client.rut}::text AS rut, ${client.phone}::text AS phone, ${client.address}::text AS address,
                  ${client.giro}::text AS giro, ${client.comuna}::text AS comuna, ${client.ciudad}::text AS ciudad`
      : db`SELECT id, name, email, rut, phone, address, giro, comuna, ciudad FROM clients
            WHERE merchant_id = ${inv.merchant_id} AND lower(email) = lower(${client.email})`;
  const values = { ...inv, updated_at: inv.created_at };
  const inserted = [...clientColumnNames, ...valueColumnNames];
  const itemValues = itemColumnNames.filter((c) => c !== 'invoice_id');
  const rows = await db<InvoiceWithItems[]>`
    WITH client AS (${clientRow}), invoice AS (
      INSERT INTO invoices (${identifiers(db, inserted)})
      SELECT ${commaList(db, [
        ...clientColumnNames.map((c) => db`${db(`client.${c.slice('client_'.length)}`)}`),
        ...valueColumnNames.map((c) => asColumnType(db, values[c], invoiceColumns[c].type)),
      ])}
        FROM client
      RETURNING ${invoiceRowColumns(db, 'invoices')}
    ), item AS (
      INSERT INTO invoice_items (${identifiers(db, itemColumnNames)})
      SELECT ${identifiers(db, itemColumnNames.map((c) => (c === 'invoice_id' ? 'invoice.id' : `it.${c}`)))}
        FROM invoice,
             unnest(${commaList(
               db,
               itemValues.map((c) =>
                 // postgres.js types an array of booleans as one boolean: they go as text.
                 itemColumns[c].type === 'bool'
                   ? db`${items.map((i) => String(i[c]))}::text[]::bool[]`
                   : db`${items.map((i) => i[c] as string)}::${db.unsafe(itemColumns[c].type)}[]`,
               ),
             )})
               AS it (${identifiers(db, itemValues)})
      RETURNING *
    )
    SELECT invoice.*,
           coalesce((SELECT json_agg(${itemObject(db, 'item')} ORDER BY item.position)
             FROM item), '[]'::json) AS items
      FROM invoice`;
  return rows[0] ?? null;
}

/**
 * The items of invoice `i`, as a column of the same statement (a SELECT's or an UPDATE's
 * RETURNING), in order and as text so no amount passes through a float.
 */
export const itemsJson = (db: Queryable) => db`
  coalesce((SELECT json_agg(${itemObject(db, 'it')} ORDER BY it.position)
    FROM invoice_items it WHERE it.invoice_id = i.id), '[]'::json)`;

/** The invoice row and its items; the API's Invoice resource is read.ts's getInvoice. */
export async function getInvoiceWithItems(db: Queryable, merchantId: string, id: string): Promise<InvoiceWithItems | null> {
  const rows = await db<InvoiceWithItems[]>`
    SELECT ${invoiceRowColumns(db, 'i')}, ${itemsJson(db)} AS items FROM invoices i WHERE i.merchant_id = ${merchantId} AND i.id = ${id}`;
  return rows[0] ?? null;
}

export async function getInvoiceRow(db: Queryable, merchantId: string, id: string): Promise<InvoiceRow | null> {
  const rows = await db<InvoiceRow[]>`SELECT ${invoiceRowColumns(db, 'i')} FROM invoices i WHERE i.merchant_id = ${merchantId} AND i.id = ${id}`;
  return rows[0] ?? null;
}

export interface InvoiceFilters {
  status?: InvoiceStatus;
  client_id?: string;
  external_reference?: string;
  updated_since?: string;
}

export async function listInvoices(db: Queryable, merchantId: string, f: InvoiceFilters, limit: number, offset: number): Promise<ListedInvoice[]> {
  // The page is cut first, on the index alone (ids only: an index-only scan skips the rows
  // OFFSET passes over without reading them), and rows and items are read for that page only.
  // Each invoice comes back as one JSON object named as ListedInvoice, amounts as text (none passes
  // through a float) and timestamps as the API writes them: the web process parses a page once,
  // natively, instead of column by column and Date by Date (half its time on a list page).
  const rows = await db<{ invoice: ListedInvoice }[]>`
    SELECT ${listedObject(db, 'i', itemsJson(db))} AS invoice
      FROM (
      SELECT id FROM invoices
       WHERE merchant_id = ${merchantId}
         ${f.status ? db`AND status = ${f.status}` : db``}
         ${f.client_id ? db`AND client_id = ${f.client_id}` : db``}
         ${f.external_reference !== undefined ? db`AND external_reference = ${f.external_reference}` : db``}
         ${f.updated_since ? db`AND updated_at >= ${f.updated_since}::timestamptz` : db``}
       ORDER BY created_at DESC, id DESC
       LIMIT ${limit} OFFSET ${offset}
    ) page
    JOIN invoices i ON i.id = page.id
    ORDER BY i.created_at DESC, i.id DESC`;
  return rows.map((r) => r.invoice);
}

/**
 * Invoices are inserted as `api` invoices; a checkout's is marked before it is sent, so sending
 * queues no invoice e-mail and the reminder planner never picks it up.
 */
export async function markCheckoutInvoice(db: Queryable, merchantId: string, invoiceId: string): Promise<void> {
  await db`UPDATE invoices SET source = 'checkout' WHERE merchant_id = ${merchantId} AND id = ${invoiceId}`;
}
