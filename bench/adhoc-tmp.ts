import os from 'node:os';
import { createSql, type Queryable, type Sql } from '../src/db/client.js';
import { insertInvoice } from '../src/invoices/queries.js';
import { emitEvent } from '../src/events/emit.js';
import * as invoiceService from '../src/invoices/service.js';
import { createInvoiceBody } from '../src/invoices/schemas.js';
import { ApiKeyStore } from '../src/http/auth.js';
import { lookupKey, requestHash, storeAnswer } from '../src/http/idempotency.js';
import { newId, randomToken } from '../src/ids.js';
import { openBenchDatabase, seedMerchant } from './db.js';
import { runLoops } from './load.js';

const SECONDS = Number(process.env.S ?? 4);
const ITEMS = [
  { description: 'Consultoría noviembre', quantity: 2, unit_price: 5000 },
  { description: 'Soporte mensual', quantity: 1, unit_price: 12000 },
  { description: 'Horas adicionales', quantity: 3, unit_price: 2500 },
];
const BODY = { client: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl', rut: '76.086.428-5' }, due_date: '2030-12-31', items: ITEMS };
const log = (m: string) => process.stderr.write(m + '\n');
const db = await openBenchDatabase(log);
const sql = createSql(db.url, { max: 10 });
try {
  const seed = await seedMerchant(sql);
  const auth = (await new ApiKeyStore(sql).lookup(seed.apiKey))!;
  const deps = { urls: { apiBase: `http://x/api`, publicBase: 'http://x' } } as unknown as invoiceService.InvoiceDeps;
  const input = createInvoiceBody.parse(BODY);
  const first = await sql.begin((tx) => invoiceService.createInvoice(tx, auth.merchant, input, deps));
  const client = { id: first.client_id, name: first.client_name, email: first.client_email, rut: first.client_rut, phone: null, address: null };
  const full = invoiceService.invoiceResource(first as never, deps.urls);
  const ins = (tx: Queryable) => insertInvoice(tx, {
    id: newId(), merchant_id: seed.merchantId, external_reference: null, status: 'draft', currency: 'CLP',
    exchange_rate: null, base_currency: null, issue_date: '2026-01-15', due_date: '2030-12-31', is_tax_exempt: false, tax_inclusive: false,
    tax_rate: '19.00', subtotal: '29500', tax_total: '5605', total: '35105', public_token: randomToken(), locale: 'es', created_at: new Date(),
  }, client, ITEMS.map((it, i) => ({ id: newId(), position: i, product_id: null, description: it.description, quantity: String(it.quantity), unit_price: String(it.unit_price), line_total: String(it.quantity * it.unit_price) })));
  let n = 0;
  const hash = requestHash(BODY);
  const variants: [string, (s: Sql) => Promise<unknown>][] = [
    ['ceiling', (s) => s.begin((tx) => ins(tx))],
    ['+SELECT 1', (s) => s.begin(async (tx) => { await tx`SELECT 1`; await ins(tx); })],
    ['+lookupKey', (s) => s.begin(async (tx) => { await lookupKey(tx, seed.merchantId, 'r', `k${++n}`, hash); await ins(tx); })],
    ['+storeAnswer', (s) => s.begin(async (tx) => { await ins(tx); await storeAnswer(tx, seed.merchantId, 'r', `k${++n}`, hash, 201, JSON.stringify({ a: 'x'.repeat(300) })); })],
    ['+event full', (s) => s.begin(async (tx) => { await ins(tx); await emitEvent(tx, deps.boss, seed.merchantId, 'invoice.created', { object: full }); })],
    ['+event small', (s) => s.begin(async (tx) => { await ins(tx); await emitEvent(tx, deps.boss, seed.merchantId, 'invoice.created', { object: {} }); })],
    ['ins by email', (s) => s.begin(async (tx) => { await insertInvoice(tx, { id: newId(), merchant_id: seed.merchantId, external_reference: null, status: 'draft', currency: 'CLP', exchange_rate: null, base_currency: null, issue_date: '2026-01-15', due_date: '2030-12-31', is_tax_exempt: false, tax_inclusive: false, tax_rate: '19.00', subtotal: '29500', tax_total: '5605', total: '35105', public_token: randomToken(), locale: 'es', created_at: new Date() }, { email: 'pagos@andes.cl' }, ITEMS.map((it, i) => ({ id: newId(), position: i, product_id: null, description: it.description, quantity: String(it.quantity), unit_price: String(it.unit_price), line_total: String(it.quantity * it.unit_price) }))); })],
    ['createInvoice', (s) => s.begin((tx) => invoiceService.createInvoice(tx, auth.merchant, input, deps))],
    ['API db work', (s) => s.begin(async (tx) => { const k = `k${++n}`; await lookupKey(tx, seed.merchantId, 'r', k, hash); const r = await invoiceService.createInvoice(tx, auth.merchant, input, deps); await storeAnswer(tx, seed.merchantId, 'r', k, hash, 201, JSON.stringify(invoiceService.createdResponse(r, deps.urls))); })],
  ];
  const st = (tx: Queryable, k: string) => storeAnswer(tx, seed.merchantId, 'r', k, hash, 201, JSON.stringify({ a: 'x'.repeat(300) }));
  const ev = (tx: Queryable) => emitEvent(tx, deps.boss, seed.merchantId, 'invoice.created', { object: full });
  variants.push(
    ['a seq', (s) => s.begin(async (tx) => { const k = `k${++n}`; await lookupKey(tx, seed.merchantId, 'r', k, hash); await ins(tx); await ev(tx); await st(tx, k); })],
    ['b store|commit', (s) => s.begin(async (tx) => { const k = `k${++n}`; await lookupKey(tx, seed.merchantId, 'r', k, hash); await ins(tx); await ev(tx); const p = st(tx, k); p.catch(() => {}); return [p]; }).then(async ([p]) => { await p; })],
    ['c look|ins', (s) => s.begin(async (tx) => { const k = `k${++n}`; const l = lookupKey(tx, seed.merchantId, 'r', k, hash); await ins(tx); await l; await ev(tx); const p = st(tx, k); p.catch(() => {}); return [p]; }).then(async ([p]) => { await p; })],
  );
  const only = process.env.ONLY?.split(',');
  for (const [label, op] of variants) {
    if (only && !only.includes(label)) continue;
    await runLoops(() => op(sql), 32, 1);
    const m = await runLoops(() => op(sql), 32, SECONDS);
    console.log(`${label.padEnd(14)} ${m.rps.toFixed(0).padStart(6)} req/s p50 ${m.p50.toFixed(1)} p99 ${m.p99.toFixed(1)} failed ${m.failed}  load ${os.loadavg()[0]!.toFixed(2)}`);
  }
} finally {
  await sql.end();
  await db.cleanup();
}
