import t from 'tap';
import { testApp, isEnvelope } from './helpers/app.js';
import { assertValidationError } from './helpers/assertions.js';
import { UUID } from './helpers/fixtures.js';

const BASE = 'http://invoicing.test/api/v1/external';
const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MISSING_ID = '0191e4b2-7c1a-7000-8000-00000000beef';

/** A merchant with one key that may create and one that may read. */
async function setup(t: Parameters<typeof testApp>[0]) {
  const h = await testApp(t);
  const { key, merchantId } = await h.key(['clients:create', 'clients:read']);
  const create = (body: unknown) => h.api('POST', '/clients', { key, body });
  const patch = (id: string, body: unknown) => h.api('PATCH', `/clients/${id}`, { key, body });
  const get = (id: string) => h.api('GET', `/clients/${id}`, { key });
  const list = (query = '') => h.api('GET', `/clients${query}`, { key });
  return { h, key, merchantId, create, patch, get, list };
}

t.test('POST /clients creates the Client resource', async (t) => {
  const { create, get } = await setup(t);
  const before = Date.now();
  const res = await create({ name: 'Comercial Andes SpA', email: 'Pagos@Andes.cl', rut: '76.086.428-5', phone: '+56 2 2345 6789', address: 'Av. Apoquindo 1234, Las Condes' });
  t.equal(res.status, 201);
  t.match(res.headers['content-type'], /^application\/json/);
  const c = res.body;
  t.match(c.id, UUID);
  t.same(
    Object.keys(c).sort(),
    ['_links', 'address', 'ciudad', 'comuna', 'created_at', 'email', 'giro', 'id', 'name', 'phone', 'rut', 'updated_at'],
    'exactly the fields of the Client resource',
  );
  t.equal(c.name, 'Comercial Andes SpA');
  t.equal(c.email, 'Pagos@Andes.cl', 'e-mail kept as given');
  t.equal(c.rut, '76086428-5', 'RUT normalised');
  t.equal(c.phone, '+56 2 2345 6789');
  t.equal(c.address, 'Av. Apoquindo 1234, Las Condes');
  t.match(c.created_at, RFC3339_MS);
  t.match(c.updated_at, RFC3339_MS);
  t.equal(c.created_at, c.updated_at);
  t.ok(Date.parse(c.created_at) >= before - 1000 && Date.parse(c.created_at) <= Date.now() + 1000, 'created now');
  t.same(c._links.self, { href: `${BASE}/clients/${c.id}`, method: 'GET', rel: 'self', title: c._links.self.title });
  t.ok(/^https?:\/\//.test(c._links.self.href), 'absolute href');

  // Following the self link gives the same resource.
  const path = c._links.self.href.slice(BASE.length);
  const again = await get(path.replace('/clients/', ''));
  t.equal(again.status, 200);
  t.same(again.body, c);

  // Optional fields may be omitted: they come back as null.
  const bare = await create({ name: 'Sin Datos', email: 'sin@datos.cl' });
  t.equal(bare.status, 201);
  t.equal(bare.body.rut, null);
  t.equal(bare.body.phone, null);
  t.equal(bare.body.address, null);
});

t.test('e-mail is unique per merchant, ignoring case', async (t) => {
  const { h, key, merchantId, create, patch, get, list } = await setup(t);
  const a = await create({ name: 'Ana', email: 'ana@example.cl' });
  t.equal(a.status, 201);

  const dup = await create({ name: 'Otra Ana', email: 'ANA@Example.CL' });
  t.equal(dup.status, 409);
  t.ok(isEnvelope(dup.body));
  t.equal(dup.body.code, 'client_already_exists');
  t.equal(dup.body.retry, 'never');
  const exact = await create({ name: 'Ana again', email: 'ana@example.cl' });
  t.equal(exact.status, 409);
  t.equal(exact.body.code, 'client_already_exists');
  t.equal((await list()).body.data.length, 1, 'no second client was created');

  const b = await create({ name: 'Bruno', email: 'bruno@example.cl' });
  t.equal(b.status, 201);
  const clash = await patch(b.body.id, { email: 'Ana@EXAMPLE.cl', name: 'Bruno Renamed' });
  t.equal(clash.status, 409);
  t.equal(clash.body.code, 'client_already_exists');
  const bAfter = await get(b.body.id);
  t.equal(bAfter.body.email, 'bruno@example.cl', 'a rejected PATCH changes nothing');
  t.equal(bAfter.body.name, 'Bruno', 'not even the other fields');

  // Its own e-mail in another case is not a conflict; the new spelling is saved.
  const own = await patch(a.body.id, { email: 'ANA@example.cl' });
  t.equal(own.status, 200);
  t.equal(own.body.email, 'ANA@example.cl');
  const same = await patch(a.body.id, { email: 'ANA@example.cl' });
  t.equal(same.status, 200, 'saving the same e-mail again is fine');

  // Another merchant may have a client with the same e-mail.
  const other = await h.key(['clients:create']);
  t.not(other.merchantId, merchantId);
  const elsewhere = await h.api('POST', '/clients', { key: other.key, body: { name: 'Ana', email: 'ana@example.cl' } });
  t.equal(elsewhere.status, 201);
  t.equal((await h.api('GET', '/clients', { key })).body.data.length, 2, 'still two clients here');
});

t.test('concurrent requests cannot create two clients with one e-mail', async (t) => {
  const { create, patch, list } = await setup(t);
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) => create({ name: `Racer ${i}`, email: i % 2 ? 'race@example.cl' : 'RACE@example.cl' })),
  );
  t.same(results.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409], 'exactly one wins');
  for (const r of results.filter((r) => r.status === 409)) t.equal(r.body.code, 'client_already_exists');

  const x = (await create({ name: 'X', email: 'x@example.cl' })).body;
  const y = (await create({ name: 'Y', email: 'y@example.cl' })).body;
  const renames = await Promise.all([patch(x.id, { email: 'same@example.cl' }), patch(y.id, { email: 'SAME@example.cl' })]);
  t.same(renames.map((r) => r.status).sort(), [200, 409], 'one PATCH wins, the other conflicts');
  const emails = (await list()).body.data.map((c: { email: string }) => c.email.toLowerCase());
  t.equal(emails.filter((e: string) => e === 'same@example.cl').length, 1);
  t.equal(emails.filter((e: string) => e === 'race@example.cl').length, 1);
});

t.test('PATCH changes only the fields given; null clears rut, phone and address', async (t) => {
  const { create, patch, get } = await setup(t);
  const full = { name: 'Ferretería Sur', email: 'ventas@sur.cl', rut: '12.345.678-5', phone: '+56 9 1111 2222', address: 'Calle 1, Temuco' };
  const created = (await create(full)).body;
  await new Promise((r) => setTimeout(r, 5));

  const phoneOnly = await patch(created.id, { phone: '+56 9 3333 4444' });
  t.equal(phoneOnly.status, 200);
  t.same(
    { ...phoneOnly.body, updated_at: undefined },
    { ...created, phone: '+56 9 3333 4444', updated_at: undefined },
    'only phone changed',
  );
  t.ok(phoneOnly.body.updated_at > created.updated_at, 'updated_at moves');
  t.equal(phoneOnly.body.created_at, created.created_at, 'created_at stays');
  t.same((await get(created.id)).body, phoneOnly.body, 'GET shows the same');

  const renamed = await patch(created.id, { name: 'Ferretería del Sur', rut: '12345678-5' });
  t.equal(renamed.body.name, 'Ferretería del Sur');
  t.equal(renamed.body.rut, '12345678-5');
  t.equal(renamed.body.email, full.email);
  t.equal(renamed.body.address, full.address);

  const empty = await patch(created.id, {});
  t.equal(empty.status, 200, 'an empty PATCH is allowed');
  t.equal(empty.body.name, 'Ferretería del Sur');

  const cleared = await patch(created.id, { rut: null, phone: null, address: null });
  t.equal(cleared.status, 200);
  t.equal(cleared.body.rut, null);
  t.equal(cleared.body.phone, null);
  t.equal(cleared.body.address, null);
  t.equal(cleared.body.name, 'Ferretería del Sur');
  t.equal(cleared.body.email, full.email);
  const stored = (await get(created.id)).body;
  t.equal(stored.rut, null);
  t.equal(stored.phone, null);
  t.equal(stored.address, null);

  // name and e-mail are required fields: they cannot be cleared.
  assertValidationError(t, await patch(created.id, { name: null }), ['name'], { what: 'name null' });
  assertValidationError(t, await patch(created.id, { email: null }), ['email'], { what: 'email null' });
  assertValidationError(t, await patch(created.id, { name: '' }), ['name'], { what: 'name empty' });
  assertValidationError(t, await patch(created.id, { email: 'not-an-email' }), ['email'], { what: 'email invalid' });
  assertValidationError(t, await patch(created.id, { nickname: 'x', phone: 'p'.repeat(51) }), ['nickname', 'phone'], { what: 'unknown + long phone' });
  assertValidationError(t, await patch(created.id, { rut: '12.345.678-9' }), ['rut'], { what: 'bad RUT' });
  t.equal((await get(created.id)).body.name, 'Ferretería del Sur', 'rejected PATCHes changed nothing');
});

t.test('unknown and malformed client ids', async (t) => {
  const { create, patch, get } = await setup(t);
  await create({ name: 'Ana', email: 'ana@example.cl' });

  for (const res of [await get(MISSING_ID), await patch(MISSING_ID, { name: 'X' })]) {
    t.equal(res.status, 404);
    t.ok(isEnvelope(res.body));
    t.equal(res.body.code, 'client_not_found');
    t.equal(res.body.retry, 'never');
  }
  // Existence is checked after the body: an invalid body on a missing id is a 422.
  assertValidationError(t, await patch(MISSING_ID, { name: '' }), ['name'], { what: 'invalid body on missing id' });

  for (const bad of ['not-a-uuid', '12345', `${MISSING_ID}x`, '0191e4b2-7c1a-7000-8000-00000000beeg']) {
    for (const res of [await get(bad), await patch(bad, { name: 'X' })]) {
      t.equal(res.status, 400, `400 for ${bad}`);
      t.ok(isEnvelope(res.body));
      t.equal(res.body.code, 'validation_error');
      t.same(res.body.details.errors.map((e: { path: string }) => e.path), ['client_id']);
    }
  }
});

t.test('RUT: normalised, check digit verified, other tax ids kept', async (t) => {
  const { create, get } = await setup(t);
  let n = 0;
  const withRut = (rut: unknown) => create({ name: `Cliente ${n}`, email: `c${n++}@example.cl`, rut });

  for (const [given, stored] of [
    ['12.345.678-5', '12345678-5'],
    ['12345678-5', '12345678-5'],
    ['11.111.111-1', '11111111-1'],
    ['20.000.008-0', '20000008-0'],
    ['9.876.543-3', '9876543-3'],
    ['10.000.013-K', '10000013-K'],
    ['10000013-k', '10000013-K'],
    ['1.000.005-k', '1000005-K'],
    ['  12.345.678-5  ', '12345678-5'],
    ['DE123456789', 'DE123456789'],
    ['ATU12345678', 'ATU12345678'],
    ['123456789', '123456789'],
    ['B-12345678', 'B-12345678'],
  ] as const) {
    const res = await withRut(given);
    t.equal(res.status, 201, `accepted: ${given}`);
    t.equal(res.body.rut, stored, `${given} stored as ${stored}`);
    t.equal((await get(res.body.id)).body.rut, stored, `${given} read back as ${stored}`);
  }

  for (const bad of ['12.345.678-9', '12345678-0', '12345678-K', '10.000.013-1', '11111111-k']) {
    const res = await withRut(bad);
    assertValidationError(t, res, ['rut'], { what: `bad check digit ${bad}` });
  }
  assertValidationError(t, await withRut('X'.repeat(33)), ['rut'], { what: 'rut over 32 characters' });
  const max = await withRut('X'.repeat(32));
  t.equal(max.status, 201, '32 characters is fine');
  assertValidationError(t, await withRut(12345678), ['rut'], { what: 'rut as a number' });
});

t.test('create validation names every bad field', async (t) => {
  const { create, list } = await setup(t);
  const ok = { name: 'Ana', email: 'ana@example.cl' };

  assertValidationError(t, await create({ ...ok, nickname: 'Anita' }), ['nickname'], { what: 'unknown field' });
  assertValidationError(t, await create({ ...ok, Name: 'x', extra: 1 }), ['Name', 'extra'], { what: 'two unknown fields' });
  assertValidationError(t, await create({}), ['name', 'email'], { what: 'both missing' });
  assertValidationError(t, await create({ email: 'ana@example.cl' }), ['name'], { what: 'name missing' });
  assertValidationError(t, await create({ name: 'Ana' }), ['email'], { what: 'email missing' });
  assertValidationError(t, await create({ ...ok, name: 'x'.repeat(201) }), ['name'], { what: 'name over 200' });
  assertValidationError(t, await create({ ...ok, name: '' }), ['name'], { what: 'name empty' });
  assertValidationError(t, await create({ ...ok, name: '   ' }), ['name'], { what: 'name blank' });
  assertValidationError(t, await create({ ...ok, name: 42 }), ['name'], { what: 'name not a string' });
  for (const email of ['ana', 'ana@', '@example.cl', 'ana example@x.cl', 'ana@@example.cl']) {
    assertValidationError(t, await create({ ...ok, email }), ['email'], { what: `email ${email}` });
  }
  // A well-formed address of 254 characters is the limit; 255 is too long.
  const longEmail = (n: number) => `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(n - 64 - 1 - 64 - 64 - 3)}.cl`;
  t.equal(longEmail(254).length, 254);
  assertValidationError(t, await create({ ...ok, email: longEmail(255) }), ['email'], { what: 'email over 254' });
  const maxEmail = await create({ name: 'Long Mail', email: longEmail(254) });
  t.equal(maxEmail.status, 201, 'an e-mail of 254 characters is fine');
  t.equal(maxEmail.body.email, longEmail(254));
  assertValidationError(t, await create({ ...ok, phone: '1'.repeat(51) }), ['phone'], { what: 'phone over 50' });
  assertValidationError(t, await create({ ...ok, address: 'a'.repeat(501) }), ['address'], { what: 'address over 500' });
  assertValidationError(t, await create({ name: 'x'.repeat(201), email: 'nope', phone: '1'.repeat(51), address: 'a'.repeat(501), zip: '1' }), ['name', 'email', 'phone', 'address', 'zip'], { what: 'all at once' });
  for (const res of [await create({ ...ok, nickname: 'x' })]) {
    const e = res.body.details.errors[0];
    t.type(e.message, 'string');
    t.ok(e.message.length > 0);
  }
  t.equal((await list()).body.data.length, 1, 'nothing was created but the long e-mail one');

  // The limits themselves are allowed.
  const atLimits = await create({ name: 'n'.repeat(200), email: 'limits@example.cl', phone: '1'.repeat(50), address: 'a'.repeat(500) });
  t.equal(atLimits.status, 201);
  t.equal(atLimits.body.name.length, 200);
  t.equal(atLimits.body.phone.length, 50);
  t.equal(atLimits.body.address.length, 500);
});

t.test('GET /clients: ordered by name ignoring case, then id; paged', async (t) => {
  const { create, list } = await setup(t);
  const names = ['delta', 'Bravo', 'alpha', 'Charlie', 'Alpha', 'bravo', 'echo', 'ALPHA'];
  const created: { id: string; name: string }[] = [];
  for (const [i, name] of names.entries()) {
    const res = await create({ name, email: `c${i}@example.cl` });
    t.equal(res.status, 201);
    created.push(res.body);
  }
  const expected = [...created]
    .sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : a.name.toLowerCase() > b.name.toLowerCase() ? 1 : a.id < b.id ? -1 : 1))
    .map((c) => c.id);

  const all = await list();
  t.equal(all.status, 200);
  t.same(Object.keys(all.body).sort(), ['data', 'has_more', 'limit', 'offset']);
  t.equal(all.body.limit, 50, 'default limit 50');
  t.equal(all.body.offset, 0, 'default offset 0');
  t.equal(all.body.has_more, false);
  t.same(all.body.data.map((c: { id: string }) => c.id), expected, 'name ignoring case, then id');
  t.same(
    all.body.data.map((c: { name: string }) => c.name.toLowerCase()),
    ['alpha', 'alpha', 'alpha', 'bravo', 'bravo', 'charlie', 'delta', 'echo'],
  );
  t.same(all.body.data[0], created.find((c) => c.id === expected[0]), 'list items are full Client resources');

  // Pages, walked the way the spec tells clients to: until a short page.
  const seen: string[] = [];
  for (let offset = 0; ; offset += 3) {
    const page = await list(`?limit=3&offset=${offset}`);
    t.equal(page.status, 200);
    t.equal(page.body.limit, 3);
    t.equal(page.body.offset, offset);
    seen.push(...page.body.data.map((c: { id: string }) => c.id));
    t.equal(page.body.has_more, offset + 3 < names.length, `has_more at offset ${offset}`);
    if (!page.body.has_more) break;
  }
  t.same(seen, expected, 'pages add up to the whole list');

  const exactEnd = await list('?limit=4&offset=4');
  t.equal(exactEnd.body.data.length, 4);
  t.equal(exactEnd.body.has_more, false, 'a full last page has has_more false');
  const beyond = await list('?offset=100');
  t.same(beyond.body.data, []);
  t.equal(beyond.body.has_more, false);
  const one = await list('?limit=1');
  t.equal(one.body.data.length, 1);
  t.equal(one.body.has_more, true);
  t.equal((await list('?limit=100')).status, 200, 'limit 100 is allowed');
  t.equal((await list('?limit=1&offset=0')).status, 200);

  for (const [query, path] of [
    ['?limit=0', 'limit'],
    ['?limit=101', 'limit'],
    ['?limit=-5', 'limit'],
    ['?limit=abc', 'limit'],
    ['?limit=1.5', 'limit'],
    ['?limit=', 'limit'],
    ['?offset=-1', 'offset'],
    ['?offset=xyz', 'offset'],
    ['?offset=0.5', 'offset'],
  ] as const) {
    assertValidationError(t, await list(query), [path], { what: query });
  }
});
