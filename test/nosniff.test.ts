// docs/decisions.md §19: every response carries `X-Content-Type-Options: nosniff`: the API's JSON and
// files, its errors and 404s, the hosted pages and their PDFs, the docs, the admin console and
// tRPC, health checks.
import t from 'tap';
import { testApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';
import { apiRoutes } from '../src/routes.js';
import { API_PREFIX } from '../src/http/urls.js';

const TOKEN = 'adm_test_0123456789abcdefghijklmnopqrstuvwxyz';
const MISSING = '00000000-0000-4000-8000-000000000000';

t.test('X-Content-Type-Options: nosniff on every kind of answer', async (t) => {
  const h = await testApp(t, { ADMIN_TOKEN: TOKEN });
  const merchant = await h.merchant({ payment_provider: 'sandbox' });
  const { key } = await h.key(['*'], { merchantId: merchant.id });

  const created = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) });
  t.equal(created.status, 201, created.raw);
  const invoiceId: string = created.body.invoice_id;
  const invoicePage = new URL(created.body.public_url ?? (await h.api('GET', `/invoices/${invoiceId}`, { key })).body.public_url).pathname;
  const checkout = await h.api('POST', '/checkout', {
    key,
    body: {
      amount: 11900,
      description: 'Pedido 1',
      customer_email: 'pagos@andes.cl',
      customer_name: 'Comercial Andes',
      success_url: 'https://shop.example.cl/ok',
      cancel_url: 'https://shop.example.cl/cancel',
    },
  });
  t.equal(checkout.status, 201, checkout.raw);
  const checkoutPage = new URL(checkout.body.checkout_url).pathname;

  const check = async (what: string, opts: { method?: 'GET' | 'POST' | 'HEAD' | 'DELETE'; url: string; headers?: Record<string, string>; payload?: string }) => {
    const res = await h.app.inject({ method: opts.method ?? 'GET', url: opts.url, headers: opts.headers ?? {}, ...(opts.payload !== undefined ? { payload: opts.payload } : {}) });
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: ${opts.method ?? 'GET'} ${opts.url} → ${res.statusCode}`);
    return res.statusCode;
  };

  // Every GET of the API, with the invoice's id where one is asked for (a file, a resource) and an
  // unknown id otherwise (an error answer).
  const statuses = new Set<number>();
  for (const route of apiRoutes.filter((r) => r.method === 'GET')) {
    const path = route.path.replace(/:(\w+)/g, (_m, name: string) => (name === 'invoice_id' ? invoiceId : MISSING));
    statuses.add(await check(`API ${route.operationId}`, { url: API_PREFIX + path, headers: { 'x-api-key': key } }));
  }
  t.ok(statuses.has(200) && statuses.has(404), `the walk met successes and errors (${[...statuses].join(', ')})`);
  t.equal(await check('API PDF', { url: `${API_PREFIX}/invoices/${invoiceId}/pdf`, headers: { 'x-api-key': key } }), 200);

  // API errors before any route: no key, a bad key, malformed JSON, an unknown route.
  t.equal(await check('no key', { url: `${API_PREFIX}/invoices` }), 401);
  t.equal(await check('bad key', { url: `${API_PREFIX}/invoices`, headers: { 'x-api-key': 'ik_live_nope' } }), 401);
  t.equal(
    await check('malformed JSON', { method: 'POST', url: `${API_PREFIX}/invoices`, headers: { 'x-api-key': key, 'content-type': 'application/json' }, payload: '{' }),
    400,
  );
  t.equal(await check('API 404', { url: `${API_PREFIX}/nothing-here`, headers: { 'x-api-key': key } }), 404);
  // URLs the router itself refuses, before any hook: a broken escape, a path parameter too long.
  t.equal(await check('malformed URL', { url: `${API_PREFIX}/invoices/%E0%A4%A`, headers: { 'x-api-key': key } }), 400);
  t.equal(await check('path parameter too long', { url: `${API_PREFIX}/invoices/${'a'.repeat(300)}`, headers: { 'x-api-key': key } }), 400);
  t.equal(await check('malformed hosted page URL', { url: '/i/%zz' }), 400);
  t.equal(await check('404', { url: '/no/such/page' }), 404);

  // Docs, health, the root's redirect.
  t.equal(await check('docs', { url: `${API_PREFIX}/docs` }), 200);
  t.equal(await check('OpenAPI', { url: `${API_PREFIX}/docs/openapi.json` }), 200);
  t.equal(await check('llms.txt', { url: `${API_PREFIX}/docs/llms.txt` }), 200);
  t.equal(await check('healthz', { url: '/healthz' }), 200);
  t.equal(await check('readyz', { url: '/readyz' }), 200);
  t.equal(await check('root', { url: '/' }), 302);

  // Hosted pages: the invoice, its PDF, an unknown token, the checkout page.
  t.equal(await check('invoice page', { url: invoicePage }), 200);
  t.equal(await check('invoice page HEAD', { method: 'HEAD', url: invoicePage }), 200);
  t.equal(await check('invoice page PDF', { url: `${invoicePage}/pdf` }), 200);
  t.equal(await check('unknown invoice page', { url: '/i/not-a-token' }), 404);
  t.equal(await check('checkout page', { url: checkoutPage }), 200);
  t.equal(await check('unknown checkout page', { url: '/checkout/not-a-token' }), 404);

  // Admin: the console and its files, tRPC answered, refused and unknown.
  t.equal(await check('admin console', { url: '/admin' }), 200);
  t.equal(await check('admin script', { url: '/admin/console.js' }), 200);
  t.equal(await check('admin tRPC', { url: '/admin/trpc/merchants.list', headers: { authorization: `Bearer ${TOKEN}` } }), 200);
  t.equal(await check('admin tRPC refused', { url: '/admin/trpc/merchants.list' }), 401);
  t.equal(await check('admin tRPC unknown procedure', { url: '/admin/trpc/nothing', headers: { authorization: `Bearer ${TOKEN}` } }), 404);
});
