import { createSql, type Queryable, type Sql } from '../src/db/client.js';
import { insertInvoice, getInvoice } from '../src/invoices/queries.js';
import { emitEvent } from '../src/events/emit.js';
import * as invoiceService from '../src/invoices/service.js';
import { createInvoiceBody } from '../src/invoices/schemas.js';
import { ApiKeyStore } from '../src/http/auth.js';
import { lookupKey, requestHash, storeAnswer } from '../src/http/idempotency.js';
import { newId, randomToken } from '../src/ids.js';
import { openBenchDatabase, seedMerchant } from './db.js';
import { readFileSync, readdirSync } from 'node:fs';
const ITEMS = [
  { description: 'Consultoría noviembre', quantity: 2, unit_price: 5000 },
  { description: 'Soporte mensual', quantity: 1, unit_price: 12000 },
  { description: 'Horas adicionales', quantity: 3, unit_price: 2500 },
];
const BODY = { client: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl', rut: '76.086.428-5' }, due_date: '2030-12-31', items: ITEMS };
function pgTicks(dbName: string): number {
  let t = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.startsWith('postgres: ') && cmd.includes(` ${dbName} `)) {
        const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
        t += Number(f[11]) + Number(f[12]);
      }
    } catch {}
  }
  return t * 10000; // µs
}
const db = await openBenchDatabase(() => {});
const sql = createSql(db.url, { max: 1 });
try {
  const seed = await seedMerchant(sql);
  const auth = (await new ApiKeyStore(sql).lookup(seed.apiKey))!;
  const deps = { urls: { apiBase: `http://x/api`, publicBase: 'http://x' } } as unknown as invoiceService.InvoiceDeps;
  const input = createInvoiceBody.parse(BODY);
  const first = await sql.begin((tx) => invoiceService.createInvoice(tx, auth.merchant, input, deps));
  const full = invoiceService.invoiceResource(first as never, deps.urls);
  const hash = requestHash(BODY);
  let n = 0;
  const newInv = () => ({ id: newId(), merchant_id: seed.merchantId, external_reference: null, status: 'draft' as const, currency: 'CLP', exchange_rate: null, base_currency: null, issue_date: '2026-01-15', due_date: '2030-12-31', is_tax_exempt: false, tax_inclusive: false, tax_rate: '19.00', subtotal: '29500', tax_total: '5605', total: '35105', public_token: randomToken(), locale: 'es' as const, created_at: new Date() });
  const its = () => ITEMS.map((it, i) => ({ id: newId(), position: i, product_id: null, description: it.description, quantity: String(it.quantity), unit_price: String(it.unit_price), line_total: String(it.quantity * it.unit_price) }));
  const cases: [string, () => Promise<unknown>][] = [
    ['SELECT 1', () => sql`SELECT 1`],
    ['getInvoice', () => getInvoice(sql, seed.merchantId, first.id)],
    ['empty tx (BEGIN+COMMIT)', () => sql.begin(async () => {})],
    ['tx{SELECT 1}', () => sql.begin((tx) => tx`SELECT 1`)],
    ['tx{lookupKey}', () => sql.begin((tx) => lookupKey(tx, seed.merchantId, 'r', `k${++n}`, hash))],
    ['tx{insert by email}', () => sql.begin((tx) => insertInvoice(tx, newInv(), { email: 'pagos@andes.cl' }, its()))],
    ['tx{event full}', () => sql.begin((tx) => emitEvent(tx, deps.boss, seed.merchantId, 'invoice.created', { object: full }))],
    ['tx{event small}', () => sql.begin((tx) => emitEvent(tx, deps.boss, seed.merchantId, 'invoice.created', { object: {} }))],
    ['tx{storeAnswer}', () => sql.begin((tx) => storeAnswer(tx, seed.merchantId, 'r', `s${++n}`, hash, 201, JSON.stringify(invoiceService.createdResponse(first, deps.urls))))],
    ['tx{createInvoice}', () => sql.begin((tx) => invoiceService.createInvoice(tx, auth.merchant, input, deps))],
  ];
  for (const [label, fn] of cases) {
    for (let i = 0; i < 200; i++) await fn();
    const N = Number(process.env.N ?? 1500);
    const c0 = process.cpuUsage(); const p0 = pgTicks(db.name); const t0 = performance.now();
    for (let i = 0; i < N; i++) await fn();
    const c = process.cpuUsage(c0); const p = pgTicks(db.name) - p0; const wall = performance.now() - t0;
    console.log(`${label.padEnd(26)} client ${((c.user + c.system) / N).toFixed(0).padStart(5)} µs (sys ${(c.system / N).toFixed(0).padStart(4)})  pg ${(p / N).toFixed(0).padStart(5)} µs  wall ${(wall * 1000 / N).toFixed(0).padStart(5)} µs`);
  }
} finally {
  await sql.end();
  await db.cleanup();
}
