// Property-based fuzzing of every route in apiRoutes: bodies (shaped like the route's own JSON
// Schema, then mutated), query strings and path ids. Whatever comes in, the API must answer
// without a 5xx, every non-2xx must be the error envelope, and a 422 validation_error must name
// at least one field. FUZZ_RUNS and FUZZ_SEED override the run count and the seed.
import t from 'tap';
import fc from 'fast-check';
import { z } from 'zod';
import { isEnvelope, testApp, type ApiResponse, type TestApp } from './helpers/app.js';
import { apiRoutes } from '../src/routes.js';
import type { RouteDef } from '../src/http/route.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
// Query strings and path ids are a smaller space than bodies.
const QUERY_RUNS = Math.max(1, Math.round(RUNS * (2 / 3)));
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;

type Json = Record<string, unknown>;

// ---- JSON Schema of a zod schema, refs inlined (the same conversion the docs use) ----------

function jsonSchema(schema: z.ZodType): Json {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any', target: 'draft-2020-12', reused: 'inline', cycles: 'ref' }) as Json;
}

function resolver(root: Json): (s: unknown) => Json {
  const defs = (root.$defs ?? {}) as Record<string, Json>;
  const resolve = (s: unknown, depth = 0): Json => {
    if (!s || typeof s !== 'object' || Array.isArray(s)) return {};
    const o = s as Json;
    if (typeof o.$ref === 'string' && depth < 10) {
      const { $ref, ...rest } = o;
      const target = $ref === '#' ? root : defs[$ref.replace('#/$defs/', '')];
      return { ...resolve(target, depth + 1), ...rest };
    }
    return o;
  };
  return resolve;
}

// ---- Raw JSON literals (numbers JSON.stringify cannot write) -------------------------------

class Raw {
  constructor(readonly text: string) {}
}

/** JSON text of a value that may hold Raw literals. */
function serialize(value: unknown): string | undefined {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_k, v: unknown) => {
    if (v instanceof Raw) {
      raws.push(v.text);
      return `\u0001RAW${raws.length - 1}\u0001`;
    }
    return v;
  });
  return text?.replace(/"\\u0001RAW(\d+)\\u0001"/g, (_m, i: string) => raws[Number(i)]!);
}

const rawNumber = fc
  .constantFrom('1e999', '-1e999', '1e-400', '123456789012345678901234567890', '0.1000000000000000055511151231257827', '-0', '1E2', '4.00000', '9007199254740993', '1.00005', '0.00001')
  .map((s) => new Raw(s));

const deepNest = fc.integer({ min: 50, max: 5000 }).map((n) => new Raw(`${'['.repeat(n)}${']'.repeat(n)}`));
const deepObject = fc.integer({ min: 50, max: 2000 }).map((n) => new Raw(`${'{"a":'.repeat(n)}1${'}'.repeat(n)}`));

const oddStrings = fc.constantFrom(
  'NaN',
  'Infinity',
  '-Infinity',
  '1e999',
  '0x1F',
  ' 12 ',
  '١٢٣',
  '12,5',
  '',
  ' ',
  'null',
  'undefined',
  'true',
  '[]',
  '{}',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\u202e\u0645\u0631\u062d\u0628\u0627',
  '👩‍👩‍👧‍👦',
  '2026-02-30',
  '9999-99-99',
  '0000-00-00',
  '2026-13-01T25:61:61Z',
  '../../etc/passwd',
  "' OR 1=1 --",
  '<script>alert(1)</script>',
  '%00',
  '${7*7}',
  '__proto__',
  'constructor',
  '00000000-0000-0000-0000-000000000000',
  'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
  '12.345.678-5',
  '11.111.111-1',
  'x'.repeat(256),
  'é'.repeat(1001),
  'a'.repeat(70_000),
);

// Numbers JSON can carry that a double rounds: the precision lost is what the API must cope with.
// eslint-disable-next-line no-loss-of-precision
const oddNumbers = fc.constantFrom(1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, -Number.MAX_SAFE_INTEGER, 5e-324, 1e21, 0.1 + 0.2, 123456789.123456789, -1, 0, 1e12, 1e12 + 0.0001, 100.001, 1_000_000.00001);

/** Anything at all where a value is expected. */
const weird: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.constant(null), weight: 3 },
  { arbitrary: oddStrings, weight: 4 },
  { arbitrary: oddNumbers, weight: 3 },
  { arbitrary: rawNumber, weight: 2 },
  { arbitrary: fc.boolean(), weight: 1 },
  { arbitrary: fc.string({ maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }), weight: 2 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 2 },
  { arbitrary: fc.double(), weight: 2 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 3 },
  { arbitrary: fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 4 }), weight: 1 },
  { arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 4 }), weight: 1 },
  { arbitrary: deepNest, weight: 1 },
  { arbitrary: deepObject, weight: 1 },
);

// ---- Values shaped like a JSON Schema, each part sometimes replaced by a weird one ---------

function shaped(schema: unknown, resolve: (s: unknown) => Json, anyItem: () => fc.Arbitrary<unknown>, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  const mutate = (a: fc.Arbitrary<unknown>) => fc.oneof({ arbitrary: a, weight: 6 }, { arbitrary: weird, weight: 1 });
  if (depth > 5) return weird;
  const variants = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (Array.isArray(variants)) return fc.oneof(...variants.map((v) => shaped(v, resolve, anyItem, depth + 1)));
  if (Array.isArray(s.enum)) return mutate(fc.oneof(fc.constantFrom(...(s.enum as unknown[])), fc.constantFrom(...(s.enum as unknown[])).map((v) => (typeof v === 'string' ? v.toUpperCase() : v))));
  if (s.const !== undefined) return mutate(fc.constant(s.const));
  const type = Array.isArray(s.type) ? (s.type as string[]).find((x) => x !== 'null') : (s.type as string | undefined);
  const nullable = Array.isArray(s.type) && (s.type as string[]).includes('null');
  let arb: fc.Arbitrary<unknown>;
  switch (type) {
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const required = (s.required ?? []) as string[];
      const model = Object.fromEntries(Object.entries(props).map(([k, v]) => [k, shaped(v, resolve, anyItem, depth + 1)]));
      arb = fc
        .tuple(
          fc.record(model, { requiredKeys: required.filter((k) => k in model) }),
          fc.subarray(required, { maxLength: Math.min(1, required.length) }),
          fc.option(fc.dictionary(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('__proto__', 'constructor', 'toString')), weird, { maxKeys: 2 }), { freq: 6 }),
        )
        .map(([rec, drop, extra]) => {
          const out: Record<string, unknown> = { ...rec };
          for (const k of drop) delete out[k];
          if (extra) for (const [k, v] of Object.entries(extra)) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
          return out;
        });
      break;
    }
    case 'array': {
      const items = resolve(s.items);
      const item = Object.keys(items).length === 0 ? anyItem() : shaped(s.items, resolve, anyItem, depth + 1);
      const max = typeof s.maxItems === 'number' ? s.maxItems : 5;
      arb = fc.oneof(
        { arbitrary: fc.array(item, { minLength: 0, maxLength: Math.min(max, 3) }), weight: 8 },
        // Just past the limit, with cheap items.
        { arbitrary: fc.constant(Array.from({ length: max + 1 }, () => null)), weight: 1 },
      );
      break;
    }
    case 'string': {
      const min = typeof s.minLength === 'number' ? s.minLength : 0;
      const max = typeof s.maxLength === 'number' ? s.maxLength : 40;
      const byFormat: Record<string, fc.Arbitrary<unknown>> = {
        date: fc.oneof(
          fc.date({ noInvalidDate: true, min: new Date('1900-01-01'), max: new Date('2300-01-01') }).map((d) => d.toISOString().slice(0, 10)),
          fc.constantFrom('2026-02-29', '2024-02-29', '2026-12-31', '0001-01-01', '+002026-01-01'),
        ),
        'date-time': fc.oneof(
          fc.date({ noInvalidDate: true, min: new Date('1900-01-01'), max: new Date('2300-01-01') }).map((d) => d.toISOString()),
          fc.constantFrom('2026-11-22T03:16:13Z', '2026-11-22T03:16:13+03:00', '2026-11-22 03:16:13', '2026-11-22T03:16:13.123456789Z'),
        ),
        email: fc.oneof(fc.emailAddress(), fc.constantFrom('A@B.CO', 'pagos@andes.cl', 'PAGOS@ANDES.CL', 'x@y', '@', 'a@b..cl')),
        uuid: fc.oneof(fc.uuid(), fc.uuid().map((u) => u.toUpperCase()), fc.constantFrom('00000000-0000-0000-0000-000000000000')),
        uri: fc.constantFrom('https://127.0.0.1:9/hook', 'https://localhost/x', 'http://127.0.0.1/', 'ftp://127.0.0.1/', 'https://[::1]/', 'not a url'),
        url: fc.constantFrom('https://127.0.0.1:9/hook', 'https://localhost/x', 'http://127.0.0.1/', 'javascript:alert(1)', 'not a url'),
      };
      const fits = Math.max(min, Math.min(max, 30));
      arb = (typeof s.format === 'string' && byFormat[s.format]) || fc.oneof(
        { arbitrary: fc.string({ minLength: min, maxLength: Math.min(max, 60) }), weight: 6 },
        { arbitrary: fc.string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, 30) }), weight: 2 },
        // Control characters, NUL included (Postgres text cannot hold NUL).
        { arbitrary: fc.string({ unit: 'binary-ascii', minLength: min, maxLength: fits }), weight: 1 },
        { arbitrary: fc.string({ minLength: Math.max(0, min - 1), maxLength: Math.max(0, fits - 1) }).map((x) => `${x}\u0000`), weight: 1 },
        { arbitrary: fc.string({ minLength: max + 1, maxLength: max + 3 }), weight: 1 },
      );
      break;
    }
    case 'number':
    case 'integer': {
      const lo = typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum : -1e6;
      const hi = typeof s.maximum === 'number' ? s.maximum : typeof s.exclusiveMaximum === 'number' ? s.exclusiveMaximum : 1e6;
      const safeLo = Math.max(lo, -1e15);
      const safeHi = Math.min(hi, 1e15);
      arb = fc.oneof(
        { arbitrary: fc.integer({ min: Math.ceil(Math.max(safeLo, -(2 ** 31))), max: Math.floor(Math.min(safeHi, 2 ** 31 - 1)) }), weight: 4 },
        { arbitrary: fc.double({ min: safeLo, max: safeHi, noNaN: true, noDefaultInfinity: true }), weight: 3 },
        { arbitrary: fc.integer({ min: 0, max: 99_999 }).map((n) => Math.max(safeLo, Math.min(safeHi, n / 10000))), weight: 2 },
        { arbitrary: fc.constantFrom(lo, hi, lo - 1, hi + 1, lo - 0.00001, hi + 0.00001), weight: 2 },
        { arbitrary: rawNumber, weight: 1 },
        { arbitrary: oddNumbers, weight: 1 },
      );
      break;
    }
    case 'boolean':
      arb = fc.oneof(fc.boolean(), fc.constantFrom('true', 1, 0));
      break;
    case 'null':
      arb = fc.constant(null);
      break;
    default:
      arb = weird;
  }
  return mutate(nullable ? fc.oneof(arb, fc.constant(null)) : arb);
}

// ---- Requests ------------------------------------------------------------------------------

const contentTypes = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 12 },
  { arbitrary: fc.constantFrom('application/json; charset=utf-8', 'application/JSON', 'application/json;charset=latin1'), weight: 1 },
  { arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/vnd.api+json'), weight: 1 },
);

const rawBodies = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.constantFrom('{', '{"a":', '[1,2', 'nul', '"\\ud800"', '\ufeff{}', '{"x":1,"x":2}', '{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{}}}', '   ', '0', '"string"', 'true', '[]', '[{}]', '{}'.repeat(3)),
);

/** A path segment: mostly ids that parse, sometimes anything. */
function idArb(known: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: known.length ? fc.constantFrom(...known) : fc.uuid(), weight: 4 },
    { arbitrary: fc.uuid(), weight: 3 },
    { arbitrary: fc.uuid().map((u) => u.toUpperCase()), weight: 1 },
    { arbitrary: fc.string({ maxLength: 40 }).map(encodeURIComponent), weight: 2 },
    { arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }).map(encodeURIComponent), weight: 1 },
    {
      arbitrary: fc.constantFrom(
        'null',
        '0',
        '-1',
        '00000000-0000-0000-0000-000000000000',
        '{0192f3a4-5b6c-7d8e-9f01-23456789abcd}',
        '0192f3a45b6c7d8e9f0123456789abcd',
        '%',
        '%zz',
        '%E0%A4%A',
        '%00',
        '%2F',
        '..',
        'a'.repeat(201),
        encodeURIComponent('😀'.repeat(20)),
      ),
      weight: 2,
    },
  );
}

const queryKeyChars = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz_[].0123456789%+'.split(''));

/** `key=value&...`: keys of the schema and random ones, repeated keys, odd values and encodings. */
function queryArb(names: string[]): fc.Arbitrary<string> {
  const key = fc.oneof(
    { arbitrary: names.length ? fc.constantFrom(...names) : fc.constant('limit'), weight: 6 },
    { arbitrary: fc.string({ unit: queryKeyChars, minLength: 1, maxLength: 12 }), weight: 1 },
    { arbitrary: fc.constantFrom('__proto__', 'constructor', 'limit[]', 'limit[0]', 'status[]', 'a[b]', ''), weight: 1 },
  );
  const value = fc.oneof(
    { arbitrary: fc.constantFrom('0', '1', '50', '100', '101', '-1', '1.5', '1e2', '0x10', '', ' 5', '5 ', 'NaN', 'Infinity', '99999999999999999999', 'sent', 'draft', 'paid', 'SENT', 'nope', 'a\u0000b', '\u0000'), weight: 5 },
    { arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 10 }), weight: 1 },
    { arbitrary: fc.uuid(), weight: 2 },
    { arbitrary: fc.date({ noInvalidDate: true, min: new Date('1900-01-01'), max: new Date('2300-01-01') }).map((d) => d.toISOString()), weight: 2 },
    { arbitrary: fc.string({ maxLength: 30 }), weight: 3 },
    { arbitrary: fc.string({ unit: 'grapheme', maxLength: 10 }), weight: 1 },
    { arbitrary: fc.constant('x'.repeat(300)), weight: 1 },
  );
  const pair = fc.tuple(key, value, fc.constantFrom('encoded', 'encoded', 'encoded', 'plus', 'raw')).map(([k, v, how]) => {
    if (how === 'raw') return `${k}=${v.replace(/[^\x21-\x7e]/g, '').replace(/[#&]/g, '')}`;
    const enc = encodeURIComponent;
    return how === 'plus' ? `${enc(k)}=${enc(v).replace(/%20/g, '+')}` : `${enc(k)}=${enc(v)}`;
  });
  return fc.oneof(
    { arbitrary: fc.array(pair, { maxLength: 6 }).map((ps) => ps.join('&')), weight: 8 },
    { arbitrary: fc.constantFrom('&&&', '=', '==&=', 'limit', 'limit=', 'limit=1&limit=2', 'offset=1&offset=1&offset=1', '%', '%zz=1', 'limit=%ZZ', '&limit=5&'), weight: 2 },
  );
}

interface Sent {
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
}

function describe(req: Sent, res: ApiResponse): string {
  const clip = (s: string | undefined) => (s && s.length > 600 ? `${s.slice(0, 600)}… (${s.length} chars)` : s);
  return `${req.method} ${clip(req.url)} headers=${JSON.stringify(req.headers)} body=${JSON.stringify(clip(req.payload))} → ${res.status} ${clip(res.raw)}`;
}

/** The invariants of every answer. Throws (with the exchange) when one is broken. */
function check(req: Sent, res: ApiResponse): void {
  if (res.status >= 500) throw new Error(`5xx: ${describe(req, res)}`);
  if (res.status >= 200 && res.status < 300) return;
  if (!isEnvelope(res.body)) throw new Error(`not the error envelope: ${describe(req, res)}`);
  if (res.status === 422 && res.body.code === 'validation_error') {
    const errors = res.body.details?.errors;
    const names = Array.isArray(errors) && errors.some((e: { path?: unknown; message?: unknown }) => typeof e?.path === 'string' && e.path !== '' && typeof e.message === 'string');
    if (!names) throw new Error(`422 names no field: ${describe(req, res)}`);
  }
}

async function send(h: TestApp, key: string, req: Omit<Sent, 'headers'> & { headers?: Record<string, string> }, seen: Map<number, number>): Promise<void> {
  const sent: Sent = { ...req, headers: { 'x-api-key': key, ...(req.headers ?? {}) } };
  const res = await h.app.inject({ method: sent.method as 'GET', url: sent.url, headers: sent.headers, ...(sent.payload !== undefined ? { payload: sent.payload } : {}) });
  let body: unknown = null;
  try {
    body = res.body ? JSON.parse(res.body) : null;
  } catch {
    body = res.body;
  }
  seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
  check(sent, { status: res.statusCode, headers: res.headers, body, raw: res.body });
}

/** `201×40 422×110`: how deep the inputs went. */
function histogram(seen: Map<number, number>): string {
  return [...seen.entries()]
    .sort(([a], [b]) => a - b)
    .map(([status, n]) => `${status}×${n}`)
    .join(' ');
}

/** A valid-looking value: required fields and every optional string field (the ones text goes in). */
function plausible(schema: unknown, resolve: (s: unknown) => Json, depth = 0): unknown {
  const s = resolve(schema);
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum)) return s.enum[0];
  const variants = (s.anyOf ?? s.oneOf) as unknown[] | undefined;
  if (Array.isArray(variants)) return plausible(variants.find((v) => resolve(v).type !== 'null') ?? variants[0], resolve, depth + 1);
  const type = Array.isArray(s.type) ? (s.type as string[]).find((x) => x !== 'null') : s.type;
  if (depth > 6) return null;
  switch (type) {
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const required = (s.required ?? []) as string[];
      const keep = Object.keys(props).filter((k) => required.includes(k) || resolve(props[k]).type === 'string');
      return Object.fromEntries(keep.map((k) => [k, plausible(props[k], resolve, depth + 1)]));
    }
    case 'array':
      return [plausible(s.items, resolve, depth + 1)];
    case 'number':
    case 'integer':
      return typeof s.minimum === 'number' ? Math.max(s.minimum, 1) : 1;
    case 'boolean':
      return false;
    case 'string':
      return (
        { date: '2030-12-31', 'date-time': '2026-11-22T03:16:13.123Z', email: 'nul@example.com', uuid: '00000000-0000-4000-8000-000000000000', uri: 'https://127.0.0.1/x' } as Record<string, string>
      )[String(s.format)] ?? 'text';
    default:
      return null;
  }
}

/** Copies of a value, each with a NUL appended to one of its strings: [field path, copy]. */
function nulVariants(v: unknown, path = ''): [string, unknown][] {
  if (typeof v === 'string') return [[path || 'body', `${v}\u0000`]];
  if (Array.isArray(v)) return v.flatMap((x, i) => nulVariants(x, `${path}[${i}]`).map(([p, c]): [string, unknown] => [p, v.map((y, j) => (j === i ? c : y))]));
  if (v && typeof v === 'object') {
    return Object.entries(v).flatMap(([k, x]) => nulVariants(x, path ? `${path}.${k}` : k).map(([p, c]): [string, unknown] => [p, { ...v, [k]: c }]));
  }
  return [];
}

function queryNamesOf(def: RouteDef): string[] {
  if (!def.query) return [];
  const schema = jsonSchema(def.query);
  return Object.keys((resolver(schema)(schema).properties ?? {}) as Json);
}

function pathWith(def: RouteDef, ids: Record<string, string>): string {
  return `/api/v1/external${def.path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => ids[name] ?? '00000000-0000-0000-0000-000000000000')}`;
}

function paramNames(def: RouteDef): string[] {
  return [...def.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => m[1]!);
}

function idsArb(def: RouteDef, known: Record<string, string[]>, valid: boolean): fc.Arbitrary<Record<string, string>> {
  const names = paramNames(def);
  return fc.record(
    Object.fromEntries(
      names.map((n) => [n, valid ? fc.oneof({ arbitrary: known[n]?.length ? fc.constantFrom(...known[n]!) : fc.uuid(), weight: 3 }, { arbitrary: fc.uuid(), weight: 1 }) : idArb(known[n] ?? [])]),
    ),
  ) as fc.Arbitrary<Record<string, string>>;
}

t.test('fuzzing every route', async (t) => {
  const h = await testApp(t);
  const merchant = await h.merchant({ payment_provider: 'sandbox' });
  const { key } = await h.key(['*'], { merchantId: merchant.id, rate_limit: 100_000_000 });

  // Real resources, so that valid-looking ids reach the handlers too.
  const known: Record<string, string[]> = {};
  const add = (name: string, id: unknown) => typeof id === 'string' && (known[name] ??= []).push(id);
  const post = async (path: string, body: unknown) => (await h.api('POST', path, { key, body })).body as Json;
  // A new resource per case where one case could change the state the next one needs.
  let serial = 0;
  const fresh: Record<string, () => Promise<string>> = {
    client_id: async () => String((await post('/clients', { name: `Fresh ${++serial}`, email: `fresh${serial}@example.com` })).id),
    invoice_id: async () =>
      String(
        (
          await post('/invoices', {
            client: { name: 'Fresh', email: 'fresh@example.com' },
            due_date: '2030-12-31',
            items: [{ description: 'Fresh', quantity: 1, unit_price: 1000 }],
            send_immediately: true,
          })
        ).invoice_id,
      ),
  };
  for (let i = 0; i < 3; i++) {
    const client = await post('/clients', { name: `Fuzz ${i}`, email: `fuzz${i}@example.com` });
    add('client_id', client.id);
    for (const send_immediately of [false, true, true]) {
      const inv = await post('/invoices', {
        client: { name: `Fuzz ${i}`, email: `fuzz${i}@example.com` },
        due_date: '2030-12-31',
        items: [{ description: 'Fuzz', quantity: 1, unit_price: 1000 }],
        send_immediately,
      });
      add('invoice_id', inv.invoice_id);
    }
  }
  t.ok(known.invoice_id?.length, 'fixtures created');

  // Bodies of "any" items (bulk) are shaped like one of the other request bodies.
  const bodySchemas = apiRoutes.filter((d) => d.body).map((d) => jsonSchema(d.body!));
  const anyItem = (): fc.Arbitrary<unknown> =>
    fc.oneof({ arbitrary: fc.oneof(...bodySchemas.map((s) => shaped(s, resolver(s), () => weird, 2))), weight: 3 }, { arbitrary: weird, weight: 1 });

  // Inputs that once broke an invariant, tried on every route whatever the random runs draw.
  await t.test('known hard inputs', async (t) => {
    const seen = new Map<number, number>();
    const deepArrays = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    for (const def of apiRoutes) {
      // Path ids are put in per case (below), each a fresh resource in a state every operation accepts.
      const url = pathWith(def, Object.fromEntries(paramNames(def).map((n) => [n, `:${n}`])));
      const cases: { name: string; url: string; payload?: string; headers?: Record<string, string> }[] = [
        // A query parameter named "": the 422 must still name a field.
        { name: 'query "="', url: `${url}?=1` },
        { name: 'query "a[b]=1"', url: `${url}?a[b]=1` },
      ];
      for (const name of queryNamesOf(def)) cases.push({ name: `query ${name} with NUL`, url: `${url}?${encodeURIComponent(name)}=a%00b` });
      if (def.body) {
        const json = { 'content-type': 'application/json' };
        // The route's own example (valid but for the NUL added to each of its strings).
        const schema = jsonSchema(def.body);
        for (const [source, base] of [
          ['example', def.example?.body],
          ['plausible', plausible(schema, resolver(schema))],
        ] as const) {
          for (const [field, body] of nulVariants(base)) cases.push({ name: `${source} body with a NUL in ${field}`, url, payload: JSON.stringify(body), headers: json });
        }
        cases.push(
          // A body that is not an object, and a field named "": the 422 must still name a field.
          { name: 'body 0', url, payload: '0', headers: json },
          { name: 'body []', url, payload: '[]', headers: json },
          { name: 'body {"":1}', url, payload: '{"":1}', headers: json },
          // Nested 5000 levels deep, with and without an Idempotency-Key.
          { name: 'deep body', url, payload: `{"invoices":[${deepArrays(5000)}]}`, headers: json },
          ...(def.idempotent
            ? [
                { name: 'deep body + Idempotency-Key', url, payload: `{"invoices":[${deepArrays(5000)}]}`, headers: { ...json, 'idempotency-key': `deep-${def.operationId}` } },
                { name: 'deep unknown field + Idempotency-Key', url, payload: `{"x":${deepArrays(5000)}}`, headers: { ...json, 'idempotency-key': `deep2-${def.operationId}` } },
              ]
            : []),
        );
      }
      for (const c of cases) {
        let target = c.url;
        for (const n of paramNames(def)) {
          const id = fresh[n] ? await fresh[n]() : (known[n]?.[0] ?? '00000000-0000-0000-0000-000000000000');
          target = target.replace(`:${n}`, id);
        }
        try {
          await send(h, key, { method: def.method, url: target, ...(c.payload !== undefined ? { payload: c.payload } : {}), ...(c.headers ? { headers: c.headers } : {}) }, seen);
          t.pass(`${def.method} ${def.path}: ${c.name}`);
        } catch (err) {
          t.fail(`${def.method} ${def.path}: ${c.name}`, { exchange: (err as Error).message.slice(0, 800) });
        }
      }
    }
    t.comment(histogram(seen));
  });

  const started = Date.now();
  for (const def of apiRoutes) {
    const label = `${def.method} ${def.path}`;
    const params: { numRuns: number; seed?: number } = { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) };

    if (def.body) {
      const schema = jsonSchema(def.body);
      const value = fc.oneof(
        { arbitrary: shaped(schema, resolver(schema), anyItem), weight: 8 },
        { arbitrary: weird, weight: 1 },
        { arbitrary: fc.array(shaped(schema, resolver(schema), anyItem), { maxLength: 2 }), weight: 1 },
      );
      const payload = fc.oneof({ arbitrary: value.map(serialize), weight: 9 }, { arbitrary: rawBodies, weight: 1 });
      const idem = def.idempotent
        ? fc.option(fc.oneof(fc.uuid(), fc.string({ unit: fc.constantFrom(...'abcXYZ019-_:.'.split('')), maxLength: 300 })), { freq: 3 })
        : fc.constant(null);
      await t.test(`${label}: body`, async (t) => {
        const seen = new Map<number, number>();
        await fc.assert(
          fc.asyncProperty(idsArb(def, known, true), payload, contentTypes, idem, async (ids, body, type, idemKey) => {
            const headers: Record<string, string> = { 'content-type': type };
            if (idemKey !== null) headers['idempotency-key'] = idemKey;
            await send(h, key, { method: def.method, url: pathWith(def, ids), headers, ...(body !== undefined ? { payload: body } : {}) }, seen);
          }),
          params,
        );
        t.pass(`${RUNS} bodies: ${histogram(seen)}`);
      });
    }

    const queryNames = queryNamesOf(def);
    await t.test(`${label}: query string`, async (t) => {
      const seen = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(idsArb(def, known, true), queryArb(queryNames), async (ids, query) => {
          await send(h, key, { method: def.method, url: `${pathWith(def, ids)}${query ? `?${query}` : ''}` }, seen);
        }),
        { ...params, numRuns: QUERY_RUNS },
      );
      t.pass(`${QUERY_RUNS} query strings: ${histogram(seen)}`);
    });

    if (paramNames(def).length) {
      await t.test(`${label}: path ids`, async (t) => {
        const seen = new Map<number, number>();
        await fc.assert(
          fc.asyncProperty(idsArb(def, known, false), fc.boolean(), async (ids, withBody) => {
            const body = withBody && def.body ? serialize(def.example?.body ?? {}) : undefined;
            await send(h, key, {
              method: def.method,
              url: pathWith(def, ids),
              ...(body !== undefined ? { payload: body, headers: { 'content-type': 'application/json' } } : {}),
            }, seen);
          }),
          { ...params, numRuns: QUERY_RUNS },
        );
        t.pass(`${QUERY_RUNS} path ids: ${histogram(seen)}`);
      });
    }
  }
  t.comment(`fuzzed ${apiRoutes.length} routes in ${((Date.now() - started) / 1000).toFixed(1)} s`);
});
