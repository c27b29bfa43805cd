/**
 * The database work under the two requests `npm run bench` measures, straight through
 * postgres.js: the ceiling the API is compared with, the whole of what the HTTP floor
 * (bench/floor-server.ts) does behind its routes, and bench/profile.ts's baseline.
 */
import type { Queryable, Sql } from '../src/db/client.js';
import { getInvoiceWithItems, insertInvoice, type ClientSnapshot } from '../src/invoices/queries.js';
import { newId, randomToken } from '../src/ids.js';
import { itemRows } from '../src/invoices/create.js';
import { computeTotals } from '../src/money.js';

export const ITEMS = [
  { description: 'Consultoría noviembre', quantity: 2, unit_price: 5000 },
  { description: 'Soporte mensual', quantity: 1, unit_price: 12000 },
  { description: 'Horas adicionales', quantity: 3, unit_price: 2500 },
];

const TOTALS = computeTotals(ITEMS, { currency: 'CLP', taxRate: '19', taxInclusive: false, taxExempt: false });

export interface CeilingTarget {
  merchantId: string;
  /** The invoice the GETs read. */
  invoiceId: string;
  /** The client the API finds by e-mail, handed over as found. */
  client: ClientSnapshot;
}

/** The single statement GET /invoices/{id} runs: the invoice and the json_agg of its items. */
export async function readInvoice(db: Queryable, t: CeilingTarget) {
  const row = await getInvoiceWithItems(db, t.merchantId, t.invoiceId);
  if (!row) throw new Error('invoice not found');
  return row;
}

/** The draft and its 3 items in the one statement the API inserts them with. */
export async function insertDraft(db: Queryable, t: CeilingTarget): Promise<string> {
  const id = newId();
  await insertInvoice(
    db,
    {
      id,
      merchant_id: t.merchantId,
      external_reference: null,
      status: 'draft',
      currency: 'CLP',
      exchange_rate: null,
      base_currency: null,
      issue_date: '2026-01-15',
      due_date: '2030-12-31',
      is_tax_exempt: false,
      tax_inclusive: false,
      tax_rate: TOTALS.taxRate.toFixed(2),
      subtotal: TOTALS.subtotal.toFixed(),
      taxable_amount: TOTALS.taxableAmount.toFixed(),
      exempt_amount: TOTALS.exemptAmount.toFixed(),
      discount_total: TOTALS.discountTotal.toFixed(),
      global_discount_percent: null,
      global_discount_amount: null,
      global_discount_description: null,
      references: [],
      tax_total: TOTALS.taxTotal.toFixed(),
      total: TOTALS.total.toFixed(),
      public_token: randomToken(),
      locale: 'es',
      created_at: new Date(),
    },
    t.client,
    itemRows(ITEMS, TOTALS),
  );
  return id;
}

/** A minimal durable create: BEGIN, insertDraft, COMMIT. */
export function createDraft(sql: Sql, t: CeilingTarget): Promise<string> {
  return sql.begin((tx) => insertDraft(tx, t)) as Promise<string>;
}
