import { testApp } from './test/helpers/app.js';
const t = { teardown: (fn: () => unknown) => { (globalThis as any).td = fn; } };
const h = await testApp(t);
const { key } = await h.key(['*']);
h.app.log.level = 'error';
for (const depth of [100, 1000, 2000, 2500, 5000]) {
  for (const idem of [undefined, 'k' + depth]) {
    const raw = `{"invoices":[${'['.repeat(depth)}${']'.repeat(depth)}]}`;
    const res = await h.api('POST', '/invoices/bulk', { key, raw, headers: idem ? { 'idempotency-key': idem } : {} });
    console.log(depth, idem ?? '-', res.status, res.raw.slice(0, 160));
  }
}
for (const depth of [1000, 5000]) {
  const raw = `{"invoices":[{"client": ${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}]}`;
  const res = await h.api('POST', '/invoices/bulk', { key, raw });
  console.log('obj', depth, res.status, res.raw.slice(0, 160));
  const res2 = await h.api('POST', '/invoices', { key, raw: `{"client": ${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}` });
  console.log('obj single', depth, res2.status, res2.raw.slice(0, 160));
}
await (globalThis as any).td();
