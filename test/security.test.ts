// Security review (issue 6, item 4), from an attacker's side. What other files already prove is
// not repeated here, only extended where it had a gap:
// - auth.test.ts walks a scope matrix built from src/routes.ts (every scope but one, exactly one,
//   `*`) and the 401 → address → rate limit → scope order; here the matrix is read from the
//   published OpenAPI document, every other single scope is tried, HEAD included, and the set of
//   documented operations must equal the set of routes Fastify serves.
// - docs.test.ts checks that every served API route is documented (one direction only).
// - errors.test.ts proves the 413 payload_too_large envelope for a body over 1 MiB (and exactly
//   1 MiB parsed), and the router's own 400s; it is not repeated here.
// - admin.test.ts proves the admin token, the console's headers and admin being off when
//   ADMIN_TOKEN is unset; here only an empty or short ADMIN_TOKEN is added.
// - public-page.test.ts, checkout.test.ts: the pages' headers and the escaping of a client name
//   and a description; here every text a merchant or client controls, both classic payloads, a
//   stricter CSP reading, the redirects and error pages.
// - webhooks.test.ts: a secret is shown at creation only; here after rotation too, in every
//   response that shows an endpoint (admin included), in the database and in the logs.
import t from 'tap';
import { createHash, randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { inject, testApp, isEnvelope, TEST_ENV, type ApiResponse } from './helpers/app.js';
import { assertError } from './helpers/assertions.js';
import { loggedApp, rawRequest } from './helpers/logged-app.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { until } from './helpers/until.js';
import { apiRoutes } from '../src/routes.js';
import { scopes } from '../src/http/scopes.js';
import { API_PREFIX } from '../src/http/urls.js';
import { ApiKeyStore } from '../src/http/auth.js';
import { ConfigError, loadConfig } from '../src/config.js';
import type { Sql } from '../src/db/client.js';

type Tap = Pick<typeof t, 'equal' | 'ok' | 'notOk' | 'same' | 'match' | 'notMatch' | 'not'>;

const ADMIN_TOKEN = 'adm_security_0123456789abcdefghijklmnopqrstuvwxyz';
const SINGLE_SCOPES = scopes.filter((s) => s !== '*');
const XSS = ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>'] as const;
/** A text carrying both payloads plus the other characters HTML gives a meaning to. */
const evil = (label: string) => `${label} ${XSS[0]} ${XSS[1]} 'x' & y`;

// ─── The scope matrix, from the published document ──────────────────────────

interface DocOp {
  method: string;
  /** As the document writes it: `/api/v1/external/invoices/{invoice_id}`. */
  path: string;
  keyless: boolean;
  /** undefined when the operation does not say. */
  scope: string | null | undefined;
}

function documentedOperations(doc: any): DocOp[] {
  const out: DocOp[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(item)) {
      out.push({
        method: method.toUpperCase(),
        path,
        keyless: Array.isArray(op.security) && op.security.length === 0,
        scope: 'x-required-scope' in op ? op['x-required-scope'] : undefined,
      });
    }
  }
  return out;
}

/** `METHOD path` of the operations that state a scope (a string, or null for any valid key). */
function documentOperationsWithScope(doc: any): string[] {
  return documentedOperations(doc)
    .filter((o) => o.scope !== undefined)
    .map((o) => `${o.method} ${o.path}`)
    .sort();
}

const fillDocPath = (path: string) => path.replace(/\{[A-Za-z_]+\}/g, () => randomUUID());
const docPathOf = (fastifyPath: string) => fastifyPath.replace(/:([A-Za-z_]+)/g, '{$1}');

/** Every (method, path) Fastify serves, read from its route tree and confirmed one by one with hasRoute. */
function servedRoutes(t: Tap, app: FastifyInstance): { method: string; path: string }[] {
  const out: { method: string; path: string }[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^(.*?)[├└]── (\S+)(?: \(([^)]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = Math.round([...m[1]!].length / 4);
    stack.length = depth;
    stack[depth] = m[2]!;
    const path = stack.join('');
    for (const method of (m[3] ?? '').split(',').map((s) => s.trim()).filter(Boolean)) out.push({ method, path });
  }
  // A parser that misread the tree would make the comparisons below vacuous.
  const unknown = out.filter((r) => !app.hasRoute({ method: r.method as 'GET', url: r.path }));
  t.same(unknown, [], 'every route read from the tree is one Fastify has');
  return out;
}

t.test('the scope matrix, read from the published OpenAPI document', async (t) => {
  const h = await testApp(t);
  const doc = (await h.api('GET', '/docs/openapi.json')).body;
  t.same(doc.security, [{ ApiKey: [] }], 'a key is required unless an operation says otherwise');
  t.match(doc.components.securitySchemes.ApiKey, { type: 'apiKey', in: 'header', name: 'X-API-Key' });

  const ops = documentedOperations(doc);
  const keyed = ops.filter((o) => !o.keyless);
  t.ok(keyed.length >= apiRoutes.length, `${keyed.length} operations need a key`);
  for (const op of keyed) {
    t.ok(op.scope === null || (SINGLE_SCOPES as readonly string[]).includes(op.scope as string), `${op.method} ${op.path} names a known scope (or null)`, { found: op.scope });
  }
  // Keyless operations are the reference's own documents, nothing else.
  t.same(ops.filter((o) => o.keyless).map((o) => o.path).sort(), ['/docs', '/docs/llms.txt', '/docs/openapi.json'].map((p) => API_PREFIX + p));

  const { merchantId } = await h.key(['*']);
  const only = new Map<string, string>();
  for (const s of SINGLE_SCOPES) only.set(s, (await h.key([s], { merchantId })).key);

  const wrong: string[] = [];
  let checks = 0;
  const call = async (method: string, url: string, key: string) => inject(h.app, { method: method as 'GET', url, headers: { 'x-api-key': key } });
  for (const op of keyed) {
    const label = `${op.method} ${op.path}`;
    const url = fillDocPath(op.path);
    for (const [scope, key] of only) {
      const granted = op.scope === null || op.scope === scope;
      const res = await call(op.method, url, key);
      checks++;
      if (granted) {
        if (res.status === 401 || res.status === 403) wrong.push(`${label} with ${scope}: ${res.status} ${res.body?.code}`);
      } else if (res.status !== 403 || res.body?.code !== 'insufficient_scope' || res.body?.details?.required_scope !== op.scope || !isEnvelope(res.body)) {
        wrong.push(`${label} with ${scope}: ${res.status} ${res.raw.slice(0, 120)}`);
      }
      // HEAD is served for every GET (Fastify's exposeHeadRoutes): it must not be a way around the scope.
      if (op.method === 'GET') {
        const head = await call('HEAD', url, key);
        checks++;
        if (granted ? head.status === 401 || head.status === 403 : head.status !== 403) wrong.push(`HEAD ${op.path} with ${scope}: ${head.status}`);
      }
    }
  }
  t.same(wrong, [], 'every operation admits exactly its documented scope');
  t.ok(checks >= keyed.length * SINGLE_SCOPES.length, `${checks} (operation, scope) pairs tried`);
});

t.test('the documented operations are exactly the routes the app serves', async (t) => {
  const h = await testApp(t, { ADMIN_TOKEN });
  await h.app.ready();
  const doc = (await h.api('GET', '/docs/openapi.json')).body;
  const documented = documentedOperations(doc).map((o) => `${o.method} ${o.path}`).sort();
  const served = servedRoutes(t, h.app);
  const underApi = served.filter((r) => r.path === API_PREFIX || r.path.startsWith(`${API_PREFIX}/`));

  t.same(underApi.filter((r) => r.method !== 'HEAD').map((r) => `${r.method} ${docPathOf(r.path)}`).sort(), documented, 'served under the prefix = documented');
  t.same(
    apiRoutes.map((d) => `${d.method} ${API_PREFIX}${docPathOf(d.path)}`).sort(),
    documentOperationsWithScope(doc),
    'the operations that take a key are exactly src/routes.ts',
  );
  // A HEAD exists only as the shadow of a GET, which the matrix above already covers.
  const gets = new Set(underApi.filter((r) => r.method === 'GET').map((r) => r.path));
  t.same(underApi.filter((r) => r.method === 'HEAD' && !gets.has(r.path)), [], 'no HEAD without its GET');

  // Outside the prefix nothing takes an API key; each such route is known here by name, so a new
  // one cannot appear without a reviewer deciding how it is protected.
  const outside = served.filter((r) => !underApi.includes(r)).map((r) => `${r.method} ${r.path}`);
  const expected = new Set([
    // A redirect to the reference, for whoever opens the server's address in a browser.
    'GET /', 'HEAD /',
    'GET /healthz', 'HEAD /healthz', 'GET /readyz', 'HEAD /readyz',
    'GET /i/:token', 'HEAD /i/:token', 'GET /i/:token/pdf', 'HEAD /i/:token/pdf', 'POST /i/:token/pay',
    'GET /checkout/:token', 'HEAD /checkout/:token', 'POST /checkout/:token/pay', 'POST /checkout/:token/decline',
    'GET /checkout/:token/cancel', 'HEAD /checkout/:token/cancel',
    // Webpay sends the customer back here (the session's token, then a commit of token_ws with
    // Webpay decides); Mercado Pago notifies here (refused unless x-signature verifies).
    'GET /checkout/:token/return', 'HEAD /checkout/:token/return', 'POST /providers/:provider/notifications/:merchant_id',
    'GET /admin', 'HEAD /admin', 'GET /admin/console.css', 'HEAD /admin/console.css', 'GET /admin/console.js', 'HEAD /admin/console.js',
  ]);
  // The tRPC adapter takes every method on one parametric route; the router checks the token.
  const unexpected = outside.filter((r) => !expected.has(r) && !/^[A-Z]+ \/admin\/trpc\/:path$/.test(r));
  t.same(unexpected, [], 'no unreviewed route outside the API');
  t.same([...expected].filter((r) => !outside.includes(r)), [], 'the known routes were all found (the tree was read)');
});

// ─── Tenant isolation ────────────────────────────────────────────────────────

/** Every row that belongs to the merchant, in every table that has a merchant_id, plus children. */
async function merchantRows(sql: Sql, merchantId: string): Promise<Record<string, unknown[]>> {
  const tables = await sql<{ table_name: string }[]>`
    SELECT c.table_name FROM information_schema.columns c
      JOIN information_schema.tables tb ON tb.table_schema = c.table_schema AND tb.table_name = c.table_name
     WHERE c.table_schema = 'public' AND c.column_name = 'merchant_id' AND tb.table_type = 'BASE TABLE'
     ORDER BY 1`;
  const out: Record<string, unknown[]> = {};
  const rows = async (name: string, query: string) => {
    out[name] = (await sql.unsafe<{ r: string }[]>(`SELECT to_jsonb(x)::text AS r FROM ${query} ORDER BY 1`, [merchantId])).map((x) => x.r);
  };
  for (const { table_name } of tables) await rows(table_name, `"${table_name}" x WHERE x.merchant_id = $1`);
  await rows('merchants', 'merchants x WHERE x.id = $1');
  await rows('invoice_items', 'invoice_items x WHERE x.invoice_id IN (SELECT id FROM invoices WHERE merchant_id = $1)');
  await rows('invoice_pdfs', 'invoice_pdfs x WHERE x.invoice_id IN (SELECT id FROM invoices WHERE merchant_id = $1)');
  await rows('webhook_attempts', 'webhook_attempts x WHERE x.delivery_id IN (SELECT id FROM webhook_deliveries WHERE merchant_id = $1)');
  return out;
}

t.test('tenant isolation', async (t) => {
  const h = await testApp(t);
  const mA = await h.merchant({ name: 'Comercial A SpA', payment_provider: 'sandbox' });
  const a = await h.key(['*'], { merchantId: mA.id });
  const mB = await h.merchant({ name: 'Comercial B SpA', payment_provider: 'sandbox' });
  const b = await h.key(['*'], { merchantId: mB.id });
  const ok = async (res: Promise<ApiResponse>, status: number) => {
    const r = await res;
    if (r.status !== status) throw new Error(`setup: ${r.status} ${r.raw}`);
    return r.body;
  };
  const invoice = (extra: Record<string, unknown>) => ({
    client: { name: 'Cliente de A', email: 'pagos@cliente-a.example' },
    due_date: '2099-12-31',
    items: [{ description: 'Servicio de A', quantity: 1, unit_price: 10000 }],
    ...extra,
  });

  // A's resources, one of each kind and invoices in three states.
  const clientA = await ok(h.api('POST', '/clients', { key: a.key, body: { name: 'Cliente de A', email: 'pagos@cliente-a.example' } }), 201);
  const draft = await ok(h.api('POST', '/invoices', { key: a.key, body: invoice({ external_reference: 'ref-a-draft' }) }), 201);
  const sent = await ok(h.api('POST', '/invoices', { key: a.key, body: invoice({ external_reference: 'ref-shared', send_immediately: true }) }), 201);
  const paid = await ok(h.api('POST', '/invoices', { key: a.key, body: invoice({ external_reference: 'ref-a-paid', send_immediately: true }) }), 201);
  await ok(h.api('POST', `/invoices/${paid.invoice_id}/mark-paid`, { key: a.key, body: { payment_amount: 11900 } }), 200);
  const paymentA = (await ok(h.api('GET', `/payments?invoice_id=${paid.invoice_id}`, { key: a.key }), 200)).data[0];
  const checkoutA = await ok(
    h.api('POST', '/checkout', {
      key: a.key,
      body: { amount: 5000, description: 'Pedido de A', customer_email: 'comprador@cliente-a.example', customer_name: 'Comprador de A', success_url: 'https://a.example/ok', cancel_url: 'https://a.example/cart' },
    }),
    201,
  );
  const endpointA = await ok(h.api('POST', '/webhooks/endpoints', { key: a.key, body: { url: 'https://a.example/hooks', events: ['invoice.paid'] } }), 201);
  // B has look-alikes of its own, so that a filter that ignored the merchant would show up as
  // extra rows rather than hide behind an empty list.
  const clientB = await ok(h.api('POST', '/clients', { key: b.key, body: { name: 'Cliente de B', email: 'pagos@cliente-a.example' } }), 201);
  const sentB = await ok(
    h.api('POST', '/invoices', {
      key: b.key,
      body: invoice({ client: { name: 'Cliente de B', email: 'pagos@cliente-a.example' }, items: [{ description: 'Servicio de B', unit_price: 100 }], external_reference: 'ref-shared', send_immediately: true }),
    }),
    201,
  );
  t.not(sentB.client_id, clientA.id, "B's invoice did not pick A's client by e-mail");
  t.equal(sentB.client_id, clientB.id);

  const before = await merchantRows(h.sql, mA.id);
  t.ok(before.invoices!.length >= 4 && before.payments!.length === 1 && before.checkout_sessions!.length === 1 && before.webhook_endpoints!.length === 1, 'A has one of everything', {
    found: Object.fromEntries(Object.entries(before).map(([k, v]) => [k, v.length])),
  });
  const jobsFor = async () => (await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pgboss.job WHERE data::text LIKE ${`%${mA.id}%`} OR data::text LIKE ANY (${[draft, sent, paid].map((i) => `%${i.invoice_id}%`)})`)[0]!.n;
  const jobsBefore = await jobsFor();

  t.test("B's key gets 404 for every one of A's resources, whatever the operation and body", async (t) => {
    const seen: ApiResponse[] = [];
    const attempt = async (method: string, path: string, status: number, code: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) => {
      const res = await h.api(method as 'GET', path, { key: b.key, ...opts });
      seen.push(res);
      assertError(t, res, status, code, `B ${method} ${path}`);
    };
    await attempt('GET', `/clients/${clientA.id}`, 404, 'client_not_found');
    await attempt('PATCH', `/clients/${clientA.id}`, 404, 'client_not_found', { body: { name: 'Hijacked', email: 'hijack@b.example' } });
    for (const inv of [draft, sent, paid]) {
      const id = inv.invoice_id as string;
      for (const suffix of ['', '/status', '/pdf']) await attempt('GET', `/invoices/${id}${suffix}`, 404, 'invoice_not_found');
      await attempt('POST', `/invoices/${id}/send`, 404, 'invoice_not_found');
      await attempt('POST', `/invoices/${id}/send?locale=en`, 404, 'invoice_not_found');
      await attempt('POST', `/invoices/${id}/remind`, 404, 'invoice_not_found', { body: { custom_message: 'Pague a la cuenta de B' } });
      await attempt('POST', `/invoices/${id}/mark-paid`, 404, 'invoice_not_found', { body: { payment_amount: 11900, payment_method: 'transfer' } });
      await attempt('POST', `/invoices/${id}/mark-paid`, 404, 'invoice_not_found', { body: { payment_amount: 11900 }, headers: { 'idempotency-key': `steal-${id}` } });
      await attempt('POST', `/invoices/${id}/cancel`, 404, 'invoice_not_found', { body: { reason: 'B says so' } });
    }
    await attempt('GET', `/payments/${paymentA.id}`, 404, 'payment_not_found');
    await attempt('GET', `/checkout/${checkoutA.checkout_id}/status`, 404, 'checkout_not_found');
    const ep = `/webhooks/endpoints/${endpointA.id}`;
    await attempt('GET', ep, 404, 'webhook_endpoint_not_found');
    await attempt('PATCH', ep, 404, 'webhook_endpoint_not_found', { body: { url: 'https://b.example/steal', events: [], enabled: true } });
    await attempt('POST', `${ep}/rotate-secret`, 404, 'webhook_endpoint_not_found');
    await attempt('POST', `${ep}/test`, 404, 'webhook_endpoint_not_found', { body: { event: 'invoice.paid' } });
    await attempt('DELETE', ep, 404, 'webhook_endpoint_not_found');

    // Lists and their filters show B only its own rows, even when A's ids and references are the filter.
    const list = async (path: string) => {
      const res = await h.api('GET', path, { key: b.key });
      seen.push(res);
      t.equal(res.status, 200, `B GET ${path}`);
      return (res.body?.data ?? []).map((r: { id?: string; invoice_id?: string }) => r.id ?? r.invoice_id);
    };
    t.same(await list(`/invoices?client_id=${clientA.id}`), [], 'filtered by A’s client: nothing');
    t.same(await list('/invoices?external_reference=ref-shared'), [sentB.invoice_id], "A's reference: only B's own invoice");
    t.same(await list('/invoices?external_reference=ref-a-paid'), []);
    t.same(await list('/invoices?status=paid'), []);
    t.same(await list('/invoices?status=sent'), [sentB.invoice_id]);
    t.same(await list('/invoices?updated_since=2000-01-01T00:00:00Z&limit=100'), [sentB.invoice_id]);
    t.same(await list('/clients?limit=100'), [clientB.id]);
    t.same(await list('/payments'), []);
    t.same(await list(`/payments?invoice_id=${paid.invoice_id}`), []);
    t.same(await list('/webhooks/endpoints'), []);

    // Nothing B received carries anything of A's beyond the ids B itself sent (echoed in `path`).
    const secretsOfA = [sent.public_url, new URL(checkoutA.checkout_url).pathname.slice('/checkout/'.length), 'Cliente de A', 'Servicio de A', 'ref-a-', endpointA.secret, endpointA.secret_prefix];
    for (const s of secretsOfA) t.notOk(seen.some((r) => r.raw.includes(s)), `no answer to B mentions ${String(s).slice(0, 24)}…`);
  });

  t.test("A's rows are exactly as they were, and nothing was queued about them", async (t) => {
    t.same(await merchantRows(h.sql, mA.id), before, 'every row of A unchanged');
    t.equal(await jobsFor(), jobsBefore, 'no job mentions A or its invoices');
    // A itself still works on the same ids: the 404s above were about B, not about the rows.
    t.equal((await h.api('GET', `/invoices/${sent.invoice_id}`, { key: a.key })).status, 200);
    t.equal((await h.api('GET', `/webhooks/endpoints/${endpointA.id}`, { key: a.key })).status, 200);
    t.equal((await h.api('GET', `/checkout/${checkoutA.checkout_id}/status`, { key: a.key })).status, 200);
    t.same((await h.api('GET', '/invoices?external_reference=ref-shared', { key: a.key })).body.data.map((i: { id: string }) => i.id), [sent.invoice_id]);
  });

  t.test('hosted pages open by their token only: ids, numbers and other tokens are 404 pages', async (t) => {
    const invoiceToken = new URL(sent.public_url).pathname.slice('/i/'.length);
    const checkoutToken = new URL(checkoutA.checkout_url).pathname.slice('/checkout/'.length);
    for (const token of [invoiceToken, checkoutToken]) {
      // 24 random bytes: 192 bits, nothing derived from an id.
      t.match(token, /^[A-Za-z0-9_-]{32}$/);
      for (const id of [sent.invoice_id, checkoutA.checkout_id, checkoutA.invoice_id]) {
        t.notOk(token.includes(id.replace(/-/g, '').slice(0, 8)), 'the token holds no part of an id');
        t.not(token, Buffer.from(id.replace(/-/g, ''), 'hex').toString('base64url').slice(0, 32));
      }
    }
    t.not(invoiceToken, checkoutToken);
    // The real tokens work, so the 404s below are about the value, not a broken page.
    t.equal((await h.app.inject({ method: 'GET', url: `/i/${invoiceToken}` })).statusCode, 200);
    t.equal((await h.app.inject({ method: 'GET', url: `/checkout/${checkoutToken}` })).statusCode, 200);

    const guesses = [
      sent.invoice_id,
      sent.invoice_id.replace(/-/g, ''),
      sent.invoice_number,
      checkoutA.checkout_id,
      checkoutA.invoice_id,
      paymentA.id,
      clientA.id,
      mA.id,
      checkoutToken, // a checkout token does not open an invoice page, nor the reverse
    ];
    for (const guess of guesses) {
      for (const [method, url] of [
        ['GET', `/i/${guess}`],
        ['HEAD', `/i/${guess}`],
        ['GET', `/i/${guess}/pdf`],
        ['POST', `/i/${guess}/pay`],
      ] as const) {
        const res = await h.app.inject({ method, url });
        t.equal(res.statusCode, 404, `${method} ${url}`);
      }
    }
    for (const guess of [...guesses.slice(0, -1), invoiceToken]) {
      for (const [method, url] of [
        ['GET', `/checkout/${guess}`],
        ['GET', `/checkout/${guess}/cancel`],
        ['POST', `/checkout/${guess}/pay`],
      ] as const) {
        const res = await h.app.inject({ method, url, headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' }, payload: method === 'POST' ? 'csrf_token=x' : undefined });
        t.equal(res.statusCode, 404, `${method} ${url}`);
        t.equal(res.headers.location, undefined, `${url}: no redirect to A's shop`);
      }
    }
    t.same(await merchantRows(h.sql, mA.id).then((r) => r.checkout_sessions), before.checkout_sessions, 'no guess paid or changed the session');
  });
});

t.test("tenant isolation: A's events never reach B's webhook endpoints", async (t) => {
  const h = await testApp(t);
  await h.startWorker();
  const receiver = await startHttpsReceiver(t);
  const a = await h.key(['*']);
  const b = await h.key(['*']);
  const epA = await h.api('POST', '/webhooks/endpoints', { key: a.key, body: { url: receiver.url('/a') } });
  // An empty list means every event: B's endpoint would take A's too if fan-out ignored the merchant.
  const epB = await h.api('POST', '/webhooks/endpoints', { key: b.key, body: { url: receiver.url('/b'), events: [] } });
  t.equal(epA.status, 201);
  t.equal(epB.status, 201);

  const clientA = await h.api('POST', '/clients', { key: a.key, body: { name: 'Cliente A', email: 'a@cliente.example' } });
  await until("A's event at A's endpoint", () => receiver.received.some((r) => r.path === '/a'));
  // Fan-out makes every delivery of an event in one job: once A's arrived, B's would exist.
  const forB = await h.sql`SELECT 1 FROM webhook_deliveries WHERE endpoint_id = ${epB.body.id}`;
  t.equal(forB.length, 0, "no delivery of A's event for B's endpoint");
  t.equal(receiver.received.filter((r) => r.path === '/b').length, 0);
  t.match(JSON.parse(receiver.received.find((r) => r.path === '/a')!.body), { type: 'client.created', data: { object: { id: clientA.body.id } } });

  // B's endpoint is live: its own event does arrive (the silence above was not a dead endpoint).
  const clientB = await h.api('POST', '/clients', { key: b.key, body: { name: 'Cliente B', email: 'b@cliente.example' } });
  const atB = await until("B's event at B's endpoint", () => receiver.received.find((r) => r.path === '/b'));
  t.equal(JSON.parse(atB.body).data.object.id, clientB.body.id);
  t.notOk(
    receiver.received.filter((r) => r.path === '/a').some((r) => r.body.includes(clientB.body.id)),
    "B's event never reached A",
  );
});

// ─── Keys and secrets: storage, lookup, responses, logs ─────────────────────

/**
 * Tables (schema.table) whose rows, as JSON text, contain one of the needles: a string as itself or
 * as the hex of its UTF-8 bytes (bytea columns come out as \x… hex), a Buffer as its hex.
 */
async function findInDatabase(sql: Sql, needles: (string | Buffer)[]): Promise<string[]> {
  const tables = await sql<{ s: string; n: string }[]>`
    SELECT table_schema AS s, table_name AS n FROM information_schema.tables
     WHERE table_schema IN ('public', 'pgboss') AND table_type = 'BASE TABLE'`;
  const forms = needles.flatMap((n) => (Buffer.isBuffer(n) ? [n.toString('hex')] : [n, Buffer.from(n, 'utf8').toString('hex')]));
  const hits = new Set<string>();
  for (const { s, n } of tables) {
    const rows = await sql.unsafe<{ r: string }[]>(`SELECT to_jsonb(x)::text AS r FROM "${s}"."${n}" x`);
    if (rows.some((row) => forms.some((f) => row.r.includes(f)))) hits.add(`${s}.${n}`);
  }
  return [...hits].sort();
}


const parseJson = (s: string): any => {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
};

t.test('keys and secrets', async (t) => {
  const h = await testApp(t, { ADMIN_TOKEN });

  t.test('an API key is stored and looked up only as its SHA-256 digest', async (t) => {
    const { key, id, merchantId } = await h.key(['*']);
    t.match(key, /^ik_live_[0-9A-Za-z]{32}$/, '32 random base62 characters: about 190 bits');
    const [row] = await h.sql<{ prefix: string; key_hash: Buffer }[]>`SELECT prefix, key_hash FROM api_keys WHERE id = ${id}`;
    const digest = createHash('sha256').update(key, 'utf8').digest();
    t.same(Buffer.from(row!.key_hash), digest, 'key_hash is SHA-256 of the key');
    t.equal(row!.prefix, key.slice(0, 12), 'only the 12-character prefix is kept in clear');

    // Use the key every way that writes something: idempotency records, events, jobs, rate counters.
    t.equal((await h.api('GET', '/me', { key })).status, 200);
    t.equal((await h.api('POST', '/invoices', { key, headers: { 'idempotency-key': 'k-1' }, body: { client: { name: 'Ana', email: 'ana@example.cl' }, due_date: '2099-12-31', items: [{ description: 'x', unit_price: 1 }], send_immediately: true } })).status, 201);
    t.equal((await h.api('GET', '/clients', { key: key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a') })).status, 401);
    await h.app.rateLimiter.flush();
    t.same(await findInDatabase(h.sql, [key, key.slice(8)]), [], 'the key (or its random part) is in no table, pg-boss’s included');
    // The scan does read bytea columns: the digest is found, where it belongs.
    t.same(await findInDatabase(h.sql, [digest]), ['public.api_keys'], 'the scan reads bytea columns: the digest is found, where it belongs');
    t.ok((await findInDatabase(h.sql, [merchantId])).includes('public.api_keys'), 'and text columns');

    // Looking a key up sends the database its digest and nothing else: no prefix to narrow the
    // search and compare the rest as text, which is what could make the answer's time depend on
    // how much of a guess was right. (Timing itself is not measured: too noisy to fail reliably.)
    const sent: unknown[][] = [];
    const spy = new Proxy(h.sql, {
      apply(target, self, args: unknown[]) {
        sent.push(args.slice(1));
        return Reflect.apply(target, self, args);
      },
    }) as Sql;
    const store = new ApiKeyStore(spy);
    t.equal((await store.lookup(key))?.keyId, id, 'the real key is found');
    const samePrefix = key.slice(0, 12) + 'Z'.repeat(key.length - 12);
    t.equal(await store.lookup(samePrefix), null, 'a guess sharing the prefix is not');
    t.equal(await store.lookup('nonsense'), null);
    t.equal(sent.length, 3, 'one query per lookup');
    const expected = [key, samePrefix, 'nonsense'].map((k) => createHash('sha256').update(k).digest());
    t.same(sent.map((params) => params.map((p) => (Buffer.isBuffer(p) ? p.toString('hex') : p))), expected.map((d) => [d.toString('hex')]), 'each query carries only the 32-byte digest');

    // Over HTTP a guess with the right prefix is answered exactly like any other wrong key.
    const strip = (r: ApiResponse) => ({ status: r.status, code: r.body?.code, message: r.body?.message, retry: r.body?.retry, details: r.body?.details });
    t.same(strip(await h.api('GET', '/clients', { key: samePrefix })), strip(await h.api('GET', '/clients', { key: `ik_live_${'Q'.repeat(32)}` })));
  });

  t.test('webhook secrets: shown at creation and rotation only, never stored or listed in clear', async (t) => {
    const { key } = await h.key(['webhooks:manage']);
    const created = await h.api('POST', '/webhooks/endpoints', { key, body: { url: 'https://127.0.0.1:9/hooks', events: ['invoice.paid'] } });
    t.equal(created.status, 201);
    const rotated = await h.api('POST', `/webhooks/endpoints/${created.body.id}/rotate-secret`, { key });
    t.equal(rotated.status, 200);
    const secrets = [created.body.secret, rotated.body.secret];
    for (const s of secrets) t.match(s, /^whsec_[A-Za-z0-9_-]{43}$/);
    // A test delivery: it signs with the secret and records the attempt's request headers.
    const delivery = await h.api('POST', `/webhooks/endpoints/${created.body.id}/test`, { key, body: {} });
    t.equal(delivery.status, 200);
    t.equal(delivery.body.status, 'failed', 'nothing listens on port 9: the attempt is recorded as failed');

    const admin = async (procedure: string, input: unknown) =>
      inject(h.app, { method: 'GET', url: `/admin/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const views: [string, ApiResponse][] = [
      ['GET endpoint', await h.api('GET', `/webhooks/endpoints/${created.body.id}`, { key })],
      ['GET endpoints', await h.api('GET', '/webhooks/endpoints', { key })],
      ['PATCH endpoint', await h.api('PATCH', `/webhooks/endpoints/${created.body.id}`, { key, body: { description: 'ERP' } })],
      ['test delivery', delivery],
      ['admin endpoints.list', await admin('endpoints.list', {})],
      ['admin deliveries.list', await admin('deliveries.list', {})],
      ['admin deliveries.get', await admin('deliveries.get', { delivery_id: delivery.body.id })],
    ];
    for (const [what, res] of views) {
      t.equal(res.status, 200, `${what}: 200`, { found: res.raw.slice(0, 200) });
      // Each view really is about this endpoint, so the absence below means something.
      t.ok(res.raw.includes(created.body.id) || res.raw.includes(delivery.body.id), `${what} shows the endpoint or its delivery`);
      for (const s of secrets) t.notOk(res.raw.includes(s) || res.raw.includes(s.slice(6)), `${what}: no secret`);
      t.notOk(/secret_encrypted|"secret"\s*:/.test(res.raw), `${what}: no secret field at all`);
    }
    t.same(await findInDatabase(h.sql, secrets.flatMap((s) => [s, s.slice(6)])), [], 'neither secret is in any table');
    t.ok((await findInDatabase(h.sql, [rotated.body.secret_prefix])).includes('public.webhook_endpoints'), 'the prefix is, so the scan works');
  });

  t.test('no key, secret, admin token or credential header is ever logged, at any level', async (t) => {
    const { app, port, logs } = await loggedApp(h, { ADMIN_TOKEN });
    try {
      const { key, merchantId } = await h.key(['*']);
      const readOnly = (await h.key(['clients:read'], { merchantId })).key;
      const typo = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
      const wrongAdmin = `${ADMIN_TOKEN.slice(0, -1)}Z`;
      const api = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
        inject(app, { method: method as 'GET', url: API_PREFIX + path, headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { payload: JSON.stringify(body) } : {}) });

      t.equal((await api('GET', '/me', { 'x-api-key': key })).status, 200);
      t.equal((await api('POST', '/clients', { 'x-api-key': readOnly }, { name: 'Ana', email: 'ana@example.cl' })).status, 403);
      t.equal((await api('GET', '/clients', { 'x-api-key': typo })).status, 401);
      t.equal((await api('GET', '/clients', { authorization: `Bearer ${key}` })).status, 401);
      const endpoint = await api('POST', '/webhooks/endpoints', { 'x-api-key': key }, { url: 'https://127.0.0.1:9/hooks' });
      t.equal(endpoint.status, 201);
      const rotated = await api('POST', `/webhooks/endpoints/${endpoint.body.id}/rotate-secret`, { 'x-api-key': key });
      t.equal(rotated.status, 200);
      t.equal((await api('POST', `/webhooks/endpoints/${endpoint.body.id}/test`, { 'x-api-key': key }, {})).status, 200);
      // A secret in a request body.
      t.equal((await api('POST', '/webhooks/verify-signature', { 'x-api-key': key }, { signature: 't=1,v1=00', secret: rotated.body.secret, payload: '{}' })).status, 200);

      // Admin: the token right and wrong, and a new API key made (shown once in the answer).
      const query = (procedure: string, authorization: string, input: unknown = {}) =>
        inject(app, { method: 'GET', url: `/admin/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`, headers: { authorization } });
      const mutation = (procedure: string, authorization: string, input: unknown) =>
        inject(app, { method: 'POST', url: `/admin/trpc/${procedure}`, headers: { authorization, 'content-type': 'application/json' }, payload: JSON.stringify(input) });
      t.equal((await query('endpoints.list', `Bearer ${ADMIN_TOKEN}`)).status, 200);
      t.equal((await query('endpoints.list', `Bearer ${wrongAdmin}`)).status, 401);
      const made = await mutation('keys.create', `Bearer ${ADMIN_TOKEN}`, { merchant_id: merchantId, scopes: ['clients:read'] });
      t.equal(made.status, 200);
      const adminKey: string = made.body.result.data.key;
      t.match(adminKey, /^ik_live_/);
      t.equal((await api('GET', '/clients', { 'x-api-key': adminKey })).status, 200);

      // The 500 path: a table the query needs is gone. The answer says nothing of why; the log does.
      await h.sql`ALTER TABLE clients RENAME TO clients_hidden_by_security_test`;
      let failed: ApiResponse;
      let adminFailed: ApiResponse;
      try {
        failed = await api('GET', '/clients', { 'x-api-key': key, 'x-request-id': 'sec-500' });
        await h.sql`ALTER TABLE webhook_endpoints RENAME TO webhook_endpoints_hidden_by_security_test`;
        adminFailed = await query('endpoints.list', `Bearer ${ADMIN_TOKEN}`);
      } finally {
        await h.sql`ALTER TABLE IF EXISTS clients_hidden_by_security_test RENAME TO clients`;
        await h.sql`ALTER TABLE IF EXISTS webhook_endpoints_hidden_by_security_test RENAME TO webhook_endpoints`;
      }
      assertError(t, failed, 500, 'internal_error', 'a failing query');
      t.equal(failed.body.retry, 'safe');
      t.notMatch(JSON.stringify({ ...failed.body, path: undefined }), /clients|relation|SELECT|postgres|\bat\s+\S+:\d+/i, 'no SQL, table name or stack in the answer');
      t.equal(adminFailed.status, 500, 'an admin procedure failing');
      t.notMatch(adminFailed.raw, /webhook_endpoints|relation|SELECT|\bat\s+\S+:\d+/i, 'no SQL or stack in the admin answer');

      // Over a real socket: headers past Node's 16 KiB limit, carrying the key and the admin
      // token. Node's parser refuses these before any route runs.
      const overflow = await rawRequest(port, `GET ${API_PREFIX}/me HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`);
      t.equal(overflow.status, 431);
      const smuggled = await rawRequest(port, `POST ${API_PREFIX}/clients HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`);
      t.equal(smuggled.status, 400);

      const text = logs.readable();
      // The capture is real: requests, the 500 with its request id, and its cause are all there.
      t.ok(logs.lines().length > 20, `${logs.lines().length} log lines captured`);
      t.ok(logs.lines().some((l) => l.includes('"level":50') && l.includes('sec-500') && l.includes('clients')), 'the 500 is logged with its request id and cause');
      t.ok(logs.lines().some((l) => l.includes('admin procedure failed')), "the admin procedure's failure is logged");
      t.ok(text.includes('/webhooks/endpoints'), 'request URLs are logged');
      const secrets: [string, string][] = [
        ['API key', key],
        ['read-only API key', readOnly],
        ['mistyped API key', typo],
        ['API key made by admin', adminKey],
        ['webhook secret', endpoint.body.secret],
        ['rotated webhook secret', rotated.body.secret],
        ['admin token', ADMIN_TOKEN],
        ['wrong admin token', wrongAdmin],
      ];
      for (const [what, s] of secrets) {
        // The random part alone too: a key cut or re-encoded in a log line is still a key.
        const tail = s.slice(-24);
        t.notOk(text.includes(s) || text.includes(tail), `the ${what} is nowhere in the logs`);
      }
    } finally {
      await app.close();
    }
  });
});

// ─── Hosted pages ────────────────────────────────────────────────────────────

/** A Content-Security-Policy as directive → sources. */
function policy(header: unknown): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const part of String(header ?? '').split(';')) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name) out.set(name.toLowerCase(), sources);
  }
  return out;
}

interface PageAnswer {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

/**
 * Headers every page reached by a token must carry, whatever the answer (page, 404, 403, PDF,
 * redirect): the token in the URL is the credential, so no referrer, no caching, no sniffing.
 */
function assertTokenUrlHeaders(t: Tap, res: PageAnswer, what: string): void {
  t.equal(res.headers['referrer-policy'], 'no-referrer', `${what}: Referrer-Policy no-referrer`);
  t.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`);
  t.match(String(res.headers['cache-control']), /no-store/, `${what}: no-store`);
}

/**
 * The CSP of an HTML page: no script can run that the site did not serve as a file (no inline, no
 * eval, no other origin), no plugin, no framing, no <base> rewrite.
 */
function assertHtmlPolicy(t: Tap, res: PageAnswer, what: string, opts: { styleInline?: 'forbidden' | 'allowed' } = {}): void {
  const csp = policy(res.headers['content-security-policy']);
  t.ok(csp.size > 0, `${what}: has a CSP`);
  const effective = (d: string) => csp.get(d) ?? csp.get('default-src') ?? ['*'];
  const scripts = effective('script-src');
  t.same(scripts.filter((s) => s !== "'none'" && s !== "'self'"), [], `${what}: scripts only from this origin, if any`, { found: scripts });
  t.same(effective('object-src'), ["'none'"], `${what}: no plugins`);
  t.same(csp.get('frame-ancestors'), ["'none'"], `${what}: frame-ancestors 'none'`);
  t.same(csp.get('base-uri'), ["'none'"], `${what}: base-uri 'none'`);
  if (opts.styleInline !== 'allowed') {
    // A page holding a token or a CSRF value must not let injected CSS read attributes out.
    t.notOk([...csp.values()].flat().some((s) => /^'unsafe-/.test(s)), `${what}: no 'unsafe-…' source anywhere`, { found: res.headers['content-security-policy'] });
  }
  t.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`);
  t.match(String(res.headers['content-type']), /^text\/html/, `${what}: HTML`);
}

/** HTML entities back to characters: what a browser shows as text. */
function decodeEntities(html: string): string {
  return html
    .replace(/&#x([0-9a-f]+);/gi, (_m, hex: string) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_m, dec: string) => String.fromCodePoint(Number(dec)))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

/** Every given text is on the page as text (once entities are decoded) and never as markup. */
function assertInert(t: Tap, html: string, what: string, shown: string[], hidden: string[] = []): void {
  for (const payload of XSS) t.notOk(html.includes(payload), `${what}: ${payload} never appears raw`);
  t.notMatch(html, /<script/i, `${what}: no script element`);
  t.notMatch(html, /<img/i, `${what}: no injected element`);
  t.notMatch(html, /\son[a-z]+\s*=/i, `${what}: no event-handler attribute`);
  const text = decodeEntities(html);
  for (const s of shown) t.ok(text.includes(s), `${what}: shows ${JSON.stringify(s.slice(0, 20))}… as text`);
  for (const s of hidden) t.notOk(text.includes(s), `${what}: does not show ${JSON.stringify(s.slice(0, 20))}…`);
}

async function page(app: FastifyInstance, method: 'GET' | 'HEAD' | 'POST', url: string, opts: { headers?: Record<string, string>; payload?: string } = {}): Promise<PageAnswer> {
  const res = await app.inject({ method, url, headers: opts.headers ?? {}, ...(opts.payload !== undefined ? { payload: opts.payload } : {}) });
  return { status: res.statusCode, headers: res.headers, body: res.body };
}

const formHeaders = { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', origin: 'null' };

t.test('hosted pages', async (t) => {
  const h = await testApp(t, { ADMIN_TOKEN });
  const merchantName = evil('Comercial');
  const m = await h.merchant({ name: merchantName, payment_provider: 'sandbox' });
  const { key } = await h.key(['*'], { merchantId: m.id });
  const clientName = evil('Cliente');
  const items = [evil('Servicio'), evil('Licencia')];
  const reference = evil('Ref');
  const paymentNote = evil('Nota');
  const created = await h.api('POST', '/invoices', {
    key,
    body: {
      client: { name: clientName, email: 'cliente@example.cl' },
      due_date: '2099-12-31',
      items: items.map((description) => ({ description, unit_price: 5000 })),
      external_reference: reference,
      send_immediately: true,
    },
  });
  t.equal(created.status, 201, 'the payloads are valid data', { found: created.body });
  const invoicePath = new URL(created.body.public_url).pathname;
  const description = evil('Pedido');
  // A shop URL with quotes and markup in its query, and with characters a header cannot carry.
  const cancelUrl = `https://shop.example/cart?back=${XSS[1]}`;
  const successUrl = 'https://shop.example/ok\r\nSet-Cookie: pwned=1\u2028✓';
  const checkout = await h.api('POST', '/checkout', {
    key,
    body: { amount: 5000, description, customer_email: 'comprador@example.cl', customer_name: clientName, success_url: successUrl, cancel_url: cancelUrl },
  });
  t.equal(checkout.status, 201, 'the checkout is valid data', { found: checkout.body });
  const checkoutPath = new URL(checkout.body.checkout_url).pathname;

  t.test('the invoice page shows merchant, client, items and reference as text only', async (t) => {
    const res = await page(h.app, 'GET', invoicePath);
    t.equal(res.status, 200);
    assertInert(t, res.body, 'invoice page', [merchantName, clientName, ...items, reference]);
    assertHtmlPolicy(t, res, 'invoice page');
    assertTokenUrlHeaders(t, res, 'invoice page');
    t.equal(res.headers['x-frame-options'], 'DENY');
  });

  t.test('a paid invoice page: payment note and method are not shown at all', async (t) => {
    const paid = await h.api('POST', `/invoices/${created.body.invoice_id}/mark-paid`, { key, body: { payment_amount: 11900, payment_method: evil('Metodo'), notes: paymentNote } });
    t.equal(paid.status, 200, 'paid', { found: paid.body });
    const res = await page(h.app, 'GET', invoicePath);
    t.equal(res.status, 200);
    assertInert(t, res.body, 'paid invoice page', [merchantName, clientName, ...items, reference], [paymentNote, evil('Metodo')]);
  });

  t.test("the invoice PDF by token: no sniffing, no referrer, not HTML", async (t) => {
    const res = await page(h.app, 'GET', `${invoicePath}/pdf`);
    t.equal(res.status, 200);
    t.equal(res.headers['content-type'], 'application/pdf');
    assertTokenUrlHeaders(t, res, 'invoice PDF');
    // The filename is ours (number), never the merchant's text: no header injection through it.
    t.match(String(res.headers['content-disposition']), /^inline; filename="[A-Za-z0-9_.-]+"$/);
  });

  t.test('the checkout page shows merchant and description as text only', async (t) => {
    const res = await page(h.app, 'GET', checkoutPath);
    t.equal(res.status, 200);
    assertInert(t, res.body, 'checkout page', [merchantName, description]);
    assertHtmlPolicy(t, res, 'checkout page');
    assertTokenUrlHeaders(t, res, 'checkout page');
    // The policy names only the shops' origins, whatever their URLs hold.
    t.match(String(res.headers['content-security-policy']), /form-action 'self' https:\/\/shop\.example(;|$)/);
  });

  t.test('error pages on token URLs carry the same headers and echo nothing', async (t) => {
    const hostile = encodeURIComponent(XSS[1]);
    const cases: [string, PageAnswer, number][] = [
      ['unknown invoice token', await page(h.app, 'GET', `/i/${'A'.repeat(32)}`), 404],
      ['hostile invoice token', await page(h.app, 'GET', `/i/${hostile}`), 404],
      ['unknown checkout token', await page(h.app, 'GET', `/checkout/${'A'.repeat(32)}`), 404],
      ['hostile checkout token', await page(h.app, 'GET', `/checkout/${hostile}`), 404],
      ['hostile checkout cancel', await page(h.app, 'GET', `/checkout/${hostile}/cancel`), 404],
      ['pay without CSRF token', await page(h.app, 'POST', `${checkoutPath}/pay`, { headers: formHeaders, payload: 'csrf_token=forged' }), 403],
      ['pay from another site', await page(h.app, 'POST', `${checkoutPath}/pay`, { headers: { ...formHeaders, 'sec-fetch-site': 'cross-site' }, payload: 'csrf_token=x' }), 403],
    ];
    for (const [what, res, status] of cases) {
      t.equal(res.status, status, `${what}: ${status}`);
      assertHtmlPolicy(t, res, what);
      assertTokenUrlHeaders(t, res, what);
      assertInert(t, res.body, what, []);
      t.notMatch(res.body, /"code"\s*:/, `${what}: a page, not the API envelope`);
    }
  });

  t.test('redirects to the shop: no referrer, and a well-formed Location whatever the stored URL holds', async (t) => {
    const cancel = await page(h.app, 'GET', `${checkoutPath}/cancel`);
    t.equal(cancel.status, 303);
    assertTokenUrlHeaders(t, cancel, 'cancel redirect');
    t.equal(new URL(String(cancel.headers.location)).href, new URL(cancelUrl).href, 'to the cancel URL');
    t.notMatch(String(cancel.headers.location), /[<>"\s]/, 'percent-encoded: nothing a browser could misread');

    const opened = await page(h.app, 'GET', checkoutPath);
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(opened.body)?.[1];
    t.ok(csrf, 'the page has its CSRF token');
    const paid = await page(h.app, 'POST', `${checkoutPath}/pay`, { headers: formHeaders, payload: new URLSearchParams({ csrf_token: csrf ?? '' }).toString() });
    // A success URL with CR/LF or characters outside Latin-1 cannot be a header value as given:
    // Node refuses it (no header injection), which without care turns a recorded payment into a
    // 500 page for the customer.
    t.equal(paid.status, 303, 'the paying customer is redirected, not shown an error', { found: paid.body.slice(0, 200) });
    assertTokenUrlHeaders(t, paid, 'pay redirect');
    const location = String(paid.headers.location ?? '');
    t.notMatch(location, /[\r\n]/, 'no header break');
    t.equal(paid.headers['set-cookie'], undefined, 'no header smuggled in');
    t.match(location, /^https:\/\/shop\.example\/ok/);

    const completed = await page(h.app, 'GET', checkoutPath);
    t.equal(completed.status, 200);
    assertInert(t, completed.body, 'completed checkout page', [merchantName, description]);

    // A session whose invoice the merchant cancelled links back to the cancel URL: the stored URL,
    // quotes and markup included, is an attribute value there.
    const other = await h.api('POST', '/checkout', {
      key,
      body: { amount: 5000, description, customer_email: 'comprador@example.cl', customer_name: clientName, success_url: 'https://shop.example/ok', cancel_url: cancelUrl },
    });
    t.equal(other.status, 201);
    t.equal((await h.api('POST', `/invoices/${other.body.invoice_id}/cancel`, { key, body: {} })).status, 200);
    const closed = await page(h.app, 'GET', new URL(other.body.checkout_url).pathname);
    t.equal(closed.status, 200);
    t.match(closed.body, /data-state="closed"/, 'the closed state, with its link back');
    assertInert(t, closed.body, 'closed checkout page', [merchantName, description, cancelUrl]);
  });

  t.test('the admin console and its router keep their headers on every answer', async (t) => {
    // admin.test.ts checks the console page itself; here the same strict reading of its policy,
    // and the router's refusals, which carry the headers too.
    const consolePage = await page(h.app, 'GET', '/admin');
    t.equal(consolePage.status, 200);
    assertHtmlPolicy(t, consolePage, 'admin console');
    t.equal(consolePage.headers['referrer-policy'], 'no-referrer');
    const refused = await page(h.app, 'GET', '/admin/trpc/merchants.list', { headers: { authorization: 'Bearer wrong' } });
    t.equal(refused.status, 401);
    t.equal(refused.headers['x-content-type-options'], 'nosniff');
    t.equal(refused.headers['cache-control'], 'no-store');
    t.notOk(refused.body.includes('wrong'), 'the refused token is not echoed');
  });
});

// ─── Admin off ───────────────────────────────────────────────────────────────

t.test('admin stays off with an empty ADMIN_TOKEN; a short one stops start-up', async (t) => {
  // admin.test.ts covers ADMIN_TOKEN unset. An empty value (a Heroku config var cleared rather
  // than removed) must mean the same, never "the empty token is the password".
  const h = await testApp(t, { ADMIN_TOKEN: '' });
  t.equal(h.ctx.config.ADMIN_TOKEN, undefined);
  for (const [method, url, authorization] of [
    ['GET', '/admin', undefined],
    ['HEAD', '/admin', undefined],
    ['GET', '/admin/trpc/merchants.list', 'Bearer '],
    ['GET', '/admin/trpc/merchants.list', 'Bearer'],
    ['POST', '/admin/trpc/keys.create', 'Bearer '],
  ] as const) {
    const res = await h.app.inject({ method, url, headers: authorization === undefined ? {} : { authorization, 'content-type': 'application/json' }, ...(method === 'POST' ? { payload: '{}' } : {}) });
    t.equal(res.statusCode, 404, `${method} ${url}`);
    if (method !== 'HEAD') t.equal(parseJson(res.body)?.code, 'route_not_found', `${method} ${url}: the ordinary 404`);
  }
  t.throws(() => loadConfig({ ...TEST_ENV, ADMIN_TOKEN: 'x'.repeat(31) }), ConfigError, 'a 31-character token is refused');
  t.equal(loadConfig({ ...TEST_ENV, ADMIN_TOKEN: 'x'.repeat(32) }).ADMIN_TOKEN, 'x'.repeat(32));
});

// ─── Request size ────────────────────────────────────────────────────────────

t.test('oversized and malformed requests: a clean 4xx, and the process carries on', async (t) => {
  // A body over 1 MiB (413 payload_too_large in the envelope) is errors.test.ts's.
  const h = await testApp(t);
  const { key } = await h.key(['*']);
  const { app, port } = await loggedApp(h);
  try {
    const request = (target: string, extra = '') => `GET ${target} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n${extra}Connection: close\r\n\r\n`;
    // Node counts the request line and headers against one 16 KiB limit (--max-http-header-size)
    // and refuses past it before Fastify parses a request: there is no route, no key checked and
    // so no rate-limit headers. The answer still has the envelope (docs/decisions.md §13), with a
    // request id of its own.
    const cases: [string, string, number][] = [
      ['a 20 KiB header', request(`${API_PREFIX}/me`, `X-Padding: ${'p'.repeat(20_000)}\r\n`), 431],
      ['2,000 small headers', request(`${API_PREFIX}/me`, Array.from({ length: 2000 }, (_, i) => `X-H${i}: ${'v'.repeat(8)}\r\n`).join('')), 431],
      ['a 20 KiB path', request(`${API_PREFIX}/invoices/${'a'.repeat(20_000)}`), 431],
      ['a 20 KiB query string', request(`${API_PREFIX}/invoices?external_reference=${'r'.repeat(20_000)}`), 431],
      ['Content-Length and Transfer-Encoding together', `POST ${API_PREFIX}/clients HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400],
      ['a bare CR inside a header value', `GET ${API_PREFIX}/me HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nX-Bad: a\rb\r\n\r\n`, 400],
      ['not HTTP at all', 'HELLO\r\n\r\n', 400],
    ];
    for (const [what, raw, status] of cases) {
      const res = await rawRequest(port, raw);
      t.equal(res.status, status, `${what}: ${status}`);
      const body = parseJson(res.body);
      t.ok(isEnvelope(body), `${what}: the error envelope`, { found: res.body.slice(0, 200) });
      t.equal(body?.code, 'validation_error', `${what}: validation_error`);
      t.equal(body?.retry, 'never');
      t.equal(res.headers['x-request-id'], body?.request_id, `${what}: X-Request-Id equals request_id`);
      t.match(String(res.headers['content-type']), /^application\/json/);
      t.notOk(res.body.includes(key), `${what}: the key is not echoed`);
    }
    // Just under the limit is an ordinary request, answered by the app.
    const under = await rawRequest(port, request(`${API_PREFIX}/me`, `X-Padding: ${'p'.repeat(14_000)}\r\n`));
    t.equal(under.status, 200, 'a 14 KiB header is fine');
    t.ok(under.headers['x-ratelimit-limit'], 'and counted like any request');

    // The process survived all of it, on fresh connections.
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    t.equal(health.status, 200);
    const me = await fetch(`http://127.0.0.1:${port}${API_PREFIX}/me`, { headers: { 'x-api-key': key } });
    t.equal(me.status, 200);
  } finally {
    await app.close();
  }
});

t.test('query strings: thousands of parameters or a huge one are 4xx envelopes, never 5xx', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);
  const doc = (await h.api('GET', '/docs/openapi.json')).body;
  // Every documented GET without a path id: the lists, /me, the event types.
  const lists = Object.entries(doc.paths as Record<string, Record<string, any>>)
    .filter(([path, item]) => item.get && !path.includes('{') && !item.get.security)
    .map(([path, item]) => ({ path, queryParams: (item.get.parameters as { name: string; in: string }[]).filter((p) => p.in === 'query').map((p) => p.name) }));
  t.ok(lists.length >= 5, `${lists.length} list-like routes`);
  t.ok(lists.some((l) => l.queryParams.length > 0), 'some take query parameters');

  const many = Array.from({ length: 1500 }, (_, i) => `p${i}=${i}`).join('&');
  for (const { path, queryParams } of lists) {
    const variants: [string, string][] = [
      ['1,500 unknown parameters', many],
      ['one unknown parameter of 15,000 characters', `x=${'y'.repeat(15_000)}`],
      ['__proto__ and constructor', '__proto__[admin]=1&constructor[prototype][x]=1&__proto__=1'],
    ];
    for (const name of queryParams) {
      variants.push([`${name} of 15,000 characters`, `${name}=${'9'.repeat(15_000)}`]);
      variants.push([`${name} repeated 1,000 times`, Array.from({ length: 1000 }, () => `${name}=1`).join('&')]);
    }
    for (const [what, query] of variants) {
      const started = Date.now();
      const res = await inject(h.app, { method: 'GET', url: `${path}?${query}`, headers: { 'x-api-key': key } });
      const label = `${path} with ${what}`;
      t.ok(res.status < 500, `${label}: not a 5xx (${res.status})`, { found: res.raw.slice(0, 200) });
      t.ok(Date.now() - started < 5_000, `${label}: answered in ${Date.now() - started} ms`);
      if (queryParams.length > 0) {
        // A route that validates its query rejects what it does not know, in the envelope.
        assertError(t, res, 422, 'validation_error', { what: label, path });
      } else if (res.status >= 400) {
        t.ok(isEnvelope(res.body), `${label}: the envelope`);
      }
    }
  }
  // The prototype was not polluted by any of it.
  t.equal(({} as Record<string, unknown>).admin, undefined);
  t.equal(({} as Record<string, unknown>).x, undefined);
});
