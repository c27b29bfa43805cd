import type { Sql } from '../src/db/client.js';
import { getInvoice, insertInvoice, type ClientSnapshot } from '../src/invoices/queries.js';
import { newId, randomToken } from '../src/ids.js';
import { itemRows } from '../src/invoices/service.js';
import { Decimal } from '../src/money.js';

/**
 * The database work under the two requests `npm run bench` measures, straight through
 * postgres.js: the ceiling the API is compared with, and the whole of what the HTTP floor
 * (bench/floor-server.ts) does behind its routes.
 */

export const ITEMS = [
  { description: 'Consultoría noviembre', quantity: 2, unit_price: 5000 },
  { description: 'Soporte mensual', quantity: 1, unit_price: 12000 },
  { description: 'Horas adicionales', quantity: 3, unit_price: 2500 },
];

const LINE_TOTALS = ITEMS.map((it) => new Decimal(it.quantity).times(it.unit_price));

export interface CeilingTarget {
  merchantId: string;
  /** The invoice the GETs read. */
  invoiceId: string;
  /** The client the API finds by e-mail, handed over as found. */
  client: ClientSnapshot;
}

/** The single statement GET /invoices/{id} runs: the invoice and the json_agg of its items. */
export async function readInvoice(sql: Sql, t: CeilingTarget) {
  const row = await getInvoice(sql, t.merchantId, t.invoiceId);
  if (!row) throw new Error('invoice not found');
  return row;
}

/** A minimal durable create: one transaction inserting the invoice and its 3 items, as the API inserts them. */
export async function createInvoice(sql: Sql, t: CeilingTarget): Promise<string> {
  const id = newId();
  await sql.begin((tx) =>
    insertInvoice(
      tx,
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
        tax_rate: '19.00',
        subtotal: '29500',
        tax_total: '5605',
        total: '35105',
        public_token: randomToken(),
        locale: 'es',
        created_at: new Date(),
      },
      t.client,
      itemRows(ITEMS, LINE_TOTALS),
    ),
  );
  return id;
}
