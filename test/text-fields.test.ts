// Text fields carry text (docs/decisions.md §19): every one-line field refuses control characters (C0 with
// tab, CR and LF; DEL; C1), U+2028/U+2029 and the bidirectional overrides and isolates with a 422
// naming the field; item descriptions, a reminder's custom_message, mark-paid notes and payment
// instructions may hold line breaks (\n or \r\n, each counted once), at most 10 or 50.
import t from 'tap';
import type { z } from 'zod';
import { AppError } from '../src/errors.js';
import { fieldErrors } from '../src/http/validation.js';
import { createClientBody, updateClientBody } from '../src/clients/schemas.js';
import { createCheckoutBody } from '../src/checkout/schemas.js';
import { createEndpointBody, updateEndpointBody } from '../src/webhooks/schemas.js';
import { cancelBody, createInvoiceBody, markPaidBody, remindBody } from '../src/invoices/schemas.js';
import { cancelCreditNoteBody, createCreditNoteBody, createDebitNoteBody } from '../src/invoices/note-schemas.js';
import { paymentInstructionsInput, setPaymentInstructions, setTaxProfile, taxProfileInput } from '../src/merchants/service.js';
import { testApp, type TestApp } from './helpers/app.js';
import { assertValidationError } from './helpers/assertions.js';
import { checkoutBody } from './helpers/checkout.js';

/** Each refused character in the middle of a value, with what the message must name. */
const BAD: [label: string, value: (base: string) => string, names: RegExp][] = [
  ['U+202E (right-to-left override)', (b) => `${b}\u202Eab`, /U\+202E \(a bidirectional override\)/],
  ['CR LF ("Juan\\r\\nBcc: v@x.cl")', () => 'Juan\r\nBcc: v@x.cl', /U\+000D/],
  ['a lone LF', (b) => `${b}\nBcc`, /U\+000A/],
  ['a tab', (b) => `${b}\tx`, /U\+0009 \(a tab\)/],
  ['U+2028 (line separator)', (b) => `${b}\u2028x`, /U\+2028/],
  ['U+2029 (paragraph separator)', (b) => `${b}\u2029x`, /U\+2029/],
  ['a C1 control (U+0085)', (b) => `${b}\u0085x`, /U\+0085/],
  ['DEL (U+007F)', (b) => `${b}\u007Fx`, /U\+007F/],
  ['a C0 control (U+001B, escape)', (b) => `${b}\u001B[2J`, /U\+001B/],
  ['U+2066 (an isolate)', (b) => `${b}\u2066x`, /U\+2066 \(a bidirectional isolate\)/],
  ['U+202A (an embedding)', (b) => `${b}\u202Ax`, /U\+202A/],
  ['a leading tab (not trimmed away)', (b) => `\t${b}`, /U\+0009/],
  ['a trailing CR LF (not trimmed away)', (b) => `${b}\r\n`, /U\+000D/],
];

/** Refused even in a multi-line field: everything above but the line breaks themselves. */
const BAD_MULTI = BAD.filter(([label]) => !/CR LF|lone LF/.test(label));

type Kind = { one: true } | { multi: number };
interface Field {
  /** The field as the 422 names it. */
  path: string;
  schema: z.ZodType;
  /** A valid input to put the value in. */
  base: () => any;
  set: (body: any, v: string) => void;
  kind: Kind;
  /** Valid text for the field (accents, ñ, emoji where the field allows them). */
  good: string[];
  /** The short valid text the bad characters are put in. */
  stem?: string;
}

const CLIENT = {
  name: 'Comercial Ñuñoa SpA',
  email: 'pagos@nunoa.cl',
  rut: '76.086.428-5',
  phone: '+56 2 2345 6789',
  address: 'Av. Irarrázaval 1234, depto 5',
  giro: 'Asesorías en informática',
  comuna: 'Ñuñoa',
  ciudad: 'Santiago',
};
const SPANISH = ['José Muñoz Peña 🎉', 'Ñandú Ltda. — «año» ¿sí? ¡ok!', 'Ángela Güemes'];
const SHORT = ['Ñuñoa 🎉', 'Peñalolén', 'Güemes'];

const invoiceBody = () => ({
  client: { ...CLIENT },
  due_date: '2099-12-31',
  items: [{ description: 'Asesoría', unit_price: 1000 }],
  global_discount: { percent: 10, description: 'Descuento' },
  references: [{ type: '801', folio: 'OC-1001', reason: 'Orden de compra' }],
});

const clientField = (k: keyof typeof CLIENT, good: string[], stem?: string): Field[] => [
  { path: k, schema: createClientBody, base: () => ({ ...CLIENT }), set: (b, v) => (b[k] = v), kind: { one: true }, good, stem },
  { path: k, schema: updateClientBody, base: () => ({}), set: (b, v) => (b[k] = v), kind: { one: true }, good, stem },
  { path: `client.${k}`, schema: createInvoiceBody, base: invoiceBody, set: (b, v) => (b.client[k] = v), kind: { one: true }, good, stem },
];

const PROFILE = { rut: '76.086.428-5', razon_social: 'Comercial Los Andes SpA', giro: 'Servicios de consultoría', direccion: 'Av. Providencia 1234', comuna: 'Ñuñoa', ciudad: 'Santiago' };
const profileField = (k: keyof typeof PROFILE | 'acteco', good: string[], stem?: string): Field => ({
  path: k,
  schema: taxProfileInput,
  base: () => ({ ...PROFILE }),
  set: (b, v) => (b[k] = v),
  kind: { one: true },
  good,
  stem,
});

const FIELDS: Field[] = [
  ...clientField('name', SPANISH),
  ...clientField('email', ['pagos@andes.cl'], 'a@b.cl'),
  ...clientField('rut', ['76.086.428-5', '76086428-5'], '76086428-5'),
  ...clientField('phone', ['+56 2 2345 6789', '(+56) 9 8765-4321 anexo 12']),
  ...clientField('address', ['Av. Irarrázaval 1234, depto 5 🏢', 'Pasaje Ñuble 45']),
  ...clientField('giro', SPANISH),
  ...clientField('comuna', SHORT),
  ...clientField('ciudad', SHORT),
  { path: 'external_reference', schema: createInvoiceBody, base: invoiceBody, set: (b, v) => (b.external_reference = v), kind: { one: true }, good: ['pedido-ñ-1001 🎉'] },
  { path: 'items[0].description', schema: createInvoiceBody, base: invoiceBody, set: (b, v) => (b.items[0].description = v), kind: { multi: 10 }, good: SPANISH },
  { path: 'global_discount.description', schema: createInvoiceBody, base: invoiceBody, set: (b, v) => (b.global_discount.description = v), kind: { one: true }, good: SPANISH },
  { path: 'references[0].folio', schema: createInvoiceBody, base: invoiceBody, set: (b, v) => (b.references[0].folio = v), kind: { one: true }, good: ['OC-1001'], stem: 'OC' },
  { path: 'references[0].type', schema: createInvoiceBody, base: invoiceBody, set: (b, v) => (b.references[0].type = v), kind: { one: true }, good: ['801', 'HES'], stem: '80' },
  { path: 'references[0].reason', schema: createInvoiceBody, base: invoiceBody, set: (b, v) => (b.references[0].reason = v), kind: { one: true }, good: SPANISH },
  { path: 'custom_message', schema: remindBody, base: () => ({}), set: (b, v) => (b.custom_message = v), kind: { multi: 50 }, good: SPANISH },
  { path: 'payment_method', schema: markPaidBody, base: () => ({}), set: (b, v) => (b.payment_method = v), kind: { one: true }, good: ['transferencia 🏦', 'Depósito en Banco Estado'] },
  { path: 'notes', schema: markPaidBody, base: () => ({}), set: (b, v) => (b.notes = v), kind: { multi: 50 }, good: SPANISH },
  { path: 'reason', schema: cancelBody, base: () => ({}), set: (b, v) => (b.reason = v), kind: { one: true }, good: SPANISH },
  { path: 'description', schema: createCreditNoteBody, base: () => ({ reason: 'cancel' }), set: (b, v) => (b.description = v), kind: { one: true }, good: SPANISH },
  { path: 'corrected_text', schema: createCreditNoteBody, base: () => ({ reason: 'correct_text', corrected_text: 'Giro: Servicios' }), set: (b, v) => (b.corrected_text = v), kind: { one: true }, good: SPANISH },
  { path: 'references[0].reason', schema: createCreditNoteBody, base: () => ({ reason: 'cancel', references: [{ type: '801', folio: '1' }] }), set: (b, v) => (b.references[0].reason = v), kind: { one: true }, good: SPANISH },
  { path: 'description', schema: cancelCreditNoteBody, base: () => ({ reason: 'cancel' }), set: (b, v) => (b.description = v), kind: { one: true }, good: SPANISH },
  { path: 'description', schema: createDebitNoteBody, base: () => ({ reason: 'charge', description: 'Intereses', items: [{ description: 'Interés', unit_price: 100 }] }), set: (b, v) => (b.description = v), kind: { one: true }, good: SPANISH },
  { path: 'items[0].description', schema: createDebitNoteBody, base: () => ({ reason: 'charge', description: 'Intereses', items: [{ description: 'Interés', unit_price: 100 }] }), set: (b, v) => (b.items[0].description = v), kind: { multi: 10 }, good: SPANISH },
  { path: 'customer_name', schema: createCheckoutBody, base: () => checkoutBody(), set: (b, v) => (b.customer_name = v), kind: { one: true }, good: SPANISH },
  { path: 'customer_email', schema: createCheckoutBody, base: () => checkoutBody(), set: (b, v) => (b.customer_email = v), kind: { one: true }, good: ['compras@tienda.cl'], stem: 'a@b.cl' },
  { path: 'description', schema: createCheckoutBody, base: () => checkoutBody(), set: (b, v) => (b.description = v), kind: { one: true }, good: SPANISH },
  { path: 'external_reference', schema: createCheckoutBody, base: () => checkoutBody(), set: (b, v) => (b.external_reference = v), kind: { one: true }, good: ['pedido-ñ-1001 🎉'] },
  { path: 'description', schema: createEndpointBody, base: () => ({ url: 'https://example.com/hook' }), set: (b, v) => (b.description = v), kind: { one: true }, good: SPANISH },
  { path: 'description', schema: updateEndpointBody, base: () => ({}), set: (b, v) => (b.description = v), kind: { one: true }, good: SPANISH },
  profileField('rut', ['76.086.428-5'], '76086428-5'),
  profileField('razon_social', SPANISH),
  profileField('giro', SPANISH),
  profileField('direccion', SPANISH),
  profileField('comuna', SHORT),
  profileField('ciudad', SHORT),
  profileField('acteco', ['620200'], '62020'),
];

function errorsOf(schema: z.ZodType, input: unknown) {
  const r = schema.safeParse(input);
  return r.success ? [] : fieldErrors(r.error);
}

const lines = (n: number, sep: string) => Array.from({ length: n + 1 }, (_, i) => `línea ${i + 1} ñ`).join(sep);

t.test('every text field refuses the characters that are not text, naming exactly that field', async (t) => {
  for (const f of FIELDS) {
    const what = `${f.schema.meta()?.id ?? ''} ${f.path}`;
    const base = f.base();
    t.same(errorsOf(f.schema, base), [], `${what}: the base input is valid`);
    for (const good of f.good) {
      const body = f.base();
      f.set(body, good);
      t.same(errorsOf(f.schema, body), [], `${what}: ${JSON.stringify(good)} is accepted`);
    }
    const bad = 'multi' in f.kind ? BAD_MULTI : BAD;
    for (const [label, make, names] of bad) {
      const body = f.base();
      f.set(body, make(f.stem ?? 'Juan'));
      const errs = errorsOf(f.schema, body);
      t.same(errs.map((e) => e.path), [f.path], `${what}: ${label} is refused, naming ${f.path}`);
      // The e-mail's own format check may speak first; every other field names the character.
      if (!/email/.test(f.path)) t.match(errs[0]?.message, names, `${what}: ${label}: the message names the character`);
    }
    if ('multi' in f.kind) {
      const max = f.kind.multi;
      for (const sep of ['\n', '\r\n']) {
        const body = f.base();
        f.set(body, lines(max, sep));
        t.same(errorsOf(f.schema, body), [], `${what}: ${max} line breaks (${JSON.stringify(sep)}) are accepted`);
        const over = f.base();
        f.set(over, lines(max + 1, sep));
        t.same(errorsOf(f.schema, over), [{ path: f.path, message: `at most ${max} line breaks` }], `${what}: ${max + 1} line breaks are refused`);
      }
      const lone = f.base();
      f.set(lone, 'uno\rdos');
      t.same(errorsOf(f.schema, lone).map((e) => e.path), [f.path], `${what}: a lone CR is refused`);
    }
  }
});

t.test('payment instructions: up to 50 line breaks, nothing else of those characters', async (t) => {
  t.same(paymentInstructionsInput.parse('Transferir a:\r\nBanco Estado\nCuenta 123 — Ñuñoa 🎉'), 'Transferir a:\r\nBanco Estado\nCuenta 123 — Ñuñoa 🎉');
  t.ok(paymentInstructionsInput.safeParse(lines(50, '\n')).success, '50 line breaks');
  t.ok(paymentInstructionsInput.safeParse(lines(50, '\r\n')).success, '50 CR LF line breaks, each counted once');
  t.same(paymentInstructionsInput.safeParse(lines(51, '\n')).error?.issues[0]?.message, 'at most 50 line breaks');
  for (const [label, make] of BAD_MULTI) t.notOk(paymentInstructionsInput.safeParse(make('Pagar')).success, label);
});

t.test('the CLI services name the legal profile field and payment_instructions', async (t) => {
  const h = await testApp(t);
  const m = await h.merchant();
  const thrown = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (e) {
      return e as AppError;
    }
    return null;
  };
  for (const k of ['razon_social', 'giro', 'direccion', 'comuna', 'ciudad'] as const) {
    const e = await thrown(setTaxProfile(h.sql, m.id, { ...PROFILE, [k]: 'Los Andes\u202E SpA' }));
    t.ok(e instanceof AppError && e.status === 422, `${k}: 422`);
    t.same((e?.details?.errors as { path: string }[] | undefined)?.map((x) => x.path), [k], `${k}: named`);
  }
  const pi = await thrown(setPaymentInstructions(h.sql, m.id, 'Pagar\u2028aquí'));
  t.same((pi?.details?.errors as { path: string }[] | undefined)?.map((x) => x.path), ['payment_instructions']);
  const ok = await setPaymentInstructions(h.sql, m.id, 'Transferir a:\nBanco Estado — Ñuñoa');
  t.equal(ok.payment_instructions, 'Transferir a:\nBanco Estado — Ñuñoa');
});

async function apiKey(h: TestApp) {
  const m = await h.merchant({ payment_provider: 'sandbox' });
  return (await h.key(['*'], { merchantId: m.id })).key;
}

t.test('the routes answer 422 naming the field', async (t) => {
  const h = await testApp(t);
  const key = await apiKey(h);
  const post = (path: string, body: unknown) => h.api('POST', path, { key, body });

  for (const k of Object.keys(CLIENT) as (keyof typeof CLIENT)[]) {
    for (const [label, make] of BAD) {
      assertValidationError(t, await post('/clients', { ...CLIENT, [k]: make(k === 'rut' ? '76086428-5' : 'Juan') }), [k], { what: `POST /clients ${k}: ${label}` });
    }
  }
  const created = await post('/clients', { ...CLIENT, name: 'José Muñoz Peña 🎉', address: 'Av. Irarrázaval 1234 🏢' });
  t.equal(created.status, 201, 'accents, ñ and emoji are accepted');
  t.equal(created.body.name, 'José Muñoz Peña 🎉');
  assertValidationError(t, await h.api('PATCH', `/clients/${created.body.id}`, { key, body: { phone: '+56 2\r\nBcc: v@x.cl' } }), ['phone']);

  // POST /checkout: the customer's own name and e-mail.
  const bcc = await post('/checkout', checkoutBody({ customer_name: 'Juan\r\nBcc: v@x.cl' }));
  assertValidationError(t, bcc, ['customer_name'], { what: 'POST /checkout customer_name with CR LF' });
  t.match(bcc.body.details.errors[0].message, /U\+000D/);
  for (const k of ['customer_name', 'customer_email', 'description', 'external_reference']) {
    for (const [label, make] of BAD) {
      assertValidationError(t, await post('/checkout', checkoutBody({ [k]: make(k === 'customer_email' ? 'a@b.cl' : 'Juan') })), [k], { what: `POST /checkout ${k}: ${label}` });
    }
  }
  const co = await post('/checkout', checkoutBody({ customer_name: 'Ángela Güemes 🎉', description: 'Pedido ñ 1001', external_reference: 'pedido-ñ' }));
  t.equal(co.status, 201, 'POST /checkout with Spanish text');

  // POST /invoices: the client, the lines, the discount, the references, external_reference.
  const inv = invoiceBody();
  const invoicePaths: [string, (b: any, v: string) => void][] = [
    ['client.name', (b, v) => (b.client.name = v)],
    ['client.phone', (b, v) => (b.client.phone = v)],
    ['external_reference', (b, v) => (b.external_reference = v)],
    ['items[0].description', (b, v) => (b.items[0].description = v)],
    ['global_discount.description', (b, v) => (b.global_discount.description = v)],
    ['references[0].folio', (b, v) => (b.references[0].folio = v)],
    ['references[0].reason', (b, v) => (b.references[0].reason = v)],
  ];
  for (const [path, set] of invoicePaths) {
    for (const [label, make] of path === 'items[0].description' ? BAD_MULTI : BAD) {
      const body = structuredClone(inv);
      set(body, make(path.includes('folio') ? 'OC' : 'Juan'));
      assertValidationError(t, await post('/invoices', body), [path], { what: `POST /invoices ${path}: ${label}` });
    }
  }
  const ten = structuredClone(inv);
  ten.items[0]!.description = lines(10, '\r\n');
  ten.client.email = 'otro@nunoa.cl';
  const invoice = await post('/invoices', ten);
  t.equal(invoice.status, 201, 'an item description with 10 line breaks');
  const eleven = structuredClone(inv);
  eleven.items[0]!.description = lines(11, '\n');
  const refused = await post('/invoices', eleven);
  assertValidationError(t, refused, ['items[0].description']);
  t.equal(refused.body.details.errors[0].message, 'at most 10 line breaks');

  // The transitions and the notes of that invoice.
  const id = invoice.body.invoice_id;
  const remind = await post(`/invoices/${id}/remind`, { custom_message: lines(51, '\n') });
  assertValidationError(t, remind, ['custom_message']);
  t.equal(remind.body.details.errors[0].message, 'at most 50 line breaks');
  assertValidationError(t, await post(`/invoices/${id}/remind`, { custom_message: 'Hola\u202Emundo' }), ['custom_message']);
  assertValidationError(t, await post(`/invoices/${id}/mark-paid`, { payment_method: 'transfer\r\nBcc: v@x.cl' }), ['payment_method']);
  assertValidationError(t, await post(`/invoices/${id}/mark-paid`, { notes: 'pagado\u0085' }), ['notes']);
  assertValidationError(t, await post(`/invoices/${id}/cancel`, { reason: 'error\ten el monto' }), ['reason']);
  assertValidationError(t, await post(`/invoices/${id}/credit-notes`, { reason: 'correct_text', corrected_text: 'Giro:\r\nOtro' }), ['corrected_text']);
  assertValidationError(t, await post(`/invoices/${id}/credit-notes`, { reason: 'cancel', description: 'Anula\u2066' }), ['description']);
  assertValidationError(t, await post(`/invoices/${id}/debit-notes`, { reason: 'charge', description: 'Intereses\u007F', items: [{ description: 'Interés', unit_price: 100 }] }), ['description']);

  // Webhook endpoint descriptions.
  for (const [label, make] of BAD) {
    assertValidationError(t, await post('/webhooks/endpoints', { url: 'https://example.com/hook', description: make('Producción') }), ['description'], { what: `POST /webhooks/endpoints description: ${label}` });
  }
});

t.test('OpenAPI generation still works', async (t) => {
  const h = await testApp(t);
  const res = await h.api('GET', '/docs/openapi.json');
  t.equal(res.status, 200);
  t.equal(res.body.components?.schemas?.CreateCheckoutRequest?.properties?.customer_name?.type, 'string', 'the checkout body is described');
});
