// POST/GET /invoices, /invoices/{id}, /invoices/{id}/status and /invoices/bulk against the spec
// and docs/decisions.md §2, §3, §4, §6, §14.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { clock, dateInZone } from '../src/clock.js';
import { setRate } from '../src/rates/service.js';
import { isEnvelope, testApp, type TestApp } from './helpers/app.js';
import { assertValidationError, errorPaths } from './helpers/assertions.js';
import { TS, UUID, invoiceBody as body } from './helpers/fixtures.js';

const PUBLIC = 'http://invoicing.test';
const API = `${PUBLIC}/api/v1/external`;

const today = () => dateInZone(clock.now(), 'America/Santiago');

async function count(h: TestApp, table: 'invoices' | 'clients' | 'events', merchantId: string): Promise<number> {
  const [r] = await h.sql.unsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM ${table} WHERE merchant_id = $1`, [merchantId]);
  return r!.n;
}

t.test('invoices', async (t) => {
  const h = await testApp(t);

  t.test('POST /invoices → 201 with the creation fields', async (t) => {
    const { key } = await h.key(['*']);
    const b = body({ external_reference: 'ERP-1' });
    const res = await h.api('POST', '/invoices', { key, body: b });
    t.equal(res.status, 201);
    t.match(res.headers['content-type'], /application\/json/);
    const c = res.body;
    t.match(c.invoice_id, UUID);
    t.equal(c.status, 'draft');
    t.equal(c.total, '11900.00');
    t.equal(c.currency, 'CLP');
    t.match(c.client_id, UUID);
    t.equal(c.client_name, b.client.name);
    t.match(c.created_at, TS);
    t.equal(c.invoice_number, null, 'a draft has no number');
    t.equal(c.external_reference, 'ERP-1');
    const [row] = await h.sql`SELECT public_token FROM invoices WHERE id = ${c.invoice_id}`;
    t.equal(c.public_url, `${PUBLIC}/i/${row!.public_token}`);
    t.same(
      Object.keys(c).sort(),
      ['client_id', 'client_name', 'created_at', 'currency', 'external_reference', 'invoice_id', 'invoice_number', 'public_url', 'status', 'total'],
    );
  });

  t.test('client reuse by e-mail, ignoring case; otherwise a new client', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const first = await h.api('POST', '/invoices', {
      key,
      body: body({ client: { name: 'Comercial Andes SpA', email: 'Pagos@Andes.cl', phone: '+56 2 1234 5678' } }),
    });
    t.equal(first.status, 201);
    const before = await h.api('GET', `/clients/${first.body.client_id}`, { key });
    t.equal(before.status, 200);

    const second = await h.api('POST', '/invoices', {
      key,
      body: body({ client: { name: 'Otro Nombre Ltda', email: 'pagos@ANDES.CL', phone: '+56 9 0000 0000', address: 'Nueva 1' } }),
    });
    t.equal(second.status, 201);
    t.equal(second.body.client_id, first.body.client_id, 'same client');
    t.equal(second.body.client_name, 'Comercial Andes SpA', 'the client is reused as it is');
    const after = await h.api('GET', `/clients/${first.body.client_id}`, { key });
    t.same(after.body, before.body, 'the client was not modified');
    const inv = await h.api('GET', `/invoices/${second.body.invoice_id}`, { key });
    t.same(inv.body.client, {
      id: first.body.client_id,
      name: 'Comercial Andes SpA',
      email: 'Pagos@Andes.cl',
      phone: '+56 2 1234 5678',
      rut: null,
      address: null,
      giro: null,
      comuna: null,
      ciudad: null,
    });

    const third = await h.api('POST', '/invoices', { key, body: body({ client: { name: 'Nuevo', email: 'otro@andes.cl' } }) });
    t.equal(third.status, 201);
    t.not(third.body.client_id, first.body.client_id, 'another e-mail: another client');
    t.equal(third.body.client_name, 'Nuevo');
    t.equal(await count(h, 'clients', merchantId), 2);
    const list = await h.api('GET', '/clients', { key });
    t.same(list.body.data.map((c: any) => c.email).sort(), ['Pagos@Andes.cl', 'otro@andes.cl']);
  });

  t.test('the invoice keeps a snapshot of the client', async (t) => {
    const { key } = await h.key(['*']);
    const created = await h.api('POST', '/invoices', {
      key,
      body: body({ client: { name: 'Nombre Viejo', email: 'snap@example.cl', phone: '111' } }),
    });
    const patched = await h.api('PATCH', `/clients/${created.body.client_id}`, {
      key,
      body: { name: 'Nombre Nuevo', phone: '222', email: 'snap2@example.cl' },
    });
    t.equal(patched.status, 200);
    t.equal(patched.body.name, 'Nombre Nuevo');
    const inv = await h.api('GET', `/invoices/${created.body.invoice_id}`, { key });
    t.same(inv.body.client, { id: created.body.client_id, name: 'Nombre Viejo', email: 'snap@example.cl', phone: '111', rut: null, address: null, giro: null, comuna: null, ciudad: null });
    const listed = await h.api('GET', '/invoices', { key });
    t.equal(listed.body.data[0].client.name, 'Nombre Viejo', 'the list shows the snapshot too');
    // A new invoice for the (renamed) client takes the client as it is now.
    const again = await h.api('POST', '/invoices', { key, body: body({ client: { name: 'ignored', email: 'SNAP2@example.cl' } }) });
    t.equal(again.body.client_id, created.body.client_id);
    t.equal(again.body.client_name, 'Nombre Nuevo');
  });

  t.test('defaults: issue_date today (America/Santiago), tax 19, CLP, quantity 1, locale es', async (t) => {
    const { key } = await h.key(['*']);
    const res = await h.api('POST', '/invoices', {
      key,
      body: { client: { name: 'D', email: 'defaults@example.cl' }, due_date: '2099-01-01', items: [{ description: 'x', unit_price: 1000 }] },
    });
    t.equal(res.status, 201);
    const inv = (await h.api('GET', `/invoices/${res.body.invoice_id}`, { key })).body;
    t.equal(inv.issue_date, today());
    t.equal(inv.tax_rate, '19.00');
    t.equal(inv.currency, 'CLP');
    t.equal(inv.is_tax_exempt, false);
    t.equal(inv.tax_inclusive, false);
    t.equal(inv.status, 'draft');
    t.equal(inv.items[0].quantity, '1');
    t.equal(inv.total, '1190.00');
    const [row] = await h.sql`SELECT locale FROM invoices WHERE id = ${res.body.invoice_id}`;
    t.equal(row!.locale, 'es');

    const dueToday = await h.api('POST', '/invoices', { key, body: body({ due_date: today() }) });
    t.equal(dueToday.status, 201, 'due today is on or after the default issue date');
    const en = await h.api('POST', '/invoices', { key, body: body({ locale: 'en', issue_date: '2026-01-05', due_date: '2026-01-05' }) });
    t.equal(en.status, 201, 'due_date equal to issue_date is fine');
    const [row2] = await h.sql`SELECT locale, issue_date FROM invoices WHERE id = ${en.body.invoice_id}`;
    t.equal(row2!.locale, 'en');
    t.equal(row2!.issue_date, '2026-01-05');
  });

  t.test('limits of docs/decisions.md §3: each bad field is a 422 naming it', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const post = (b: unknown) => h.api('POST', '/invoices', { key, body: b });
    const item = (extra: Record<string, unknown>) => ({ items: [{ description: 'x', unit_price: 1, ...extra }] });

    const missing = await post({});
    assertValidationError(t, missing, ['client'], { what: 'empty body', including: true });
    t.ok(errorPaths(missing).includes('due_date'), 'due_date named');
    t.ok(errorPaths(missing).includes('items'), 'items named');

    const missingNested = await post({ client: {}, due_date: '2099-01-01', items: [{}] });
    for (const p of ['client.name', 'client.email', 'items[0].description', 'items[0].unit_price']) {
      t.ok(errorPaths(missingNested).includes(p), `missing ${p} named`);
    }
    t.equal(missingNested.status, 422);

    assertValidationError(t, await post(body({ foo: 1 })), ['foo'], { what: 'unknown top-level field', including: true });
    assertValidationError(t, await post(body({ client: { name: 'a', email: 'a@b.cl', nickname: 'x' } })), ['client.nickname'], { what: 'unknown client field', including: true });
    assertValidationError(t, await post(body(item({ price: 1 }))), ['items[0].price'], { what: 'unknown item field', including: true });

    assertValidationError(t, await post(body(item({ unit_price: '5000' }))), ['items[0].unit_price'], { what: 'string unit_price', including: true });
    assertValidationError(t, await post(body(item({ quantity: '2' }))), ['items[0].quantity'], { what: 'string quantity', including: true });
    assertValidationError(t, await post(body({ tax_rate: '19' })), ['tax_rate'], { what: 'string tax_rate', including: true });
    assertValidationError(t, await post(body({ send_immediately: 'true' })), ['send_immediately'], { what: 'string boolean', including: true });
    assertValidationError(t, await post(body({ is_tax_exempt: 1 })), ['is_tax_exempt'], { what: 'number as boolean', including: true });

    assertValidationError(t, await post(body({ due_date: '2000-01-01' })), ['due_date'], { what: 'due_date before today (default issue_date)', including: true });
    assertValidationError(t, await post(body({ issue_date: '2026-03-10', due_date: '2026-03-09' })), ['due_date'], { what: 'due_date before issue_date', including: true });
    for (const bad of ['2026-02-30', '2026-13-01', '2026-2-3', '20260101', '2026-02-29T00:00:00Z', '']) {
      assertValidationError(t, await post(body({ due_date: bad })), ['due_date'], { what: `due_date ${JSON.stringify(bad)}`, including: true });
      assertValidationError(t, await post(body({ issue_date: bad })), ['issue_date'], { what: `issue_date ${JSON.stringify(bad)}`, including: true });
    }
    t.equal((await post(body({ issue_date: '2028-02-29', due_date: '2028-02-29' }))).status, 201, 'a leap day is a date');

    assertValidationError(t, await post(body({ items: [] })), ['items'], { what: '0 items', including: true });
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ description: `l${i}`, unit_price: 1 }));
    assertValidationError(t, await post(body({ items: many(201) })), ['items'], { what: '201 items', including: true });
    const ok200 = await post(body({ items: many(200) }));
    t.equal(ok200.status, 201, '200 items is fine');
    t.equal((await h.api('GET', `/invoices/${ok200.body.invoice_id}`, { key })).body.items.length, 200);

    assertValidationError(t, await post(body(item({ quantity: 0 }))), ['items[0].quantity'], { what: 'quantity 0', including: true });
    assertValidationError(t, await post(body(item({ quantity: -1 }))), ['items[0].quantity'], { what: 'quantity negative', including: true });
    assertValidationError(t, await post(body(item({ quantity: 1_000_000.0001 }))), ['items[0].quantity'], { what: 'quantity > 1e6', including: true });
    assertValidationError(t, await post(body(item({ quantity: 1.00001 }))), ['items[0].quantity'], { what: 'quantity with 5 decimals', including: true });
    t.equal((await post(body(item({ quantity: 1_000_000 })))).status, 201, 'quantity 1e6 is fine');
    t.equal((await post(body(item({ quantity: 0.0001 })))).status, 201, 'quantity 0.0001 is fine');

    assertValidationError(t, await post(body(item({ unit_price: -0.01 }))), ['items[0].unit_price'], { what: 'unit_price negative', including: true });
    assertValidationError(t, await post(body(item({ unit_price: 1e12 + 1 }))), ['items[0].unit_price'], { what: 'unit_price > 1e12', including: true });
    assertValidationError(t, await post(body(item({ unit_price: 1.00001 }))), ['items[0].unit_price'], { what: 'unit_price with 5 decimals', including: true });
    t.equal((await post(body(item({ unit_price: 1e12 })))).status, 201, 'unit_price 1e12 is fine');
    t.equal((await post(body(item({ unit_price: 0 })))).status, 201, 'unit_price 0 is fine');
    assertValidationError(t, await post(body({ items: [{ description: '', unit_price: 1 }] })), ['items[0].description'], { what: 'empty description', including: true });
    assertValidationError(t, await post(body({ items: [{ description: 'x'.repeat(1001), unit_price: 1 }] })), ['items[0].description'], { what: 'description 1001', including: true });
    t.equal((await post(body({ items: [{ description: 'x'.repeat(1000), unit_price: 1 }] }))).status, 201, 'description 1000');
    const second = await post(body({ items: [{ description: 'ok', unit_price: 1 }, { description: 'bad', unit_price: -1 }] }));
    assertValidationError(t, second, ['items[1].unit_price'], { what: 'index of the bad item', including: true });

    assertValidationError(t, await post(body({ tax_rate: 100.01 })), ['tax_rate'], { what: 'tax_rate > 100', including: true });
    assertValidationError(t, await post(body({ tax_rate: -1 })), ['tax_rate'], { what: 'tax_rate < 0', including: true });
    assertValidationError(t, await post(body({ tax_rate: 19.005 })), ['tax_rate'], { what: 'tax_rate with 3 decimals', including: true });
    t.equal((await post(body({ tax_rate: 100 }))).status, 201, 'tax_rate 100 is fine');
    t.equal((await post(body({ tax_rate: 0 }))).status, 201, 'tax_rate 0 is fine');

    assertValidationError(t, await post(body({ external_reference: 'r'.repeat(256) })), ['external_reference'], { what: 'external_reference 256', including: true });
    t.equal((await post(body({ external_reference: 'r'.repeat(255) }))).status, 201, 'external_reference 255');
    assertValidationError(t, await post(body({ locale: 'fr' })), ['locale'], { what: "locale 'fr'", including: true });

    assertValidationError(t, await post(body({ client: { name: 'a', email: 'not-an-email' } })), ['client.email'], { what: 'bad e-mail', including: true });
    const email = (n: number) => `${'a'.repeat(60)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(n - 192)}.cl`;
    t.equal(email(255).length, 255);
    assertValidationError(t, await post(body({ client: { name: 'a', email: email(255) } })), ['client.email'], { what: 'e-mail 255', including: true });
    t.equal((await post(body({ client: { name: 'a', email: email(254) } }))).status, 201, 'e-mail 254 is fine');
    assertValidationError(t, await post(body({ client: { name: '', email: 'n@example.cl' } })), ['client.name'], { what: 'empty name', including: true });
    assertValidationError(t, await post(body({ client: { name: 'n'.repeat(201), email: 'n@example.cl' } })), ['client.name'], { what: 'name 201', including: true });
    assertValidationError(t, await post(body({ client: { name: 'a', email: 'r@example.cl', rut: '12.345.678-4' } })), ['client.rut'], { what: 'bad RUT check digit', including: true });
    assertValidationError(t, await post(body({ client: { name: 'a', email: 'r@example.cl', rut: 'x'.repeat(33) } })), ['client.rut'], { what: 'rut 33', including: true });
    assertValidationError(t, await post(body({ client: { name: 'a', email: 'p@example.cl', phone: '1'.repeat(51) } })), ['client.phone'], { what: 'phone 51', including: true });
    assertValidationError(t, await post(body({ client: { name: 'a', email: 'p@example.cl', address: 'a'.repeat(501) } })), ['client.address'], { what: 'address 501', including: true });

    // Several bad fields at once: every one is named.
    const several = await post(body({ tax_rate: 101, locale: 'fr', items: [{ description: 'x', unit_price: -1, quantity: 0 }] }));
    t.equal(several.status, 422);
    for (const p of ['tax_rate', 'locale', 'items[0].unit_price', 'items[0].quantity']) t.ok(errorPaths(several).includes(p), `names ${p}`);

    const created = await h.sql`SELECT count(*)::int AS n FROM invoices WHERE merchant_id = ${merchantId}`;
    t.equal(created[0]!.n, 11, 'only the valid requests created invoices');
  });

  t.test('currency: unsupported → 400, lowercase normalised', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const xyz = await h.api('POST', '/invoices', { key, body: body({ currency: 'XYZ' }) });
    t.equal(xyz.status, 400);
    t.ok(isEnvelope(xyz.body));
    t.equal(xyz.body.code, 'currency_not_supported');
    t.equal(xyz.body.retry, 'never');
    t.equal(await count(h, 'invoices', merchantId), 0);
    t.equal(await count(h, 'clients', merchantId), 0, 'no client left behind');

    // Choice: the table lists upper-case codes; a lower-case code is accepted and stored upper-case.
    await setRate(h.sql, merchantId, 'USD', today(), '950.25');
    const lower = await h.api('POST', '/invoices', { key, body: body({ currency: 'usd' }) });
    t.equal(lower.status, 201);
    t.equal(lower.body.currency, 'USD');
    const same = await h.api('POST', '/invoices', { key, body: body({ currency: 'CLP' }) });
    t.equal(same.status, 201);
    t.equal((await h.api('GET', `/invoices/${same.body.invoice_id}`, { key })).body.exchange_rate, null, 'base currency: no rate');
    assertValidationError(t, await h.api('POST', '/invoices', { key, body: body({ currency: 840 }) }), ['currency'], { what: 'a number is not a currency', including: true });
  });

  t.test('foreign currency uses the rate table: up to 7 days old, the latest one', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const issue = '2026-03-10';
    await setRate(h.sql, merchantId, 'USD', '2026-03-03', '900.5'); // 7 days old
    await setRate(h.sql, merchantId, 'EUR', '2026-03-03', '1000');
    await setRate(h.sql, merchantId, 'EUR', '2026-03-08', '1020.123456');
    await setRate(h.sql, merchantId, 'EUR', '2026-03-11', '9999'); // after the issue date: not used
    const usd = await h.api('POST', '/invoices', {
      key,
      body: body({ currency: 'USD', issue_date: issue, items: [{ description: 'x', quantity: 1, unit_price: 100 }] }),
    });
    t.equal(usd.status, 201);
    t.equal(usd.body.currency, 'USD');
    t.equal(usd.body.total, '119.00');
    const inv = (await h.api('GET', `/invoices/${usd.body.invoice_id}`, { key })).body;
    t.match(inv, { currency: 'USD', base_currency: 'CLP', exchange_rate: '900.5', total: '119.00', subtotal: '100.00' });

    const eur = await h.api('POST', '/invoices', { key, body: body({ currency: 'EUR', issue_date: issue }) });
    t.equal(eur.status, 201);
    const e = (await h.api('GET', `/invoices/${eur.body.invoice_id}`, { key })).body;
    t.equal(e.exchange_rate, '1020.123456', 'the latest rate on or before the issue date');
    t.equal(e.base_currency, 'CLP');

    const sameDay = await h.api('POST', '/invoices', { key, body: body({ currency: 'EUR', issue_date: '2026-03-11' }) });
    t.equal((await h.api('GET', `/invoices/${sameDay.body.invoice_id}`, { key })).body.exchange_rate, '9999', 'a rate of the issue date itself');
  });

  t.test('no rate within 7 days → 503 currency_conversion_failed, nothing created', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    await setRate(h.sql, merchantId, 'USD', '2026-03-02', '900'); // 8 days before
    await setRate(h.sql, merchantId, 'GBP', today(), '1200'); // another currency
    const events = await count(h, 'events', merchantId);
    for (const [currency, issue] of [
      ['USD', '2026-03-10'],
      ['USD', undefined],
      ['EUR', undefined],
    ] as const) {
      const res = await h.api('POST', '/invoices', {
        key,
        body: body({ currency, ...(issue ? { issue_date: issue } : {}), send_immediately: true }),
      });
      t.equal(res.status, 503, `${currency} ${issue ?? 'today'}: 503`);
      t.ok(isEnvelope(res.body));
      t.equal(res.body.code, 'currency_conversion_failed');
      t.equal(res.body.retry, 'after_seconds:300');
      t.equal(res.headers['retry-after'], '300');
    }
    t.equal(await count(h, 'invoices', merchantId), 0, 'no invoice');
    t.equal(await count(h, 'clients', merchantId), 0, 'no client');
    t.equal(await count(h, 'events', merchantId), events, 'no event');
    const [counter] = await h.sql`SELECT last_number::int AS n FROM invoice_counters WHERE merchant_id = ${merchantId}`;
    t.equal(counter!.n, 0, 'no number consumed');
    t.equal((await h.api('POST', '/invoices', { key, body: body({ currency: 'GBP' }) })).status, 201, 'GBP has a rate');
  });

  t.test('the HTTP rate provider: answers are used and stored; a failure is a 503', async (t) => {
    const asked: URL[] = [];
    let fail = false;
    const server = createServer((req, res) => {
      asked.push(new URL(req.url ?? '/', 'http://x'));
      if (fail) {
        res.writeHead(500).end('{}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"rate": 951.1234567}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.teardown(() => new Promise<void>((r) => server.close(() => r())));
    const port = (server.address() as AddressInfo).port;
    const hp = await testApp(t, { EXCHANGE_RATES_URL: `http://127.0.0.1:${port}/rates` });
    const { key, merchantId } = await hp.key(['*']);

    const ok = await hp.api('POST', '/invoices', { key, body: body({ currency: 'USD', issue_date: '2026-04-01' }) });
    t.equal(ok.status, 201);
    t.equal(asked.length, 1);
    t.same(Object.fromEntries(asked[0]!.searchParams), { base: 'CLP', currency: 'USD', date: '2026-04-01' });
    t.equal((await hp.api('GET', `/invoices/${ok.body.invoice_id}`, { key })).body.exchange_rate, '951.123457');
    const again = await hp.api('POST', '/invoices', { key, body: body({ currency: 'USD', issue_date: '2026-04-01' }) });
    t.equal(again.status, 201);
    t.equal(asked.length, 1, 'the stored answer is reused');

    fail = true;
    const bad = await hp.api('POST', '/invoices', { key, body: body({ currency: 'EUR', issue_date: '2026-04-01' }) });
    t.equal(bad.status, 503);
    t.equal(bad.body.code, 'currency_conversion_failed');
    t.equal(bad.headers['retry-after'], '300');
    t.equal(await count(hp, 'invoices', merchantId), 2);
  });

  t.test('GET /invoices/{id}: every field of the Invoice table', async (t) => {
    const { key } = await h.key(['*']);
    const created = await h.api('POST', '/invoices', {
      key,
      body: body({
        client: { name: 'Full', email: 'full@example.cl', phone: '+56 9 1', rut: '12.345.678-5', address: 'Calle 1' },
        issue_date: '2026-05-01',
        due_date: '2026-05-31',
        external_reference: 'ext-full',
        items: [
          { description: 'Uno', quantity: 2, unit_price: 5000 },
          { description: 'Dos', quantity: 1.5, unit_price: 1000 },
        ],
      }),
    });
    const id = created.body.invoice_id;
    const res = await h.api('GET', `/invoices/${id}`, { key });
    t.equal(res.status, 200);
    const inv = res.body;
    const specFields = [
      'id', 'client_id', 'client', 'invoice_number', 'external_reference', 'status', 'currency', 'exchange_rate',
      'base_currency', 'issue_date', 'due_date', 'is_tax_exempt', 'tax_inclusive', 'tax_rate', 'subtotal', 'tax_total',
      'total', 'amount_paid', 'taxable_amount', 'exempt_amount', 'discount_total', 'global_discount', 'references',
      'amount_credited', 'amount_debited', 'amount_due', 'public_token', 'public_url', 'payment_proof_file_id', 'dte_folio', 'dte_type',
      'dte_status', 'dte_track_id', 'is_legacy', 'payment_reference', 'items', 'created_at', 'updated_at', '_links',
    ];
    for (const f of specFields) t.ok(f in inv, `has ${f}`);
    t.match(inv, {
      id,
      client_id: created.body.client_id,
      client: { id: created.body.client_id, name: 'Full', email: 'full@example.cl', phone: '+56 9 1' },
      invoice_number: null,
      external_reference: 'ext-full',
      status: 'draft',
      currency: 'CLP',
      exchange_rate: null,
      base_currency: null,
      issue_date: '2026-05-01',
      due_date: '2026-05-31',
      is_tax_exempt: false,
      tax_inclusive: false,
      tax_rate: '19.00',
      subtotal: '11500.00',
      taxable_amount: '11500.00',
      exempt_amount: '0.00',
      discount_total: '0.00',
      global_discount: null,
      references: [],
      tax_total: '2185.00',
      total: '13685.00',
      amount_paid: '0.00',
      amount_credited: '0.00',
      amount_debited: '0.00',
      amount_due: '13685.00',
      payment_proof_file_id: null,
      dte_folio: null,
      dte_type: null,
      dte_status: null,
      dte_track_id: null,
      is_legacy: false,
      payment_reference: null,
    });
    t.type(inv.public_token, 'string');
    t.ok(inv.public_token.length >= 16, 'the public token is long');
    t.equal(inv.public_url, `${PUBLIC}/i/${inv.public_token}`);
    t.equal(inv.public_url, created.body.public_url);
    t.equal(inv.created_at, created.body.created_at);
    t.match(inv.created_at, TS);
    t.match(inv.updated_at, TS);
    const client = await h.api('GET', `/clients/${created.body.client_id}`, { key });
    t.match(client.body, { rut: '12345678-5', address: 'Calle 1', phone: '+56 9 1' }, 'the new client, RUT normalised');
    const [snap] = await h.sql`SELECT client_rut, client_address FROM invoices WHERE id = ${id}`;
    t.same(snap, { client_rut: '12345678-5', client_address: 'Calle 1' }, 'the snapshot keeps RUT and address');
    t.equal(inv.items.length, 2);
    for (const it of inv.items) {
      t.match(it.id, UUID);
      t.same(Object.keys(it).sort(), ['description', 'discount_amount', 'discount_percent', 'exempt', 'id', 'line_total', 'product_id', 'quantity', 'unit_price']);
    }
    t.match(inv.items, [
      { description: 'Uno', quantity: '2', unit_price: '5000.00', discount_percent: null, discount_amount: '0.00', exempt: false, line_total: '10000.00' },
      { description: 'Dos', quantity: '1.5', unit_price: '1000.00', discount_percent: null, discount_amount: '0.00', exempt: false, line_total: '1500.00' },
    ]);
    t.same(inv._links.self, { href: `${API}/invoices/${id}`, method: 'GET', rel: 'self', title: inv._links.self.title });
    t.type(inv._links.self.title, 'string');
    t.ok(inv._links.self.title.length > 0);
    for (const l of Object.values(inv._links) as any[]) t.match(l.href, /^https?:\/\//, 'links are absolute');
    // The event is built from the inserted rows, not read back: it must still be the same resource.
    const [event] = await h.sql<{ payload: any }[]>`
      SELECT payload FROM events WHERE type = 'invoice.created' AND payload->'data'->'object'->>'id' = ${id}`;
    t.same(event?.payload.data.object, inv, 'invoice.created carries the invoice as GET shows it');
  });

  t.test('invoice.created carries the amounts as GET shows them, however they were written', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    await setRate(h.sql, merchantId, 'CLF', '2026-03-10', '39123.4567891');
    const created = await h.api('POST', '/invoices', {
      key,
      raw: JSON.stringify(body({ currency: 'CLF', tax_rate: 19.5, issue_date: '2026-03-10' })).replace(
        /"items":\[.*\]/,
        '"items":[{"description":"a","quantity":1.50,"unit_price":1000.1250},{"description":"b","quantity":3,"unit_price":0.0001},{"description":"c","quantity":0.0005,"unit_price":1e3}]',
      ),
    });
    t.equal(created.status, 201, 'created');
    const id = created.body.invoice_id;
    const inv = (await h.api('GET', `/invoices/${id}`, { key })).body;
    t.match(inv.items, [
      { quantity: '1.5', unit_price: '1000.1250', line_total: '1500.1875' },
      { quantity: '3', unit_price: '0.0001', line_total: '0.0003' },
      { quantity: '0.0005', unit_price: '1000.0000', line_total: '0.5000' },
    ]);
    t.equal(inv.tax_rate, '19.50');
    t.equal(inv.exchange_rate, '39123.456789');
    const [event] = await h.sql<{ payload: any }[]>`
      SELECT payload FROM events WHERE type = 'invoice.created' AND payload->'data'->'object'->>'id' = ${id}`;
    t.same(event?.payload.data.object, inv);
  });

  t.test('GET /invoices/{id}/status', async (t) => {
    const { key } = await h.key(['*']);
    const draft = await h.api('POST', '/invoices', { key, body: body({ issue_date: '2026-06-01', due_date: '2026-06-30' }) });
    const res = await h.api('GET', `/invoices/${draft.body.invoice_id}/status`, { key });
    t.equal(res.status, 200);
    t.same(Object.keys(res.body).sort(), [
      'created_at', 'currency', 'due_date', 'invoice_id', 'invoice_number', 'issue_date', 'last_viewed_at', 'paid_at',
      'public_url', 'reminders_sent', 'status', 'total', 'updated_at',
    ]);
    t.match(res.body, {
      invoice_id: draft.body.invoice_id,
      invoice_number: null,
      status: 'draft',
      total: '11900.00',
      currency: 'CLP',
      public_url: draft.body.public_url,
      issue_date: '2026-06-01',
      due_date: '2026-06-30',
      paid_at: null,
      reminders_sent: 0,
      last_viewed_at: null,
      created_at: draft.body.created_at,
    });
    t.match(res.body.updated_at, TS);
    const sent = await h.api('POST', '/invoices', { key, body: body({ send_immediately: true }) });
    const s = await h.api('GET', `/invoices/${sent.body.invoice_id}/status`, { key });
    t.equal(s.body.status, 'sent');
    t.equal(s.body.invoice_number, sent.body.invoice_number);
  });

  t.test('unknown and malformed ids; another merchant’s invoice is 404', async (t) => {
    const { key } = await h.key(['*']);
    const other = await h.key(['*']);
    const theirs = await h.api('POST', '/invoices', { key: other.key, body: body() });
    for (const suffix of ['', '/status']) {
      const unknown = await h.api('GET', `/invoices/01a206db-3c2d-713a-b423-ea5442122778${suffix}`, { key });
      t.equal(unknown.status, 404);
      t.ok(isEnvelope(unknown.body));
      t.equal(unknown.body.code, 'invoice_not_found');
      const foreign = await h.api('GET', `/invoices/${theirs.body.invoice_id}${suffix}`, { key });
      t.equal(foreign.status, 404, 'another merchant’s invoice looks absent');
      t.equal(foreign.body.code, 'invoice_not_found');
      for (const bad of ['not-a-uuid', '123', '01a206db-3c2d-713a-b423-ea544212277']) {
        const res = await h.api('GET', `/invoices/${bad}${suffix}`, { key });
        t.equal(res.status, 400, `${bad}${suffix}: 400`);
        t.ok(isEnvelope(res.body));
        t.equal(res.body.code, 'validation_error');
        t.ok(errorPaths(res).includes('invoice_id'), 'names invoice_id');
      }
    }
  });

  t.test('GET /invoices shows each invoice exactly as GET /invoices/{id} does', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    await setRate(h.sql, merchantId, 'USD', today(), '950.123456789');
    await setRate(h.sql, merchantId, 'CLF', today(), '39123.45');
    const bodies = [
      body({ external_reference: 'ERP-9', client: { name: 'Ñuñoa "Comillas" SpA', email: 'nunoa@example.cl', phone: '+56 9 1234 5678' } }),
      body({ currency: 'USD', tax_inclusive: true, items: [{ description: 'Horas', quantity: 2.5, unit_price: 10.1234 }] }),
      body({ currency: 'CLF', is_tax_exempt: true, items: [{ description: 'Arriendo', quantity: 1, unit_price: 12.3456 }] }),
      body({ send_immediately: true, items: [{ description: 'Uno', quantity: 3, unit_price: 1000 }, { description: 'Dos', quantity: 1, unit_price: 999 }] }),
      body({ send_immediately: true }),
      body({ send_immediately: true }),
    ];
    const ids: string[] = [];
    for (const b of bodies) {
      const res = await h.api('POST', '/invoices', { key, body: b });
      t.equal(res.status, 201, JSON.stringify(res.body));
      ids.push(res.body.invoice_id);
    }
    t.equal((await h.api('POST', `/invoices/${ids[4]}/mark-paid`, { key, body: { payment_method: 'transfer' } })).status, 200);
    t.equal((await h.api('POST', `/invoices/${ids[5]}/cancel`, { key, body: { reason: 'duplicada' } })).status, 200);
    const listed = (await h.api('GET', '/invoices?limit=100', { key })).body.data as { id: string }[];
    t.same(listed.map((i) => i.id), [...ids].reverse());
    for (const inv of listed) t.strictSame(inv, (await h.api('GET', `/invoices/${inv.id}`, { key })).body, inv.id);
    t.ok(listed.some((i: any) => i.payment_reference !== null), 'a paid invoice is among them');
  });

  t.test('GET /invoices: newest first, paging, filters', async (t) => {
    const { key } = await h.key(['*']);
    const ids: string[] = [];
    const made: any[] = [];
    for (let i = 0; i < 5; i++) {
      const client = i % 2 === 0 ? { name: 'Par', email: 'par@example.cl' } : { name: 'Impar', email: `impar${i}@example.cl` };
      const res = await h.api('POST', '/invoices', {
        key,
        body: body({ client, external_reference: i === 3 ? 'ref-3' : `ref-${i % 2}`, send_immediately: i >= 3 }),
      });
      t.equal(res.status, 201);
      ids.push(res.body.invoice_id);
      made.push(res.body);
    }
    const newestFirst = [...ids].reverse();
    const all = await h.api('GET', '/invoices', { key });
    t.equal(all.status, 200);
    t.same(Object.keys(all.body).sort(), ['data', 'has_more', 'limit', 'offset']);
    t.equal(all.body.limit, 50, 'default limit');
    t.equal(all.body.offset, 0, 'default offset');
    t.equal(all.body.has_more, false);
    t.same(all.body.data.map((i: any) => i.id), newestFirst, 'newest first');
    t.ok(all.body.data.every((i: any) => Array.isArray(i.items) && i._links?.self), 'items are full Invoice resources');

    const p1 = await h.api('GET', '/invoices?limit=2', { key });
    t.same(p1.body.data.map((i: any) => i.id), newestFirst.slice(0, 2));
    t.equal(p1.body.has_more, true);
    const p2 = await h.api('GET', '/invoices?limit=2&offset=2', { key });
    t.same(p2.body.data.map((i: any) => i.id), newestFirst.slice(2, 4));
    t.equal(p2.body.has_more, true);
    const p3 = await h.api('GET', '/invoices?limit=2&offset=4', { key });
    t.same(p3.body.data.map((i: any) => i.id), newestFirst.slice(4));
    t.equal(p3.body.has_more, false);
    const exact = await h.api('GET', '/invoices?limit=5', { key });
    t.equal(exact.body.has_more, false, 'a full last page has no more');
    const beyond = await h.api('GET', '/invoices?offset=10', { key });
    t.same(beyond.body.data, []);

    const sent = await h.api('GET', '/invoices?status=sent', { key });
    t.same(sent.body.data.map((i: any) => i.id), [ids[4], ids[3]]);
    const drafts = await h.api('GET', '/invoices?status=draft&limit=1', { key });
    t.same(drafts.body.data.map((i: any) => i.id), [ids[2]]);
    t.equal(drafts.body.has_more, true);
    t.same((await h.api('GET', '/invoices?status=paid', { key })).body.data, []);

    const byClient = await h.api('GET', `/invoices?client_id=${made[0].client_id}`, { key });
    t.same(byClient.body.data.map((i: any) => i.id), [ids[4], ids[2], ids[0]]);
    const byRef = await h.api('GET', '/invoices?external_reference=ref-1', { key });
    t.same(byRef.body.data.map((i: any) => i.id), [ids[1]]);
    const combined = await h.api('GET', `/invoices?client_id=${made[0].client_id}&status=draft`, { key });
    t.same(combined.body.data.map((i: any) => i.id), [ids[2], ids[0]]);

    await new Promise((r) => setTimeout(r, 15));
    const since = clock.now().toISOString();
    await new Promise((r) => setTimeout(r, 15));
    const late = await h.api('POST', '/invoices', { key, body: body() });
    const upd = await h.api('GET', `/invoices?updated_since=${encodeURIComponent(since)}`, { key });
    t.same(upd.body.data.map((i: any) => i.id), [late.body.invoice_id]);
    // The same instant with an offset.
    const d = new Date(new Date(since).getTime() - 3 * 3600_000).toISOString().replace('Z', '-03:00');
    const updOffset = await h.api('GET', `/invoices?updated_since=${encodeURIComponent(d)}`, { key });
    t.same(updOffset.body.data.map((i: any) => i.id), [late.body.invoice_id], 'an offset timestamp is understood');

    // Another merchant's invoices never show.
    const other = await h.key(['*']);
    t.same((await h.api('GET', '/invoices', { key: other.key })).body.data, []);

    for (const q of ['status=bogus', 'limit=0', 'limit=101', 'offset=-1', 'limit=abc', 'client_id=nope', 'updated_since=yesterday', 'colour=red']) {
      const res = await h.api('GET', `/invoices?${q}`, { key });
      t.equal(res.status, 422, `${q}: 422`);
      t.ok(isEnvelope(res.body));
      t.equal(res.body.code, 'validation_error', q);
      t.equal(res.body.path, '/api/v1/external/invoices', 'path without the query string');
    }
    const named = await h.api('GET', '/invoices?status=bogus', { key });
    t.same(errorPaths(named), ['status']);
    t.equal((await h.api('GET', '/invoices?limit=100', { key })).status, 200);
  });

  t.test('send_immediately: sent with consecutive numbers', async (t) => {
    const { key } = await h.key(['*']);
    const a = await h.api('POST', '/invoices', { key, body: body({ send_immediately: true }) });
    const draft = await h.api('POST', '/invoices', { key, body: body() });
    const b = await h.api('POST', '/invoices', { key, body: body({ send_immediately: true }) });
    t.equal(a.status, 201);
    t.equal(a.body.status, 'sent');
    t.equal(a.body.invoice_number, 'INV-000001');
    t.equal(draft.body.invoice_number, null, 'a draft takes no number');
    t.equal(b.body.status, 'sent');
    t.equal(b.body.invoice_number, 'INV-000002');
    const inv = (await h.api('GET', `/invoices/${b.body.invoice_id}`, { key })).body;
    t.equal(inv.status, 'sent');
    t.equal(inv.invoice_number, 'INV-000002');
  });

  t.test('POST /invoices/bulk', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const res = await h.api('POST', '/invoices/bulk', {
      key,
      body: {
        invoices: [
          body({ send_immediately: true }),
          body({ items: [{ description: 'x', unit_price: -5 }], client: { name: 'a', email: 'bad' } }),
          body({ send_immediately: true, external_reference: 'third' }),
        ],
      },
    });
    t.equal(res.status, 200);
    t.match(res.body, { total: 3, succeeded: 2, failed: 1 });
    t.same(
      res.body.results.map((r: any) => [r.index, r.success]),
      [
        [0, true],
        [1, false],
        [2, true],
      ],
    );
    const [ok0, bad, ok2] = res.body.results;
    t.match(ok0.invoice, { status: 'sent', invoice_number: 'INV-000001', total: '11900.00', currency: 'CLP' });
    t.match(ok2.invoice, { status: 'sent', invoice_number: 'INV-000002', external_reference: 'third' });
    t.match(ok0.invoice.invoice_id, UUID);
    t.equal(ok0.invoice.public_url.startsWith(`${PUBLIC}/i/`), true);
    t.equal(bad.error, 'validation_error');
    t.type(bad.message, 'string');
    t.notOk('invoice' in bad, 'a failed item has no invoice');
    const paths = (bad.details.errors as any[]).map((e) => e.path);
    t.ok(paths.includes('items[0].unit_price'), `item details name items[0].unit_price (${paths})`);
    t.ok(paths.includes('client.email'), 'and client.email');
    t.equal(await count(h, 'invoices', merchantId), 2);
    const got = await h.api('GET', `/invoices/${ok2.invoice.invoice_id}`, { key });
    t.equal(got.body.external_reference, 'third');
  });

  t.test('bulk: an item that is no invoice at all is named by its place', async (t) => {
    const { key } = await h.key(['*']);
    const res = await h.api('POST', '/invoices/bulk', { key, body: { invoices: [body(), 'not an invoice'] } });
    t.equal(res.status, 200);
    t.match(res.body, { total: 2, succeeded: 1, failed: 1 });
    t.same(res.body.results[1].details.errors, [{ path: 'invoices[1]', message: 'must be an object' }]);
  });

  t.test('bulk: per-item business failures', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    const res = await h.api('POST', '/invoices/bulk', {
      key,
      body: {
        invoices: [
          body({ currency: 'XYZ' }),
          body({ issue_date: '2026-03-10', due_date: '2026-03-01' }),
          body({ currency: 'USD' }), // no rate: this item fails, the others do not
          body(),
          'not an object',
        ],
      },
    });
    t.equal(res.status, 200);
    t.match(res.body, { total: 5, succeeded: 1, failed: 4 });
    const r = res.body.results;
    t.match(r[0], { index: 0, success: false, error: 'currency_not_supported' });
    t.type(r[0].message, 'string');
    t.match(r[1], { index: 1, success: false, error: 'validation_error' });
    t.ok((r[1].details.errors as any[]).some((e) => e.path === 'due_date'));
    t.match(r[2], { index: 2, success: false, error: 'currency_conversion_failed' });
    t.match(r[3], { index: 3, success: true, invoice: { status: 'draft' } });
    t.match(r[4], { index: 4, success: false, error: 'validation_error' });
    t.equal(await count(h, 'invoices', merchantId), 1);
    t.equal(await count(h, 'clients', merchantId), 1, 'failed items leave no client');
  });

  t.test('bulk: the whole call is rejected for an empty list, 51 items or a bad shape', async (t) => {
    const { key, merchantId } = await h.key(['*']);
    for (const [what, b] of [
      ['empty list', { invoices: [] }],
      ['51 items', { invoices: Array.from({ length: 51 }, () => body()) }],
      ['no list', {}],
      ['not a list', { invoices: body() }],
      ['unknown field', { invoices: [body()], extra: true }],
    ] as const) {
      const res = await h.api('POST', '/invoices/bulk', { key, body: b });
      t.equal(res.status, 422, `${what}: 422`);
      t.ok(isEnvelope(res.body));
      t.equal(res.body.code, 'validation_error');
      t.ok(errorPaths(res).length > 0, `${what}: names a field (${errorPaths(res)})`);
    }
    const fifty = await h.api('POST', '/invoices/bulk', { key, body: { invoices: Array.from({ length: 50 }, () => body()) } });
    t.equal(fifty.status, 200, '50 items is fine');
    t.match(fifty.body, { total: 50, succeeded: 50, failed: 0 });
    t.same(
      fifty.body.results.map((r: any) => r.index),
      Array.from({ length: 50 }, (_, i) => i),
    );
    t.equal(await count(h, 'invoices', merchantId), 50);
  });

  t.test('scope: invoices:create to create, invoices:read to read', async (t) => {
    const reader = await h.key(['invoices:read']);
    const writer = await h.key(['invoices:create'], { merchantId: reader.merchantId });
    const denied = await h.api('POST', '/invoices', { key: reader.key, body: body() });
    t.equal(denied.status, 403);
    t.equal(denied.body.code, 'insufficient_scope');
    t.equal(denied.body.details.required_scope, 'invoices:create');
    const bulkDenied = await h.api('POST', '/invoices/bulk', { key: reader.key, body: { invoices: [body()] } });
    t.equal(bulkDenied.body.details.required_scope, 'invoices:create');
    const created = await h.api('POST', '/invoices', { key: writer.key, body: body() });
    t.equal(created.status, 201);
    const readDenied = await h.api('GET', `/invoices/${created.body.invoice_id}`, { key: writer.key });
    t.equal(readDenied.status, 403);
    t.equal(readDenied.body.details.required_scope, 'invoices:read');
    t.equal((await h.api('GET', `/invoices/${created.body.invoice_id}`, { key: reader.key })).status, 200);
  });

  t.test('malformed JSON is 400, a non-JSON body 415', async (t) => {
    const { key } = await h.key(['*']);
    const bad = await h.api('POST', '/invoices', { key, raw: '{"client": ' });
    t.equal(bad.status, 400);
    t.equal(bad.body.code, 'validation_error');
    const text = await h.api('POST', '/invoices', { key, raw: 'hello', headers: { 'content-type': 'text/plain' } });
    t.equal(text.status, 415);
    t.equal(text.body.code, 'validation_error');
  });
});
