import type postgres from 'postgres';
import type { Queryable } from '../db/client.js';
import type { InvoiceItemRow, InvoiceRow } from './queries.js';

// The columns of invoices and invoice_items, declared once: the insert, the reads of one invoice
// and the list page are built from these lists, so a column added here reaches all of them.
// `satisfies` ties each list to its row type, and test/invoice-shape.test.ts ties it to the
// migrated tables, so a column that one of the three would miss fails the typecheck or the tests.
// Names and types here are constants: only they ever reach the SQL as identifiers or casts.

/** PostgreSQL's name for the column's type (information_schema's udt_name), and what a value is cast to. */
type ColumnType = 'uuid' | 'text' | 'numeric' | 'date' | 'bool' | 'int2' | 'int4' | 'timestamptz' | 'jsonb';

interface InvoiceColumn {
  type: ColumnType;
  /** Where the insert takes it from: the new invoice, or the client snapshot (client_x ← the client's x). Otherwise its default. */
  insert?: 'value' | 'client';
  /** Read by the API's Invoice resource (invoiceResource): a list page carries only these. */
  resource?: true;
}

interface ItemColumn {
  type: ColumnType;
  /** Part of InvoiceItemRow: the items an invoice is read with. */
  row?: true;
}

/** In the tables' order, so the rows read from this list keep the keys `SELECT *` gave them. */
export const invoiceColumns = {
  id: { type: 'uuid', insert: 'value', resource: true },
  merchant_id: { type: 'uuid', insert: 'value' },
  client_id: { type: 'uuid', insert: 'client', resource: true },
  client_name: { type: 'text', insert: 'client', resource: true },
  client_email: { type: 'text', insert: 'client', resource: true },
  client_rut: { type: 'text', insert: 'client', resource: true },
  client_phone: { type: 'text', insert: 'client', resource: true },
  client_address: { type: 'text', insert: 'client', resource: true },
  invoice_number: { type: 'text', resource: true },
  external_reference: { type: 'text', insert: 'value', resource: true },
  status: { type: 'text', insert: 'value', resource: true },
  currency: { type: 'text', insert: 'value', resource: true },
  exchange_rate: { type: 'numeric', insert: 'value', resource: true },
  base_currency: { type: 'text', insert: 'value', resource: true },
  issue_date: { type: 'date', insert: 'value', resource: true },
  due_date: { type: 'date', insert: 'value', resource: true },
  is_tax_exempt: { type: 'bool', insert: 'value', resource: true },
  tax_inclusive: { type: 'bool', insert: 'value', resource: true },
  tax_rate: { type: 'numeric', insert: 'value', resource: true },
  subtotal: { type: 'numeric', insert: 'value', resource: true },
  tax_total: { type: 'numeric', insert: 'value', resource: true },
  total: { type: 'numeric', insert: 'value', resource: true },
  amount_paid: { type: 'numeric', resource: true },
  public_token: { type: 'text', insert: 'value', resource: true },
  locale: { type: 'text', insert: 'value' },
  sent_at: { type: 'timestamptz' },
  paid_at: { type: 'timestamptz', resource: true },
  cancelled_at: { type: 'timestamptz' },
  cancel_reason: { type: 'text' },
  last_viewed_at: { type: 'timestamptz' },
  reminders_sent: { type: 'int4' },
  payment_provider: { type: 'text', resource: true },
  payment_transaction_id: { type: 'text', resource: true },
  created_at: { type: 'timestamptz', insert: 'value', resource: true },
  updated_at: { type: 'timestamptz', insert: 'value', resource: true },
  source: { type: 'text' },
  dte_type: { type: 'int2', resource: true },
  dte_folio: { type: 'int4', resource: true },
  dte_status: { type: 'text', resource: true },
  dte_track_id: { type: 'text', resource: true },
  credit_note_folio: { type: 'int4', resource: true },
  credit_note_status: { type: 'text', resource: true },
  client_giro: { type: 'text', insert: 'client', resource: true },
  client_comuna: { type: 'text', insert: 'client', resource: true },
  client_ciudad: { type: 'text', insert: 'client', resource: true },
  taxable_amount: { type: 'numeric', insert: 'value', resource: true },
  exempt_amount: { type: 'numeric', insert: 'value', resource: true },
  discount_total: { type: 'numeric', insert: 'value', resource: true },
  global_discount_percent: { type: 'numeric', insert: 'value', resource: true },
  global_discount_amount: { type: 'numeric', insert: 'value', resource: true },
  global_discount_description: { type: 'text', insert: 'value', resource: true },
  references: { type: 'jsonb', insert: 'value', resource: true },
  amount_credited: { type: 'numeric', resource: true },
  amount_debited: { type: 'numeric', resource: true },
} as const satisfies { [K in keyof InvoiceRow]: InvoiceColumn };

/** In the order the items' JSON has always had its keys. */
export const itemColumns = {
  id: { type: 'uuid', row: true },
  invoice_id: { type: 'uuid' },
  position: { type: 'int4' },
  product_id: { type: 'text', row: true },
  description: { type: 'text', row: true },
  quantity: { type: 'numeric', row: true },
  unit_price: { type: 'numeric', row: true },
  discount_percent: { type: 'numeric', row: true },
  discount_amount: { type: 'numeric', row: true },
  exempt: { type: 'bool', row: true },
  line_total: { type: 'numeric', row: true },
} as const satisfies { [K in keyof InvoiceItemRow | 'position' | 'invoice_id']: ItemColumn };

type InvoiceColumns = typeof invoiceColumns;
type ColumnName = keyof InvoiceColumns;
type ColumnsWith<P> = { [K in ColumnName]: InvoiceColumns[K] extends P ? K : never }[ColumnName];

export const invoiceColumnNames = Object.keys(invoiceColumns) as ColumnName[];
export const itemColumnNames = Object.keys(itemColumns) as (keyof typeof itemColumns)[];

/** A list page has PostgreSQL write its timestamps in the API's form rather than as Dates. */
type Listed<T> = T extends Date ? Date | string : T;

/** The columns the API's invoice resource shows, and the items. */
export type ListedInvoice = { [K in ColumnsWith<{ resource: true }>]: Listed<InvoiceRow[K]> } & { items: InvoiceItemRow[] };

/** What the insert takes from its caller; a new invoice was last updated when it was created. */
export type NewInvoice = Omit<Pick<InvoiceRow, ColumnsWith<{ insert: 'value' }>>, 'updated_at'>;

export const clientColumnNames = invoiceColumnNames.filter((c) => (invoiceColumns[c] as InvoiceColumn).insert === 'client');

export const valueColumnNames = invoiceColumnNames.filter(
  (c): c is ColumnsWith<{ insert: 'value' }> => (invoiceColumns[c] as InvoiceColumn).insert === 'value',
);

type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** Fragments separated by commas (postgres.js joins an array of fragments with spaces). */
export const commaList = (db: Queryable, fragments: Fragment[]) => fragments.map((f, i) => (i === 0 ? f : db`, ${f}`));

/**
 * Quoted names, comma-separated. A fragment of their own: inside a larger statement postgres.js
 * picks a helper's form from the keywords before it, and after `INSERT INTO t (` writes VALUES.
 */
export const identifiers = (db: Queryable, names: string[]) => db`${db(names)}`;

/** Every column of the invoice row, as `alias.column`. */
export const invoiceRowColumns = (db: Queryable, alias: string) => identifiers(db, invoiceColumnNames.map((c) => `${alias}.${c}`));

/** A parameter as a value of the column's type. */
export const asColumnType = (db: Queryable, value: unknown, type: ColumnType) =>
  // As JSON text, so postgres.js never takes a JS array for a PostgreSQL one.
  type === 'jsonb' ? db`${JSON.stringify(value)}::text::jsonb` : db`${value as string}::${db.unsafe(type)}`;

// Amounts as text so none passes through a float.
const jsonValue = (db: Queryable, alias: string, column: string, type: ColumnType) =>
  type === 'numeric' ? db`${db(`${alias}.${column}`)}::text` : db`${db(`${alias}.${column}`)}`;

const jsonPair = (db: Queryable, key: string, value: Fragment) => db`${db.unsafe(`'${key}'`)}, ${value}`;

/** One item row (alias `alias`) as InvoiceItemRow. */
export const itemObject = (db: Queryable, alias: string) =>
  db`json_build_object(${commaList(
    db,
    itemColumnNames.filter((c) => (itemColumns[c] as ItemColumn).row).map((c) => jsonPair(db, c, jsonValue(db, alias, c, itemColumns[c].type))),
  )})`;

// A timestamp column as the API writes it: RFC 3339 UTC, milliseconds truncated as a Date read
// from the same value would hold them.
const rfc3339 = (db: Queryable, column: string) => db`to_char(${db(column)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Invoice `alias` as one ListedInvoice object, its items given as `items`. json_build_object takes
 * at most 100 arguments: room for 49 resource columns beside the items.
 */
export const listedObject = (db: Queryable, alias: string, items: Fragment) =>
  db`json_build_object(${commaList(db, [
    ...invoiceColumnNames
      .filter((c) => (invoiceColumns[c] as InvoiceColumn).resource)
      .map((c) => {
        const type = invoiceColumns[c].type;
        return jsonPair(db, c, type === 'timestamptz' ? rfc3339(db, `${alias}.${c}`) : jsonValue(db, alias, c, type));
      }),
    jsonPair(db, 'items', items),
  ])})`;
