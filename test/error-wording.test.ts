// Validation messages name the rule a value broke, in our words: "must be between 1 and 100",
// "must be a number", "must be one of es, en" — never zod's ("Invalid input: expected string,
// received number"), one message per field, and the same words from the CLI.
import t from 'tap';
import { z } from 'zod';
import { testApp } from './helpers/app.js';
import { runCli } from './helpers/cli.js';
import { apiRoutes } from '../src/routes.js';
import { fieldErrors } from '../src/http/validation.js';

const ZOD_WORDS = /Invalid input|expected .* received|Too (small|big)|Invalid option|Invalid (string|number|enum|literal|union|type)|Unrecognized key/;

const invoice = (item: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) => ({
  client: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl' },
  due_date: '2026-12-31',
  items: [{ description: 'Consultoría', quantity: 1, unit_price: 5000, ...item }],
  ...extra,
});

t.test("the issue's examples name the rule they broke", async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);

  const query: [string, string, string][] = [
    ['limit=0', 'limit', 'must be between 1 and 100'],
    ['limit=101', 'limit', 'must be between 1 and 100'],
    ['limit=1e20', 'limit', 'must be between 1 and 100'],
    ['limit=1.5', 'limit', 'must be an integer'],
    ['limit=ten', 'limit', 'must be an integer'],
    ['limit=0x2', 'limit', 'must be an integer'],
    ['limit=%202', 'limit', 'must be an integer'],
    ['limit=', 'limit', 'must be an integer'],
    ['offset=0b1', 'offset', 'must be an integer'],
    ['offset=-1', 'offset', 'must be at least 0'],
    ['status=unpaid', 'status', 'must be one of draft, sent, viewed, paid, overdue, cancelled'],
    ['limit=10&limit=20', 'limit', 'must be given once'],
  ];
  for (const [qs, path, message] of query) {
    const res = await h.api('GET', `/invoices?${qs}`, { key });
    t.equal(res.status, 422, qs);
    t.same(res.body.details.errors, [{ path, message }], qs);
  }

  const bodies: [string, unknown, string, string][] = [
    ['quantity 0', invoice({ quantity: 0 }), 'items[0].quantity', 'must be greater than 0'],
    ['quantity 2000000', invoice({ quantity: 2_000_000 }), 'items[0].quantity', 'must be at most 1000000'],
    ['unit_price -5', invoice({ unit_price: -5 }), 'items[0].unit_price', 'must be between 0 and 1000000000000'],
    ['unit_price 1e20', invoice({ unit_price: 1e20 }), 'items[0].unit_price', 'must be between 0 and 1000000000000'],
    ['unit_price 1.23456', invoice({ unit_price: 1.23456 }), 'items[0].unit_price', 'at most 4 decimals'],
    ['discount_amount 1e13', invoice({ discount_amount: 1e13 }), 'items[0].discount_amount', 'must be at most 1000000000000'],
    ['quantity "2"', invoice({ quantity: '2' }), 'items[0].quantity', 'must be a number'],
    ['description 5', invoice({ description: 5 }), 'items[0].description', 'must be a string'],
    ['exempt "yes"', invoice({ exempt: 'yes' }), 'items[0].exempt', 'must be true or false'],
    ['send_immediately "true"', invoice({}, { send_immediately: 'true' }), 'send_immediately', 'must be true or false'],
    ['locale "fr"', invoice({}, { locale: 'fr' }), 'locale', 'must be one of es, en'],
    ['tax_rate 101', invoice({}, { tax_rate: 101 }), 'tax_rate', 'must be between 0 and 100'],
    ['no unit_price', invoice({ unit_price: undefined }), 'items[0].unit_price', 'is required'],
  ];
  for (const [name, body, path, message] of bodies) {
    const res = await h.api('POST', '/invoices', { key, body });
    t.equal(res.status, 422, name);
    t.same(res.body.details.errors, [{ path, message }], name);
  }
});

t.test('one message per field: the first rule the value broke', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);
  // 1e20 breaks both the safe-integer range and the bound of 100; the field is named once.
  const res = await h.api('GET', '/invoices?limit=1e20&offset=-1', { key });
  t.same(res.body.details.errors, [
    { path: 'limit', message: 'must be between 1 and 100' },
    { path: 'offset', message: 'must be at least 0' },
  ]);
  const paths = (res.body.details.errors as { path: string }[]).map((e) => e.path);
  t.equal(new Set(paths).size, paths.length);
});

// ---- Every route's body and query, with wrong types and out-of-range values ------------------

type Json = Record<string, any>;

function jsonSchema(schema: z.ZodType): Json {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12', reused: 'inline', cycles: 'ref' }) as Json;
}

/** Values that break a property of this JSON Schema: every other type, and each side of its bounds. */
function badValues(s: Json): unknown[] {
  const out: unknown[] = ['not-a-valid-value', 12345, -1, 0, 1.23456, 1e20, true, null, [], {}, ''];
  for (const k of ['minimum', 'exclusiveMinimum']) if (typeof s[k] === 'number') out.push(s[k] - 1, s[k] - 0.5);
  for (const k of ['maximum', 'exclusiveMaximum']) if (typeof s[k] === 'number') out.push(s[k] + 1, s[k] * 10);
  if (typeof s.maxLength === 'number') out.push('x'.repeat(s.maxLength + 1));
  if (typeof s.maxItems === 'number') out.push(Array.from({ length: s.maxItems + 1 }, () => ({})));
  return out;
}

/** Each body the example (or {}) becomes with one property, at any depth, set to a bad value. */
function* mutations(schema: Json, value: Json, depth = 0): Generator<Json> {
  if (depth > 3) return;
  const props = (schema.properties ?? {}) as Record<string, Json>;
  for (const [name, prop] of Object.entries(props)) {
    for (const bad of badValues(prop)) yield { ...value, [name]: bad };
    const inner = prop.anyOf?.find((o: Json) => o.type === 'object' || o.type === 'array') ?? prop;
    if (inner.type === 'object' && inner.properties) {
      const current = value[name] && typeof value[name] === 'object' ? value[name] : {};
      for (const m of mutations(inner, current, depth + 1)) yield { ...value, [name]: m };
    }
    if (inner.type === 'array' && inner.items?.type === 'object') {
      const current = Array.isArray(value[name]) && value[name][0] && typeof value[name][0] === 'object' ? value[name][0] : {};
      for (const m of mutations(inner.items, current, depth + 1)) yield { ...value, [name]: [m] };
    }
  }
}

t.test("no route's body or query answers in zod's words, and each field once", async (t) => {
  let checked = 0;
  for (const def of apiRoutes) {
    const parts: [string, z.ZodType | undefined, Json][] = [
      ['body', def.body, (def.example?.body ?? {}) as Json],
      ['query', def.query, {}],
    ];
    for (const [where, schema, example] of parts) {
      if (!schema) continue;
      const inputs = [...mutations(jsonSchema(schema), example), 5, 'text', null, []];
      for (const input of inputs) {
        const result = schema.safeParse(input);
        if (result.success) continue;
        const errors = fieldErrors(result.error);
        checked++;
        const raw = errors.filter((e) => ZOD_WORDS.test(e.message) || e.message === '');
        if (raw.length > 0) t.fail(`${def.method} ${def.path} ${where} ${JSON.stringify(input).slice(0, 200)}: ${JSON.stringify(raw)}`);
        const paths = errors.map((e) => e.path);
        if (new Set(paths).size !== paths.length) t.fail(`${def.method} ${def.path} ${where}: a field named twice: ${JSON.stringify(errors)}`);
      }
    }
  }
  t.ok(checked > 500, `checked ${checked} refused inputs`);
});

t.test('the CLI says the same words as the API', async (t) => {
  const h = await testApp(t);
  const merchant = await h.merchant();
  const zero = await runCli(h.dbUrl, 'keys', 'create', '--merchant', merchant.id, '--scopes', '*', '--rate-limit', '0');
  t.equal(zero.code, 1);
  t.same(zero.out.error.details.errors, [{ path: 'rate_limit', message: 'must be greater than 0' }]);

  const text = await runCli(h.dbUrl, 'keys', 'create', '--merchant', merchant.id, '--scopes', '*', '--rate-limit', 'many');
  t.same(text.out.error.details.errors, [{ path: 'rate_limit', message: 'must be a number' }]);

  const scope = await runCli(h.dbUrl, 'keys', 'create', '--merchant', merchant.id, '--scopes', 'everything');
  t.equal(scope.out.error.details.errors.length, 1);
  t.match(scope.out.error.details.errors[0], { path: 'scopes[0]', message: /^must be one of / });
  t.notMatch(JSON.stringify(scope.out), ZOD_WORDS);

  const resolucion = await runCli(h.dbUrl, 'merchants', 'set-tax-profile', '--merchant', merchant.id, '--rut', '76.086.428-5', '--razon-social', 'Andes SpA', '--giro', 'Servicios', '--direccion', 'Av. Uno 1', '--comuna', 'Santiago', '--ciudad', 'Santiago', '--resolucion-numero', '1000000', '--resolucion-fecha', '2026-01-01');
  t.same(resolucion.out.error.details.errors, [{ path: 'resolucion_numero', message: 'must be between 0 and 999999' }]);
});

t.test('an unsupported currency is refused with the currencies that are supported, by the API and the CLI', async (t) => {
  const h = await testApp(t);
  const merchant = await h.merchant({ payment_provider: 'sandbox' });
  const { key } = await h.key(['*'], { merchantId: merchant.id });
  const rule = 'must be one of CLP, CLF, USD, EUR, GBP, ARS, BRL, COP, MXN, PEN';

  const created = await h.api('POST', '/invoices', { key, body: invoice({}, { currency: 'XYZ' }) });
  t.equal(created.status, 400);
  t.equal(created.body.code, 'currency_not_supported');
  t.match(created.body.message, rule, 'POST /invoices names the supported currencies');

  const checkout = await h.api('POST', '/checkout', {
    key,
    body: { amount: 1000, currency: 'XYZ', description: 'Pedido', customer_email: 'a@b.cl', customer_name: 'A', success_url: 'https://shop.example.cl/ok', cancel_url: 'https://shop.example.cl/no' },
  });
  t.equal(checkout.body.code, 'currency_not_supported');
  t.match(checkout.body.message, rule, 'POST /checkout names the supported currencies');

  const rate = await runCli(h.dbUrl, 'rates', 'set', '--merchant', merchant.id, '--currency', 'XYZ', '--rate', '950');
  t.equal(rate.code, 1);
  t.same(rate.out.error.details.errors, [{ path: '--currency', message: rule }], 'the CLI, the same words');
});

t.test('a route that takes no body refuses a field sent in one, by name; an empty body is none', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);
  const draft = await h.api('POST', '/invoices', { key, body: invoice() });
  t.equal(draft.status, 201);
  const id = draft.body.invoice_id as string;

  const cases: [string, 'GET' | 'POST', string, unknown, string, string][] = [
    ['a field sent to send, which takes no body', 'POST', `/invoices/${id}/send`, { foo: 1 }, 'foo', 'unknown field'],
    ['a list sent as send\'s body', 'POST', `/invoices/${id}/send`, [], 'body', 'must be an object'],
  ];
  for (const [what, method, path, body, field, message] of cases) {
    const res = await h.api(method, path, { key, ...(body === undefined ? {} : { body }) });
    t.equal(res.status, 422, `${what}: 422`);
    t.same(res.body.details?.errors, [{ path: field, message }], `${what}: ${field} ${message}`);
  }
  t.match((await h.api('GET', `/invoices/${id}`, { key })).body, { status: 'draft' }, 'nothing was sent');
  const sent = await h.api('POST', `/invoices/${id}/send`, { key, body: {} });
  t.equal(sent.status, 200, 'an empty object is no body');
  t.equal(sent.body.status, 'sent');
});
