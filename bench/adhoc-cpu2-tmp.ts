import { createSql } from '../src/db/client.js';
import * as invoiceService from '../src/invoices/service.js';
import { createInvoiceBody } from '../src/invoices/schemas.js';
import { ApiKeyStore } from '../src/http/auth.js';
import { openBenchDatabase, seedMerchant } from './db.js';
const ITEMS = [
  { description: 'Consultoría noviembre', quantity: 2, unit_price: 5000 },
  { description: 'Soporte mensual', quantity: 1, unit_price: 12000 },
  { description: 'Horas adicionales', quantity: 3, unit_price: 2500 },
];
const BODY = { client: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl', rut: '76.086.428-5' }, due_date: '2030-12-31', items: ITEMS };
const db = await openBenchDatabase(() => {});
const sql = createSql(db.url, { max: 4 });
try {
  const seed = await seedMerchant(sql);
  const auth = (await new ApiKeyStore(sql).lookup(seed.apiKey))!;
  const deps = { urls: { apiBase: `http://x/api`, publicBase: 'http://x' } } as unknown as invoiceService.InvoiceDeps;
  const input = createInvoiceBody.parse(BODY);
  const one = () => sql.begin((tx) => invoiceService.createInvoice(tx, auth.merchant, input, deps));
  for (let i = 0; i < 300; i++) await one();
  const t0 = performance.now(); const c0 = process.cpuUsage();
  await Promise.all([0, 1, 2, 3].map(async () => { for (let i = 0; i < 1000; i++) await one(); }));
  const c = process.cpuUsage(c0);
  console.log('per op cpu µs', ((c.user + c.system) / 4000).toFixed(0), 'wall µs', ((performance.now() - t0) * 1000 / 4000).toFixed(0));
} finally {
  await sql.end();
  await db.cleanup();
}
