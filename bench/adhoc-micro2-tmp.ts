import * as invoiceService from '../src/invoices/service.js';
import { createInvoiceBody } from '../src/invoices/schemas.js';
import { computeTotals } from '../src/money.js';
import { dateInZone } from '../src/clock.js';
import { newId, randomToken } from '../src/ids.js';
import { requestHash } from '../src/http/idempotency.js';
import { unstorableJson } from '../src/http/validation.js';
const ITEMS = [
  { description: 'Consultoría noviembre', quantity: 2, unit_price: 5000 },
  { description: 'Soporte mensual', quantity: 1, unit_price: 12000 },
  { description: 'Horas adicionales', quantity: 3, unit_price: 2500 },
];
const BODY = { client: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl', rut: '76.086.428-5' }, due_date: '2030-12-31', items: ITEMS };
const raw = JSON.stringify(BODY);
function time(label: string, fn: () => unknown, n = 20000) {
  for (let i = 0; i < 2000; i++) fn();
  const t = performance.now();
  for (let i = 0; i < n; i++) fn();
  console.log(label.padEnd(30), ((performance.now() - t) * 1000 / n).toFixed(2), 'µs');
}
time('JSON.parse', () => JSON.parse(raw));
time('unstorableJson', () => unstorableJson(BODY));
time('zod parse', () => createInvoiceBody.parse(JSON.parse(raw)));
time('requestHash', () => requestHash(BODY));
time('computeTotals', () => computeTotals(ITEMS, { currency: 'CLP', taxRate: '19.00', taxInclusive: false, taxExempt: false }));
time('dateInZone', () => dateInZone(new Date(), 'America/Santiago'));
time('newId x5', () => { newId(); newId(); newId(); newId(); newId(); });
time('randomToken', () => randomToken());
const fakeRow: any = { id: newId(), merchant_id: newId(), client_id: newId(), client_name: 'x', client_email: 'e', client_rut: null, client_phone: null, client_address: null, invoice_number: null, external_reference: null, status: 'draft', currency: 'CLP', exchange_rate: null, base_currency: null, issue_date: '2026-01-01', due_date: '2030-12-31', is_tax_exempt: false, tax_inclusive: false, tax_rate: '19.00', subtotal: '29500', tax_total: '5605', total: '35105', amount_paid: '0', public_token: randomToken(), locale: 'es', sent_at: null, paid_at: null, cancelled_at: null, cancel_reason: null, last_viewed_at: null, reminders_sent: 0, payment_provider: null, payment_transaction_id: null, source: 'api', created_at: new Date(), updated_at: new Date(), items: ITEMS.map((it) => ({ id: newId(), product_id: null, description: it.description, quantity: '2', unit_price: '5000', line_total: '10000' })) };
const fakeDb: any = (strings: TemplateStringsArray) => Promise.resolve(strings[0]!.includes('INSERT INTO events') ? [{ subscribed: false }] : [fakeRow]);
fakeDb.json = (x: unknown) => x;
const merchant = { id: newId(), name: 'm', email: 'e', base_currency: 'CLP', default_tax_rate: '19.00', default_locale: 'es' as const, timezone: 'America/Santiago', invoice_prefix: 'INV-' };
const input = createInvoiceBody.parse(BODY);
const deps = { urls: { apiBase: 'http://x/api', publicBase: 'http://x' } } as any;
let t = performance.now(); const N = 20000;
for (let i = 0; i < N; i++) await invoiceService.createInvoice(fakeDb, merchant, input, deps);
console.log('createInvoice (fake db)'.padEnd(30), ((performance.now() - t) * 1000 / N).toFixed(2), 'µs');
