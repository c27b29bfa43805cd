import type { Queryable } from '../db/client.js';
import type { InvoiceStatus } from './schemas.js';

export interface InvoiceItemRow {
  id: string;
  product_id: string | null;
  description: string;
  quantity: string;
  unit_price: string;
  /** Percent off the line's gross amount, or null; discount_amount is what was taken off either way. */
  discount_percent: string | null;
  discount_amount: string;
  exempt: boolean;
  line_total: string;
}

/** A reference to another document (docs/tax-documents.md): the SII's Referencia. */
export interface DocumentReference {
  /** The SII's TpoDocRef: 801 (orden de compra), 802, 803, HES, SET or a DTE type. */
  type: string;
  folio: string;
  /** YYYY-MM-DD. */
  date: string;
  reason: string | null;
}

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

/**
 * The columns the API's invoice resource shows, and the items. A list page has PostgreSQL write
 * its timestamps in the API's form (RFC 3339 UTC, milliseconds) rather than as Dates.
 */
export type ListedInvoice = Pick<
  InvoiceRow,
  | 'id'
  | 'client_id'
  | 'client_name'
  | 'client_email'
  | 'client_phone'
  | 'client_rut'
  | 'client_address'
  | 'client_giro'
  | 'client_comuna'
  | 'client_ciudad'
  | 'invoice_number'
  | 'external_reference'
  | 'status'
  | 'currency'
  | 'exchange_rate'
  | 'base_currency'
  | 'issue_date'
  | 'due_date'
  | 'is_tax_exempt'
  | 'tax_inclusive'
  | 'tax_rate'
  | 'subtotal'
  | 'taxable_amount'
  | 'exempt_amount'
  | 'discount_total'
  | 'global_discount_percent'
  | 'global_discount_amount'
  | 'global_discount_description'
  | 'references'
  | 'tax_total'
  | 'total'
  | 'amount_paid'
  | 'amount_credited'
  | 'amount_debited'
  | 'public_token'
  | 'payment_provider'
  | 'payment_transaction_id'
  | 'dte_type'
  | 'dte_folio'
  | 'dte_status'
  | 'dte_track_id'
  | 'credit_note_folio'
  | 'credit_note_status'
> & {
  paid_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
  items: InvoiceItemRow[];
};

export type NewInvoice = Omit<
  InvoiceRow,
  | 'client_id'
  | 'client_name'
  | 'client_email'
  | 'client_rut'
  | 'client_phone'
  | 'client_address'
  | 'client_giro'
  | 'client_comuna'
  | 'client_ciudad'
  | 'invoice_number'
  | 'amount_paid'
  | 'amount_credited'
  | 'amount_debited'
  | 'sent_at'
  | 'paid_at'
  | 'cancelled_at'
  | 'cancel_reason'
  | 'last_viewed_at'
  | 'reminders_sent'
  | 'payment_provider'
  | 'payment_transaction_id'
  | 'source'
  | 'dte_type'
  | 'dte_folio'
  | 'dte_status'
  | 'dte_track_id'
  | 'credit_note_folio'
  | 'credit_note_status'
  | 'updated_at'
>;

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
 * The invoice and its items in one statement. The row comes back as getInvoice reads it (items
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
  const rows = await db<InvoiceWithItems[]>`
    WITH client AS (${clientRow}), invoice AS (
      INSERT INTO invoices (id, merchant_id, client_id, client_name, client_email, client_rut, client_phone, client_address,
                            client_giro, client_comuna, client_ciudad,
                            external_reference, status, currency, exchange_rate, base_currency, issue_date, due_date,
                            is_tax_exempt, tax_inclusive, tax_rate, subtotal, taxable_amount, exempt_amount, discount_total,
                            global_discount_percent, global_discount_amount, global_discount_description, "references",
                            tax_total, total, public_token, locale, created_at, updated_at)
      SELECT ${inv.id}, ${inv.merchant_id}, client.id, client.name, client.email, client.rut, client.phone, client.address,
             client.giro, client.comuna, client.ciudad,
             ${inv.external_reference}, ${inv.status}, ${inv.currency}, ${inv.exchange_rate}::numeric, ${inv.base_currency},
             ${inv.issue_date}::date, ${inv.due_date}::date, ${inv.is_tax_exempt}, ${inv.tax_inclusive},
             ${inv.tax_rate}::numeric, ${inv.subtotal}::numeric, ${inv.taxable_amount}::numeric, ${inv.exempt_amount}::numeric,
             ${inv.discount_total}::numeric, ${inv.global_discount_percent}::numeric, ${inv.global_discount_amount}::numeric,
             ${inv.global_discount_description}, ${JSON.stringify(inv.references)}::text::jsonb,
             ${inv.tax_total}::numeric, ${inv.total}::numeric, ${inv.public_token}, ${inv.locale}, ${inv.created_at}, ${inv.created_at}
        FROM client
      RETURNING *
    ), item AS (
      INSERT INTO invoice_items (id, invoice_id, position, product_id, description, quantity, unit_price,
                                 discount_percent, discount_amount, exempt, line_total)
      SELECT it.id, invoice.id, it.position, it.product_id, it.description, it.quantity, it.unit_price,
             it.discount_percent, it.discount_amount, it.exempt, it.line_total
        FROM invoice,
             unnest(${items.map((i) => i.id)}::uuid[], ${items.map((i) => i.position)}::int[], ${items.map((i) => i.product_id)}::text[],
                    ${items.map((i) => i.description)}::text[], ${items.map((i) => i.quantity)}::numeric[],
                    ${items.map((i) => i.unit_price)}::numeric[], ${items.map((i) => i.discount_percent)}::numeric[],
                    ${items.map((i) => i.discount_amount)}::numeric[], ${items.map((i) => String(i.exempt))}::text[]::boolean[],
                    ${items.map((i) => i.line_total)}::numeric[])
               AS it (id, position, product_id, description, quantity, unit_price, discount_percent, discount_amount, exempt, line_total)
      RETURNING *
    )
    SELECT invoice.*,
           coalesce((SELECT json_agg(${itemObject(db, 'item')} ORDER BY item.position)
             FROM item), '[]'::json) AS items
      FROM invoice`;
  return rows[0] ?? null;
}

/** One item row as InvoiceItemRow, amounts as text so none passes through a float. */
const itemObject = (db: Queryable, alias: string) => {
  const c = (column: string) => db(`${alias}.${column}`);
  return db`json_build_object(
      'id', ${c('id')}, 'product_id', ${c('product_id')}, 'description', ${c('description')},
      'quantity', ${c('quantity')}::text, 'unit_price', ${c('unit_price')}::text,
      'discount_percent', ${c('discount_percent')}::text, 'discount_amount', ${c('discount_amount')}::text,
      'exempt', ${c('exempt')}, 'line_total', ${c('line_total')}::text)`;
};

/**
 * The items of invoice `i`, as a column of the same statement (a SELECT's or an UPDATE's
 * RETURNING), in order and as text so no amount passes through a float.
 */
export const itemsJson = (db: Queryable) => db`
  coalesce((SELECT json_agg(${itemObject(db, 'it')} ORDER BY it.position)
    FROM invoice_items it WHERE it.invoice_id = i.id), '[]'::json)`;

export async function getInvoice(db: Queryable, merchantId: string, id: string): Promise<InvoiceWithItems | null> {
  const rows = await db<InvoiceWithItems[]>`
    SELECT i.*, ${itemsJson(db)} AS items FROM invoices i WHERE i.merchant_id = ${merchantId} AND i.id = ${id}`;
  return rows[0] ?? null;
}

export async function getInvoiceRow(db: Queryable, merchantId: string, id: string): Promise<InvoiceRow | null> {
  const rows = await db<InvoiceRow[]>`SELECT * FROM invoices WHERE merchant_id = ${merchantId} AND id = ${id}`;
  return rows[0] ?? null;
}

export interface InvoiceFilters {
  status?: InvoiceStatus;
  client_id?: string;
  external_reference?: string;
  updated_since?: string;
}

// A timestamp column as the API writes it: RFC 3339 UTC, milliseconds truncated as a Date read
// from the same value would hold them.
const rfc3339 = (db: Queryable, column: string) => db`to_char(${db(column)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

export async function listInvoices(db: Queryable, merchantId: string, f: InvoiceFilters, limit: number, offset: number): Promise<ListedInvoice[]> {
  // The page is cut first, on the index alone (ids only: an index-only scan skips the rows
  // OFFSET passes over without reading them), and rows and items are read for that page only.
  // Each invoice comes back as one JSON object named as ListedInvoice, amounts as text (none passes
  // through a float) and timestamps as the API writes them: the web process parses a page once,
  // natively, instead of column by column and Date by Date (half its time on a list page).
  const rows = await db<{ invoice: ListedInvoice }[]>`
    SELECT json_build_object(
             'id', i.id, 'client_id', i.client_id, 'client_name', i.client_name, 'client_email', i.client_email,
             'client_phone', i.client_phone, 'client_rut', i.client_rut, 'client_address', i.client_address,
             'client_giro', i.client_giro, 'client_comuna', i.client_comuna, 'client_ciudad', i.client_ciudad,
             'invoice_number', i.invoice_number, 'external_reference', i.external_reference,
             'status', i.status, 'currency', i.currency, 'exchange_rate', i.exchange_rate::text, 'base_currency', i.base_currency,
             'issue_date', i.issue_date, 'due_date', i.due_date, 'is_tax_exempt', i.is_tax_exempt, 'tax_inclusive', i.tax_inclusive,
             'tax_rate', i.tax_rate::text, 'subtotal', i.subtotal::text, 'taxable_amount', i.taxable_amount::text,
             'exempt_amount', i.exempt_amount::text, 'discount_total', i.discount_total::text,
             'global_discount_percent', i.global_discount_percent::text, 'global_discount_amount', i.global_discount_amount::text,
             'global_discount_description', i.global_discount_description, 'references', i."references",
             'tax_total', i.tax_total::text, 'total', i.total::text, 'amount_paid', i.amount_paid::text,
             'amount_credited', i.amount_credited::text, 'amount_debited', i.amount_debited::text, 'public_token', i.public_token, 'payment_provider', i.payment_provider,
             'payment_transaction_id', i.payment_transaction_id, 'paid_at', ${rfc3339(db, 'i.paid_at')},
             'created_at', ${rfc3339(db, 'i.created_at')}, 'updated_at', ${rfc3339(db, 'i.updated_at')}, 'items', ${itemsJson(db)},
             'dte_type', i.dte_type, 'dte_folio', i.dte_folio, 'dte_status', i.dte_status, 'dte_track_id', i.dte_track_id,
             'credit_note_folio', i.credit_note_folio, 'credit_note_status', i.credit_note_status) AS invoice
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

export async function findRate(db: Queryable, merchantId: string, currency: string, onOrBefore: string): Promise<string | null> {
  const rows = await db<{ rate: string }[]>`
    SELECT rate::text AS rate FROM exchange_rates
     WHERE merchant_id = ${merchantId} AND currency = ${currency}
       AND rate_date BETWEEN ${onOrBefore}::date - 7 AND ${onOrBefore}::date
     ORDER BY rate_date DESC LIMIT 1`;
  return rows[0]?.rate ?? null;
}

export async function upsertRate(db: Queryable, merchantId: string, currency: string, date: string, rate: string): Promise<void> {
  await db`
    INSERT INTO exchange_rates (merchant_id, currency, rate_date, rate)
    VALUES (${merchantId}, ${currency}, ${date}::date, ${rate}::numeric)
    ON CONFLICT (merchant_id, currency, rate_date) DO UPDATE SET rate = EXCLUDED.rate`;
}
