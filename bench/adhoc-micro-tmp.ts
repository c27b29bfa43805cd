import { invoiceResource } from '../src/invoices/service.js';
const row: any = {
  id: '019aa4a0-1111-7000-8000-000000000001', merchant_id: '019aa4a0-1111-7000-8000-000000000002', client_id: '019aa4a0-1111-7000-8000-000000000003',
  client_name: 'Comercial Andes SpA', client_email: 'pagos@andes.cl', client_rut: '76086428-5', client_phone: null, client_address: null,
  invoice_number: null, external_reference: null, status: 'draft', currency: 'CLP', exchange_rate: null, base_currency: null,
  issue_date: '2026-01-15', due_date: '2030-12-31', is_tax_exempt: false, tax_inclusive: false, tax_rate: '19.00', subtotal: '29500',
  tax_total: '5605', total: '35105', amount_paid: '0', public_token: 'abcdefghijklmnopqrstuvwxyz012345', locale: 'es', sent_at: null, paid_at: null,
  cancelled_at: null, cancel_reason: null, last_viewed_at: null, reminders_sent: 0, payment_provider: null, payment_transaction_id: null, source: 'api',
  created_at: new Date(), updated_at: new Date(),
  items: [1, 2, 3].map((i) => ({ id: `019aa4a0-1111-7000-8000-00000000001${i}`, product_id: null, description: 'Consultoría noviembre', quantity: '2', unit_price: '5000', line_total: '10000' })),
};
const urls = { apiBase: 'http://127.0.0.1:3000/api/v1/external', publicBase: 'http://127.0.0.1:3000' };
let x = 0;
for (let i = 0; i < 20000; i++) x += JSON.stringify(invoiceResource(row, urls)).length;
let t = performance.now();
const N = 100000;
for (let i = 0; i < N; i++) x += JSON.stringify(invoiceResource(row, urls)).length;
console.log('resource+stringify µs', ((performance.now() - t) * 1000 / N).toFixed(2), JSON.stringify(invoiceResource(row, urls)).length);
t = performance.now();
for (let i = 0; i < N; i++) x += (invoiceResource(row, urls) as any).items.length;
console.log('resource µs', ((performance.now() - t) * 1000 / N).toFixed(2));
