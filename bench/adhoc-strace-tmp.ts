import { spawn } from 'node:child_process';
import { createSql } from '../src/db/client.js';
import { API_PREFIX } from '../src/http/urls.js';
import { openBenchDatabase, seedMerchant } from './db.js';
import { startWebProcess } from './server.js';
const ITEMS = [
  { description: 'Consultoría noviembre', quantity: 2, unit_price: 5000 },
  { description: 'Soporte mensual', quantity: 1, unit_price: 12000 },
  { description: 'Horas adicionales', quantity: 3, unit_price: 2500 },
];
const BODY = { client: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl', rut: '76.086.428-5' }, due_date: '2030-12-31', items: ITEMS };
const db = await openBenchDatabase(() => {});
const sql = createSql(db.url, { max: 2 });
const web = await startWebProcess({ cwd: process.cwd(), databaseUrl: db.url, poolSize: 10 });
try {
  const seed = await seedMerchant(sql);
  const h = { 'x-api-key': seed.apiKey, 'content-type': 'application/json' };
  const created = await fetch(`${web.baseUrl}${API_PREFIX}/invoices`, { method: 'POST', headers: h, body: JSON.stringify(BODY) });
  const id = ((await created.json()) as { invoice_id: string }).invoice_id;
  for (let i = 0; i < 50; i++) await fetch(`${web.baseUrl}${API_PREFIX}/invoices/${id}`, { headers: h });
  const method = process.env.M ?? 'GET';
  const st = spawn('strace', ['-f', '-c', '-p', String(web.pid), '-o', '/tmp/adhoc/strace.txt']);
  await new Promise((r) => setTimeout(r, 1500));
  let k = 0;
  const N = 200;
  for (let i = 0; i < N; i++) {
    if (method === 'GET') await fetch(`${web.baseUrl}${API_PREFIX}/invoices/${id}`, { headers: h });
    else await fetch(`${web.baseUrl}${API_PREFIX}/invoices`, { method: 'POST', headers: { ...h, 'idempotency-key': `s-${++k}` }, body: JSON.stringify(BODY) });
  }
  st.kill('SIGINT');
  await new Promise((r) => st.on('exit', r));
  console.log('requests', N);
} finally {
  await web.stop();
  await sql.end();
  await db.cleanup();
}
