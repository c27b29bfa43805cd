// The integrators' view, end to end: the real app on a socket driven only through the official
// client (@invoicing/client), every operation of the served document at least once, every answer
// (status, declared headers, body) checked against that document with undeclared fields counted
// as errors, and every webhook, real and test, received by an HTTPS endpoint, verified with the
// client's verifier and checked against the document's `webhooks` entry of its type.
import t from 'tap';
import type { AddressInfo } from 'node:net';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { constructWebhookEvent, createInvoicingClient, WebhookVerificationError, type InvoicingClient } from '@invoicing/client';
import { testApp } from './helpers/app.js';
import { startHttpsReceiver, type ReceivedRequest } from './helpers/https-receiver.js';
import { submitCheckoutForm } from './helpers/checkout.js';
import { until } from './helpers/until.js';
import { dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { startSiiStandin } from './helpers/sii-standin.js';
import { sweepOverdue } from '../jobs/overdue-sweep.js';
import { expireOnSchedule } from '../src/checkout/expire.js';
import { invoiceUrls } from '../src/http/urls.js';
import type { EventType } from '../src/events/emit.js';

type Json = Record<string, any>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const mapValues = (o: Json, fn: (v: unknown) => unknown): Json => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, fn(v)]));

/** A JSON pointer segment (RFC 6901). */
const segment = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

// ---------------------------------------------------------------------------------------------
// The document with every object closed

const COMPONENT = '#/components/schemas/';
// Copies of components left open at their top level, for the places that must not close them.
const OPEN = '#/x-open-schemas/';

/**
 * A copy of the document in which every object schema that says nothing about other properties
 * refuses them (`unevaluatedProperties: false`), so a field the API sends and the document does
 * not declare is an error. unevaluatedProperties sees what `$ref`, allOf, anyOf and oneOf
 * evaluated beside it, but a member closed on its own would refuse what its siblings declare: when
 * a schema draws properties from more than one place (allOf members always do), its members stay
 * open and the schema closes them all instead. A lone anyOf or oneOf (`T | null`) has complete
 * alternatives, each closed.
 */
function closeDocument(doc: Json): Json {
  const components: Json = doc.components?.schemas ?? {};
  const open: Json = {};

  const openRef = (ref: string): string => {
    const name = ref.slice(COMPONENT.length);
    if (!(name in open)) {
      open[name] = {}; // a cycle meets the placeholder, and the reference resolves all the same
      open[name] = closeSchema(components[name], true);
    }
    return OPEN + segment(name);
  };

  function closeSchema(s: unknown, keepOpen: boolean): unknown {
    if (!isObject(s)) return s;
    const out: Json = { ...s };
    for (const k of ['properties', 'patternProperties', '$defs', 'dependentSchemas']) {
      if (isObject(s[k])) out[k] = mapValues(s[k], (v) => closeSchema(v, false));
    }
    for (const k of ['items', 'additionalProperties', 'unevaluatedProperties', 'not', 'contains', 'propertyNames', 'unevaluatedItems']) {
      if (isObject(s[k])) out[k] = closeSchema(s[k], false);
    }
    if (Array.isArray(s.prefixItems)) out.prefixItems = s.prefixItems.map((v: unknown) => closeSchema(v, false));

    const sources =
      (s.properties || s.patternProperties ? 1 : 0) +
      (Array.isArray(s.allOf) ? s.allOf.length : 0) +
      (s.anyOf ? 1 : 0) +
      (s.oneOf ? 1 : 0) +
      (s.$ref ? 1 : 0) +
      (s.if ? 1 : 0);
    const membersOpen = sources > 1 || Array.isArray(s.allOf);
    if (Array.isArray(s.allOf)) out.allOf = s.allOf.map((v: unknown) => closeSchema(v, true));
    for (const k of ['anyOf', 'oneOf']) if (Array.isArray(s[k])) out[k] = s[k].map((v: unknown) => closeSchema(v, membersOpen));
    for (const k of ['if', 'then', 'else']) if (isObject(s[k])) out[k] = closeSchema(s[k], true);
    if (typeof s.$ref === 'string' && s.$ref.startsWith(COMPONENT) && (keepOpen || membersOpen)) out.$ref = openRef(s.$ref);

    const saysOtherwise = 'additionalProperties' in s || 'unevaluatedProperties' in s;
    const describesObject = s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object')) || s.properties || s.patternProperties;
    if (!keepOpen && !saysOtherwise && (describesObject || membersOpen)) out.unevaluatedProperties = false;
    return out;
  }

  // Schemas sit under `schema` (media types, parameters, headers) and in components.schemas.
  function walk(node: unknown, inComponents: boolean): unknown {
    if (Array.isArray(node)) return node.map((v) => walk(v, false));
    if (!isObject(node)) return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node)) {
      if (k === 'schema' && isObject(v)) out[k] = closeSchema(v, false);
      else if (inComponents && k === 'schemas' && isObject(v)) out[k] = mapValues(v, (s) => closeSchema(s, false));
      else out[k] = walk(v, k === 'components');
    }
    return out;
  }
  const closed = walk(doc, false) as Json;
  closed['x-open-schemas'] = open;
  return closed;
}

// ---------------------------------------------------------------------------------------------
// Checking answers and events against the document

const DOC_ID = 'https://invoicing.test/openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

interface Answer {
  method: string;
  schemaPath: string;
  status: number;
  headers: Headers;
  body: Buffer;
}

class DocumentCheck {
  /** Every way an answer or event differs from the document, worded for the report. */
  readonly problems: string[] = [];
  readonly exercised = new Set<string>();
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(readonly doc: Json) {
    ajvFormats.default(this.ajv);
    this.ajv.addSchema(closeDocument(doc), DOC_ID);
  }

  /** Follows `$ref` inside the document: the node and its pointer. */
  private resolve(node: Json, pointer: string): [Json, string] {
    for (let depth = 0; typeof node?.$ref === 'string' && node.$ref.startsWith('#/') && depth < 16; depth++) {
      pointer = node.$ref.slice(1);
      node = pointer
        .split('/')
        .slice(1)
        .reduce((n: any, s) => n?.[s.replace(/~1/g, '/').replace(/~0/g, '~')], this.doc);
    }
    return [node, pointer];
  }

  private validate(pointer: string, value: unknown, where: string): void {
    let validate = this.validators.get(pointer);
    if (!validate) {
      validate = this.ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
      this.validators.set(pointer, validate);
    }
    if (validate(value)) return;
    for (const e of validate.errors ?? []) {
      const extra =
        e.keyword === 'unevaluatedProperties' || e.keyword === 'additionalProperties'
          ? `: ${String(e.params.unevaluatedProperty ?? e.params.additionalProperty)}`
          : e.keyword === 'enum'
            ? `: ${JSON.stringify(e.params.allowedValues)}`
            : '';
      this.problems.push(`${where}: ${e.instancePath || '(root)'} ${e.message}${extra} (document ${e.schemaPath.replace(/^.*#/, '')})`);
    }
  }

  /** Header values are strings; a numeric schema judges the number written. */
  private header(spec: Json, pointer: string, value: string | undefined, name: string, where: string): void {
    const [declared, at] = this.resolve(spec, pointer);
    if (value === undefined) {
      if (declared.required) this.problems.push(`${where}: required header ${name} is missing`);
      return;
    }
    const [schema] = this.resolve(declared.schema ?? {}, `${at}/schema`);
    const typed = schema.type === 'integer' || schema.type === 'number' ? Number(value) : value;
    if (declared.schema) this.validate(`${at}/schema`, typed, `${where} header ${name}`);
  }

  answer({ method, schemaPath, status, headers, body }: Answer): void {
    const verb = method.toLowerCase();
    const op = this.doc.paths?.[schemaPath]?.[verb];
    if (!op) {
      this.problems.push(`${method} ${schemaPath} is not in the document`);
      return;
    }
    this.exercised.add(op.operationId);
    const where = `${op.operationId} ${status}`;
    const key = [String(status), `${String(status)[0]}XX`, 'default'].find((k) => k in (op.responses ?? {}));
    if (!key) {
      this.problems.push(`${where}: status not declared (declared: ${Object.keys(op.responses ?? {}).join(', ')})`);
      return;
    }
    const [declared, at] = this.resolve(op.responses[key], `/paths/${segment(schemaPath)}/${verb}/responses/${key}`);
    for (const [name, spec] of Object.entries<Json>(declared.headers ?? {})) {
      this.header(spec, `${at}/headers/${segment(name)}`, headers.get(name) ?? undefined, name, where);
    }
    if (!declared.content) {
      if (body.length > 0) this.problems.push(`${where}: a body the document does not declare`);
      return;
    }
    const type = (headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    const mediaKey = [type, `${type.split('/')[0]}/*`, '*/*'].find((k) => k in declared.content);
    if (!mediaKey) {
      this.problems.push(`${where}: Content-Type ${type || '(none)'} not declared (declared: ${Object.keys(declared.content).join(', ')})`);
      return;
    }
    const media = declared.content[mediaKey];
    if (!media.schema) return;
    if (media.schema.format === 'binary' || media.schema.contentMediaType) {
      if (body.length === 0) this.problems.push(`${where}: an empty ${type} body`);
      return;
    }
    const json = type === 'application/json' || type.endsWith('+json');
    let value: unknown;
    try {
      value = json ? JSON.parse(body.toString('utf8')) : body.toString('utf8');
    } catch {
      this.problems.push(`${where}: the ${type} body is not JSON`);
      return;
    }
    this.validate(`${at}/content/${segment(mediaKey)}/schema`, value, where);
  }

  /** A delivery (its body already verified and parsed) against `webhooks[type].post`. */
  event(event: Json, headers: ReceivedRequest['headers']): void {
    const type = String(event.type);
    const where = `webhook ${type}${event.is_test ? ' (test)' : ''}`;
    if (!isObject(this.doc.webhooks?.[type])) {
      this.problems.push(`the document has no webhooks entry for ${type}`);
      return;
    }
    const [item, itemAt] = this.resolve(this.doc.webhooks[type], `/webhooks/${segment(type)}`);
    const [op, opAt] = this.resolve(item.post ?? {}, `${itemAt}/post`);
    if (!item.post) {
      this.problems.push(`webhooks.${type} has no post operation`);
      return;
    }
    const params: [Json, string][] = [
      ...(item.parameters ?? []).map((p: Json, i: number) => this.resolve(p, `${itemAt}/parameters/${i}`)),
      ...(op.parameters ?? []).map((p: Json, i: number) => this.resolve(p, `${opAt}/parameters/${i}`)),
    ];
    for (const [p, at] of params) {
      if (p.in !== 'header') continue;
      const value = headers[String(p.name).toLowerCase()];
      this.header(p, at, Array.isArray(value) ? value.join(', ') : value, p.name, where);
    }
    const [body, bodyAt] = this.resolve(op.requestBody ?? {}, `${opAt}/requestBody`);
    if (!body.content?.['application/json']?.schema) {
      this.problems.push(`webhooks.${type} declares no application/json body`);
      return;
    }
    this.validate(`${bodyAt}/content/application~1json/schema`, event, where);
  }

  /** operationId of every operation in the document. */
  operations(): string[] {
    return Object.values<Json>(this.doc.paths ?? {}).flatMap((item) => METHODS.filter((m) => isObject(item[m])).map((m) => item[m].operationId as string));
  }
}

/** Keeps every answer the client gets, to be checked once the document is in hand. */
function recordAnswers(client: InvoicingClient, answers: Answer[]): InvoicingClient {
  client.use({
    async onResponse({ request, response, schemaPath }) {
      const body = Buffer.from(await response.clone().arrayBuffer());
      answers.push({ method: request.method, schemaPath, status: response.status, headers: response.headers, body });
    },
  });
  return client;
}

// ---------------------------------------------------------------------------------------------
// Helpers of the walk

interface Result {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/** The answer's data, when its status is the one expected. */
async function expect<R extends Result>(call: Promise<R>, status: number): Promise<NonNullable<R['data']>> {
  const res = await call;
  if (res.response.status !== status) {
    throw new Error(`${res.response.url}: expected ${status}, got ${res.response.status} ${JSON.stringify(res.error ?? res.data)}`);
  }
  return res.data as NonNullable<R['data']>;
}

/** The error envelope of an answer expected to fail with this status and code. */
async function refused<R extends Result>(call: Promise<R>, status: number, code: string): Promise<Json> {
  const res = await call;
  const error = res.error as Json | undefined;
  if (res.response.status !== status || error?.code !== code) {
    throw new Error(`${res.response.url}: expected ${status} ${code}, got ${res.response.status} ${JSON.stringify(error ?? res.data)}`);
  }
  return error;
}


const P = '/api/v1/external';
const UNKNOWN_ID = '0190f0b0-0000-7000-8000-000000000000';
const invoice = (n: number, extra: Json = {}) => ({
  client: { name: `Cliente ${n}`, email: `cliente${n}@example.cl` },
  due_date: '2099-12-31',
  items: [{ description: 'Consultoría', quantity: 2, unit_price: 5000 }],
  ...extra,
});
/** A company client, as a factura needs its receiver (docs/decisions.md §17). */
const company = (n: number) => ({
  name: `Empresa ${n} SpA`,
  email: `empresa${n}@example.cl`,
  rut: '77.123.456-9',
  giro: 'Comercio al por mayor',
  address: 'Av. Vicuña Mackenna 4860',
  comuna: 'Macul',
  ciudad: 'Santiago',
});
const checkout = (n: number) => ({
  amount: 11900,
  description: `Pedido ${n}`,
  customer_email: `comprador${n}@example.cl`,
  customer_name: `Comprador ${n}`,
  success_url: 'https://shop.example/paid',
  cancel_url: 'https://shop.example/cart',
});

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

// ---------------------------------------------------------------------------------------------

t.test('the whole API through the generated client, checked against the served document', async (t) => {
  // The SII's web services (docs/decisions.md §15), answering the app and the worker.
  const standin = await startSiiStandin(t);
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, SII_BASE_URL: standin.url });
  const worker = await h.startWorker();
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const baseUrl = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  const receiver = await startHttpsReceiver(t);
  const { merchantId, key } = await h.key(['*'], { merchantId: (await h.merchant({ payment_provider: 'sandbox' })).id });

  const answers: Answer[] = [];
  const connect = (apiKey: string) => recordAnswers(createInvoicingClient({ baseUrl, apiKey }), answers);
  const api = connect(key);

  // The reference: no key needed, and the document every later answer is checked against.
  const doc = (await expect(api.GET(`${P}/docs/openapi.json`), 200)) as Json;
  await expect(api.GET(`${P}/docs`, { parseAs: 'text' }), 200);
  await expect(api.GET(`${P}/docs/llms.txt`, { parseAs: 'text' }), 200);
  const check = new DocumentCheck(doc);

  const me = await expect(api.GET(`${P}/me`), 200);
  t.equal(me.merchant.id, merchantId);
  t.equal(me.can_charge, true, 'a sandbox merchant can charge');
  await refused(connect('ik_live_00000000000000000000000000000000').GET(`${P}/me`), 401, 'invalid_api_key');
  await refused(connect('').GET(`${P}/me`), 401, 'missing_api_key');

  // Webhooks first, so that the endpoint that receives every event exists before any happens.
  const eventTypes = (await expect(api.GET(`${P}/webhooks/events`), 200)).data.map((e) => e.type as EventType);
  t.ok(eventTypes.includes('invoice.paid'));

  // A sandbox endpoint through its whole life; its deliveries are checked as they arrive, since
  // the secret that signs them changes.
  const sandbox = await expect(
    api.POST(`${P}/webhooks/endpoints`, { body: { url: receiver.url('/sandbox'), description: 'Staging ERP', events: ['invoice.paid'], is_sandbox: true } }),
    201,
  );
  const endpointPath = { params: { path: { endpoint_id: sandbox.id } } };
  t.ok((await expect(api.GET(`${P}/webhooks/endpoints`), 200)).data.some((e: { id: string }) => e.id === sandbox.id));
  t.equal((await expect(api.GET(`${P}/webhooks/endpoints/{endpoint_id}`, endpointPath), 200)).is_sandbox, true);
  t.same((await expect(api.PATCH(`${P}/webhooks/endpoints/{endpoint_id}`, { ...endpointPath, body: { description: 'Staging', events: [] } }), 200)).events, []);
  const sandboxEvents: { event: Json; headers: ReceivedRequest['headers'] }[] = [];
  const receiveSandbox = async (secret: string) => {
    const got = receiver.received.at(-1)!;
    t.equal(got.path, '/sandbox');
    sandboxEvents.push({ event: constructWebhookEvent(got.body, got.headers['x-webhook-signature'], secret) as Json, headers: got.headers });
    return got;
  };
  const firstTest = await expect(api.POST(`${P}/webhooks/endpoints/{endpoint_id}/test`, { ...endpointPath, body: { event: 'client.created' } }), 200);
  t.match(firstTest, { event_type: 'client.created', is_test: true, max_attempts: 1, status: 'success' });
  await receiveSandbox(sandbox.secret);
  const rotated = await expect(api.POST(`${P}/webhooks/endpoints/{endpoint_id}/rotate-secret`, endpointPath), 200);
  t.not(rotated.secret, sandbox.secret);
  await expect(api.POST(`${P}/webhooks/endpoints/{endpoint_id}/test`, { ...endpointPath, body: {} }), 200);
  const signed = await receiveSandbox(rotated.secret);
  t.throws(() => constructWebhookEvent(signed.body, signed.headers['x-webhook-signature'], sandbox.secret), WebhookVerificationError, 'the old secret no longer verifies');
  const signature = String(signed.headers['x-webhook-signature']);
  t.match(await expect(api.POST(`${P}/webhooks/verify-signature`, { body: { signature, secret: rotated.secret, payload: signed.body } }), 200), { valid: true });
  t.match(await expect(api.POST(`${P}/webhooks/verify-signature`, { body: { signature, secret: sandbox.secret, payload: signed.body } }), 200), { valid: false, expected_signature: String });
  await expect(api.DELETE(`${P}/webhooks/endpoints/{endpoint_id}`, endpointPath), 204);
  await refused(api.GET(`${P}/webhooks/endpoints/{endpoint_id}`, endpointPath), 404, 'webhook_endpoint_not_found');
  await refused(api.GET(`${P}/webhooks/endpoints/{endpoint_id}`, { params: { path: { endpoint_id: 'not-a-uuid' } } }), 422, 'validation_error');
  await refused(api.POST(`${P}/webhooks/endpoints`, { body: { url: 'http://localhost/hook' } }), 400, 'webhook_endpoint_invalid');

  // The endpoint of every event (no `events`: all of them).
  const endpoint = await expect(api.POST(`${P}/webhooks/endpoints`, { body: { url: receiver.url('/erp') } }), 201);
  t.same(endpoint.events, []);

  // Clients
  const client = await expect(api.POST(`${P}/clients`, { body: { name: 'Comercial Los Andes', email: 'pagos@losandes.cl', rut: '76.086.428-5' } }), 201);
  t.equal(client.rut, '76086428-5');
  const clientPath = { params: { path: { client_id: client.id } } };
  await refused(api.POST(`${P}/clients`, { body: { name: 'Otra', email: 'PAGOS@losandes.cl' } }), 409, 'client_already_exists');
  t.ok((await expect(api.GET(`${P}/clients`, { params: { query: { limit: 10, offset: 0 } } }), 200)).data.some((c: { id: string }) => c.id === client.id));
  t.equal((await expect(api.GET(`${P}/clients/{client_id}`, clientPath), 200)).email, 'pagos@losandes.cl');
  t.equal((await expect(api.PATCH(`${P}/clients/{client_id}`, { ...clientPath, body: { phone: '+56 2 2345 6789' } }), 200)).phone, '+56 2 2345 6789');
  await refused(api.GET(`${P}/clients/{client_id}`, { params: { path: { client_id: UNKNOWN_ID } } }), 404, 'client_not_found');

  // Invoices: a draft for that client (reused by e-mail), replayed by its Idempotency-Key
  const draftBody = invoice(0, { client: { name: 'Comercial Los Andes', email: 'pagos@losandes.cl' }, external_reference: 'ERP-1001' });
  const idempotent = { headers: { 'Idempotency-Key': 'order-1001' } };
  const draft = await expect(api.POST(`${P}/invoices`, { ...idempotent, body: draftBody }), 201);
  t.match(draft, { status: 'draft', client_id: client.id, total: '11900.00' });
  const replay = await api.POST(`${P}/invoices`, { ...idempotent, body: draftBody });
  t.equal(replay.response.headers.get('idempotent-replayed'), 'true');
  t.same(replay.data, draft);
  await refused(api.POST(`${P}/invoices`, { ...idempotent, body: { ...draftBody, due_date: '2099-12-30' } }), 422, 'validation_error');
  const invalid = await refused(api.POST(`${P}/invoices`, { body: { ...draftBody, items: [{ description: 'x', unit_price: -1 }] } }), 422, 'validation_error');
  t.match(invalid.details.errors, [{ path: 'items[0].unit_price' }]);
  await refused(api.POST(`${P}/invoices`, { body: invoice(1, { currency: 'XYZ' }) }), 400, 'currency_not_supported');

  const draftPath = { params: { path: { invoice_id: draft.invoice_id } } };
  const sent = await expect(api.POST(`${P}/invoices/{invoice_id}/send`, { params: { ...draftPath.params, query: { locale: 'en' } } }), 200);
  t.match(sent, { status: 'sent', invoice_number: 'INV-000001' });
  await refused(api.POST(`${P}/invoices/{invoice_id}/send`, draftPath), 409, 'invoice_invalid_state');
  const full = await expect(api.GET(`${P}/invoices/{invoice_id}`, draftPath), 200);
  t.match(full, { id: draft.invoice_id, status: 'sent', items: [{ quantity: '2', unit_price: '5000.00' }] });
  t.equal((await expect(api.GET(`${P}/invoices/{invoice_id}/status`, draftPath), 200)).status, 'sent');
  const pdf = await expect(api.GET(`${P}/invoices/{invoice_id}/pdf`, { ...draftPath, parseAs: 'arrayBuffer' }), 200);
  t.equal(Buffer.from(pdf).subarray(0, 5).toString('latin1'), '%PDF-');
  // This merchant issues no tax documents (docs/decisions.md §15): the invoice has none to give.
  await refused(api.GET(`${P}/invoices/{invoice_id}/dte.xml`, draftPath), 404, 'dte_not_found');
  await refused(api.GET(`${P}/invoices/{invoice_id}`, { params: { path: { invoice_id: UNKNOWN_ID } } }), 404, 'invoice_not_found');
  await refused(api.GET(`${P}/invoices/{invoice_id}`, { params: { path: { invoice_id: 'not-a-uuid' } } }), 400, 'validation_error');

  // The client's hosted page (not an API call): the first view makes it viewed.
  t.equal((await h.app.inject({ url: new URL(full.public_url!).pathname })).statusCode, 200);
  const reminder = await expect(api.POST(`${P}/invoices/{invoice_id}/remind`, { ...draftPath, body: { custom_message: 'Recordatorio amable.' } }), 200);
  t.equal(reminder.reminder_number, 1);
  const paid = await expect(api.POST(`${P}/invoices/{invoice_id}/mark-paid`, { ...draftPath, body: { payment_method: 'transfer', payment_amount: 11900 } }), 200);
  t.equal(paid.status, 'paid');
  await refused(api.POST(`${P}/invoices/{invoice_id}/cancel`, { ...draftPath, body: {} }), 409, 'invoice_already_paid');
  await refused(api.POST(`${P}/invoices/{invoice_id}/remind`, { ...draftPath, body: {} }), 409, 'invoice_already_paid');

  // Sent at creation, then cancelled; a draft cancelled is deleted; one overdue by the sweep
  const immediate = await expect(api.POST(`${P}/invoices`, { body: invoice(2, { send_immediately: true, external_reference: 'ERP-1002' }) }), 201);
  t.equal(immediate.status, 'sent');
  const cancelled = await expect(api.POST(`${P}/invoices/{invoice_id}/cancel`, { params: { path: { invoice_id: immediate.invoice_id } }, body: { reason: 'duplicate' } }), 200);
  t.match(cancelled, { status: 'cancelled', reason: 'duplicate' });
  const spare = await expect(api.POST(`${P}/invoices`, { body: invoice(3) }), 201);
  await refused(api.POST(`${P}/invoices/{invoice_id}/remind`, { params: { path: { invoice_id: spare.invoice_id } }, body: {} }), 409, 'invoice_not_sent');
  t.equal((await expect(api.POST(`${P}/invoices/{invoice_id}/cancel`, { params: { path: { invoice_id: spare.invoice_id } }, body: {} }), 200)).status, 'deleted');
  const late = await expect(api.POST(`${P}/invoices`, { body: invoice(4, { issue_date: '2020-01-01', due_date: '2020-01-02', send_immediately: true }) }), 201);
  await sweepOverdue(worker.deps);
  t.equal((await expect(api.GET(`${P}/invoices/{invoice_id}`, { params: { path: { invoice_id: late.invoice_id } } }), 200)).status, 'overdue');

  const bulk = await expect(api.POST(`${P}/invoices/bulk`, { body: { invoices: [invoice(5), { ...invoice(6), due_date: 'tomorrow' }] } }), 200);
  t.match(bulk, { total: 2, succeeded: 1, failed: 1, results: [{ index: 0, success: true }, { index: 1, success: false, error: 'validation_error' }] });

  // Lists with their filters
  const list = (query: Json) => expect(api.GET(`${P}/invoices`, { params: { query } }), 200);
  t.same((await list({ status: 'paid' })).data.map((i: { id: string }) => i.id), [draft.invoice_id]);
  t.same((await list({ external_reference: 'ERP-1002' })).data.map((i: { id: string }) => i.id), [immediate.invoice_id]);
  t.same((await list({ client_id: client.id, limit: 1, offset: 0 })).data.length, 1);
  t.same(
    (await list({ updated_since: '2020-01-01T00:00:00.000Z', limit: 100 })).data.map((i: { id: string }) => i.id),
    [bulk.results[0]!.invoice!.invoice_id, late.invoice_id, immediate.invoice_id, draft.invoice_id],
    'newest first; the deleted draft is gone',
  );
  await refused(api.GET(`${P}/invoices`, { params: { query: { limit: 0 } } }), 422, 'validation_error');

  // Scopes: a key that may only read
  const reader = connect((await h.key(['invoices:read'], { merchantId })).key);
  const scope = await refused(reader.POST(`${P}/invoices`, { body: invoice(7) }), 403, 'insufficient_scope');
  t.equal(scope.details.required_scope, 'invoices:create');

  // Payments: the manual one of mark-paid
  const payments = await expect(api.GET(`${P}/payments`, { params: { query: { invoice_id: draft.invoice_id } } }), 200);
  t.match(payments.data, [{ invoice_id: draft.invoice_id, provider: 'manual', status: 'succeeded' }]);
  t.equal((await expect(api.GET(`${P}/payments/{payment_id}`, { params: { path: { payment_id: payments.data[0]!.id } } }), 200)).amount, '11900.00');
  await refused(api.GET(`${P}/payments/{payment_id}`, { params: { path: { payment_id: UNKNOWN_ID } } }), 404, 'payment_not_found');

  // Checkout: one paid, one declined (then left), one expired
  const toPay = await expect(api.POST(`${P}/checkout`, { headers: { 'Idempotency-Key': 'cart-1' }, body: checkout(1) }), 201);
  await submitCheckoutForm(h, toPay.checkout_url, 'pay');
  t.match(await expect(api.GET(`${P}/checkout/{checkout_id}/status`, { params: { path: { checkout_id: toPay.checkout_id } } }), 200), {
    status: 'completed',
    payment_status: 'paid',
  });
  const toDecline = await expect(api.POST(`${P}/checkout`, { body: checkout(2) }), 201);
  await submitCheckoutForm(h, toDecline.checkout_url, 'decline');
  t.match(await expect(api.GET(`${P}/checkout/{checkout_id}/status`, { params: { path: { checkout_id: toDecline.checkout_id } } }), 200), {
    status: 'pending',
    payment_status: 'failed',
  });
  const toExpire = await expect(api.POST(`${P}/checkout`, { body: checkout(3) }), 201);
  // The expiry job's own code at a time past the deadline (the job itself is due in 24 hours).
  await expireOnSchedule(h.sql, toExpire.checkout_id, new Date(Date.parse(toExpire.expires_at) + 1000), { urls: invoiceUrls(h.ctx.config), boss: h.ctx.boss });
  t.equal((await expect(api.GET(`${P}/checkout/{checkout_id}/status`, { params: { path: { checkout_id: toExpire.checkout_id } } }), 200)).status, 'expired');
  await refused(api.GET(`${P}/checkout/{checkout_id}/status`, { params: { path: { checkout_id: UNKNOWN_ID } } }), 404, 'checkout_not_found');
  const noProvider = connect((await h.key(['*'])).key);
  await refused(noProvider.POST(`${P}/checkout`, { body: checkout(4) }), 400, 'provider_not_configured');

  // Tax documents (docs/decisions.md §15): the merchant is set up for them only now, so that the invoices
  // above have none. One is accepted by the SII, then the SII rejects the next.
  await dteMerchant(h, merchantId, sii, [
    { type: 33, from: 1, to: 10 },
    { type: 56, from: 1, to: 10 },
    { type: 61, from: 1, to: 10 },
  ]);
  const taxed = await expect(
    api.POST(`${P}/invoices`, {
      body: invoice(8, {
        client: company(8),
        items: [{ description: 'Cajas', quantity: 10, unit_price: 1500, discount_percent: 10 }],
        references: [{ type: '801', folio: '4500012345', date: '2026-11-20' }],
        send_immediately: true,
      }),
    }),
    201,
  );
  const taxedPath = { params: { path: { invoice_id: taxed.invoice_id } } };
  const dteStatus = async (path: typeof taxedPath) => (await expect(api.GET(`${P}/invoices/{invoice_id}`, path), 200)).dte_status;
  await until('the DTE accepted', async () => (await dteStatus(taxedPath)) === 'accepted', 60_000);
  const envio = await expect(api.GET(`${P}/invoices/{invoice_id}/dte.xml`, { ...taxedPath, parseAs: 'text' }), 200);
  t.match(envio, /<EnvioDTE[\s\S]*<TipoDTE>33<\/TipoDTE>[\s\S]*<Folio>1<\/Folio>/, 'the signed EnvioDTE of folio 1');

  // Its notes: goods returned, that credit note cancelled, a charge; each with its DTE and PDF.
  const line = (await expect(api.GET(`${P}/invoices/{invoice_id}`, taxedPath), 200)).items[0]!;
  const credit = await expect(api.POST(`${P}/invoices/{invoice_id}/credit-notes`, { ...taxedPath, body: { reason: 'return', items: [{ item_id: line.id, quantity: 2 }] } }), 201);
  t.match(credit, { number: /^CN-\d{6}$/, reason: 'return', total: '3213.00', dte_type: 61, dte_folio: 1 }, '2 × 1500 − 10 % = 2700, + 19 % = 3213 (the cancels above made CN numbers before it)');
  const creditPath = { params: { path: { credit_note_id: credit.id } } };
  t.same((await expect(api.GET(`${P}/invoices/{invoice_id}/credit-notes`, taxedPath), 200)).data, [credit]);
  t.same(await expect(api.GET(`${P}/credit-notes/{credit_note_id}`, creditPath), 200), credit);
  t.match(await expect(api.GET(`${P}/credit-notes/{credit_note_id}/dte.xml`, { ...creditPath, parseAs: 'text' }), 200), /<TipoDTE>61<\/TipoDTE>/);
  t.equal(Buffer.from(await expect(api.GET(`${P}/credit-notes/{credit_note_id}/pdf`, { ...creditPath, parseAs: 'arrayBuffer' }), 200)).subarray(0, 5).toString('latin1'), '%PDF-');
  const undo = await expect(api.POST(`${P}/credit-notes/{credit_note_id}/debit-notes`, { ...creditPath, body: { reason: 'cancel' } }), 201);
  t.match(undo, { number: 'DN-000001', reason: 'cancel', credit_note_id: credit.id, total: '3213.00', dte_type: 56 });
  const charge = await expect(
    api.POST(`${P}/invoices/{invoice_id}/debit-notes`, { ...taxedPath, body: { reason: 'charge', description: 'Intereses por mora', items: [{ description: 'Intereses noviembre', quantity: 1, unit_price: 1000 }] } }),
    201,
  );
  const debitPath = { params: { path: { debit_note_id: charge.id } } };
  t.same((await expect(api.GET(`${P}/invoices/{invoice_id}/debit-notes`, taxedPath), 200)).data, [undo, charge]);
  t.same(await expect(api.GET(`${P}/debit-notes/{debit_note_id}`, debitPath), 200), charge);
  t.match(await expect(api.GET(`${P}/debit-notes/{debit_note_id}/dte.xml`, { ...debitPath, parseAs: 'text' }), 200), /<TipoDTE>56<\/TipoDTE>/);
  t.equal(Buffer.from(await expect(api.GET(`${P}/debit-notes/{debit_note_id}/pdf`, { ...debitPath, parseAs: 'arrayBuffer' }), 200)).subarray(0, 5).toString('latin1'), '%PDF-');
  t.match(await expect(api.GET(`${P}/invoices/{invoice_id}`, taxedPath), 200), { amount_credited: '0.00', amount_debited: '1190.00', amount_due: '17255.00' }, '16065 − (3213 credited, then cancelled) + 1190');
  standin.outcome = { kind: 'envelope_rejected', code: 'RCT', glosa: 'Rechazado por Error en Caratula' };
  const refusedPath = { params: { path: { invoice_id: (await expect(api.POST(`${P}/invoices`, { body: invoice(9, { client: company(9), send_immediately: true }) }), 201)).invoice_id } } };
  await until('the DTE rejected', async () => (await dteStatus(refusedPath)) === 'rejected', 60_000);

  // Every event type happened for real; the endpoint of all events got each (in no set order).
  const fromErp = () => receiver.received.filter((r) => r.path === '/erp');
  const realTypes = () => new Set(fromErp().map((r) => JSON.parse(r.body) as Json).filter((e) => !e.is_test).map((e) => e.type as string));
  await until('a real delivery of every event type', () => eventTypes.every((type: string) => realTypes().has(type)), 60_000).catch(() => {
    t.fail(`no real delivery of ${eventTypes.filter((type: string) => !realTypes().has(type)).join(', ')}`);
  });
  // The events read back as the receiver got them; a recover of the last hour answers how many it sends again.
  const listed = await expect(api.GET(`${P}/events`, { params: { query: { limit: 5, type: 'invoice.paid,client.created' } } }), 200);
  t.ok(listed.data.length > 0 && listed.data.every((e) => e.type === 'invoice.paid' || e.type === 'client.created'), 'events of the asked types');
  const oneEvent = listed.data[0]!;
  t.same(await expect(api.GET(`${P}/events/{event_id}`, { params: { path: { event_id: oneEvent.id } } }), 200), oneEvent);
  const delivered = fromErp().find((r) => (JSON.parse(r.body) as Json).id === oneEvent.id);
  t.same(delivered && JSON.parse(delivered.body), oneEvent, 'an event is the body its delivery carried');
  const since = new Date(Date.now() - 3600_000).toISOString();
  t.match(await expect(api.POST(`${P}/webhooks/endpoints/{endpoint_id}/recover`, { params: { path: { endpoint_id: endpoint.id } }, body: { since } }), 202), { events: Number });
  await refused(api.GET(`${P}/events/{event_id}`, { params: { path: { event_id: '0191e4b2-7c1a-7000-8000-0000000000aa' } } }), 404, 'event_not_found');

  // Then a test event of every type, which must look like the real one.
  for (const type of eventTypes) {
    const delivery = await expect(api.POST(`${P}/webhooks/endpoints/{endpoint_id}/test`, { params: { path: { endpoint_id: endpoint.id } }, body: { event: type } }), 200);
    t.match(delivery, { event_type: type, is_test: true, status: 'success' }, `test ${type}`);
  }

  // Every delivery verifies with the endpoint's secret, and both kinds match the document.
  const received = [...sandboxEvents];
  for (const r of fromErp()) {
    try {
      received.push({ event: constructWebhookEvent(r.body, r.headers['x-webhook-signature'], endpoint.secret) as Json, headers: r.headers });
    } catch (err) {
      t.fail(`a delivery that does not verify: ${(err as Error).message}`);
    }
  }
  for (const { event, headers } of received) {
    t.equal(headers['x-webhook-id'], event.id);
    t.equal(headers['x-webhook-event'], event.type);
    check.event(event, headers);
  }
  const kinds = new Set(received.map(({ event }) => `${event.type}${event.is_test ? ' (test)' : ''}`));
  t.same(eventTypes.flatMap((type: string) => [type, `${type} (test)`]).filter((k: string) => !kinds.has(k)), [], 'a real and a test delivery of every type');
  const documented = Object.keys(doc.webhooks ?? {}).sort();
  t.same(documented, [...eventTypes].sort(), 'the document has a webhooks entry for each event type and no other');

  for (const answer of answers) check.answer(answer);
  t.same(
    check.operations().filter((id) => !check.exercised.has(id)),
    [],
    'every operation of the document was called',
  );
  t.same([...new Set(check.problems)], [], 'every answer and event is as the document declares it');
});
