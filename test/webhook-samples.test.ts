// What integrators' tools see of events (docs/decisions.md §10): a test event (`POST .../test`) has the
// shape of a real event of its type, and both match the body and headers the OpenAPI document's
// `webhooks` declares for that type. Every type of GET /webhooks/events is emitted for real by
// driving the API (and the jobs that emit), received by a real HTTPS endpoint, then sent as a test.
import t from 'tap';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { testApp, type TestApp } from './helpers/app.js';
import { facturaBody, invoiceBody } from './helpers/fixtures.js';
import { checkoutBody, submitCheckoutForm } from './helpers/checkout.js';
import { startHttpsReceiver, type ReceivedRequest } from './helpers/https-receiver.js';
import { until } from './helpers/until.js';
import { dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { startSiiStandin, type SiiStandin } from './helpers/sii-standin.js';
import { sweepOverdue } from '../jobs/overdue-sweep.js';
import { expireOnSchedule } from '../src/checkout/expire.js';
import { invoiceUrls } from '../src/http/urls.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Schema = Record<string, any>;

interface Received {
  body: Record<string, any>;
  headers: ReceivedRequest['headers'];
}

async function ok(h: TestApp, method: 'GET' | 'POST' | 'PATCH', path: string, key: string, body?: unknown) {
  const res = await h.api(method, path, { key, body });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.raw}`);
  return res.body;
}


/** Something of every event type, through the API, the hosted pages and the jobs that emit. */
async function emitEveryType(h: TestApp, key: string): Promise<void> {
  const worker = await h.startWorker();
  const client = await ok(h, 'POST', '/clients', key, { name: 'Andes SpA', email: 'andes@example.cl', rut: '76.086.428-5' });
  await ok(h, 'PATCH', `/clients/${client.id}`, key, { phone: '+56 2 2345 6789' });

  const invoice = await ok(h, 'POST', '/invoices', key, invoiceBody({ client: { name: 'Andes SpA', email: 'andes@example.cl' } }));
  await ok(h, 'POST', `/invoices/${invoice.invoice_id}/send`, key);
  const view = await h.app.inject({ url: new URL(invoice.public_url).pathname });
  if (view.statusCode !== 200) throw new Error(`hosted page: ${view.statusCode}`);
  await ok(h, 'POST', `/invoices/${invoice.invoice_id}/remind`, key, {});
  await ok(h, 'POST', `/invoices/${invoice.invoice_id}/mark-paid`, key, {});

  const cancelled = await ok(h, 'POST', '/invoices', key, invoiceBody({ send_immediately: true }));
  await ok(h, 'POST', `/invoices/${cancelled.invoice_id}/cancel`, key, { reason: 'duplicate' });

  await ok(h, 'POST', '/invoices', key, invoiceBody({ issue_date: '2020-01-01', due_date: '2020-01-02', send_immediately: true }));
  await sweepOverdue(worker.deps);

  const paid = await ok(h, 'POST', '/checkout', key, checkoutBody());
  await submitCheckoutForm(h, paid.checkout_url, 'decline');
  await submitCheckoutForm(h, paid.checkout_url, 'pay');

  // The expiry job's own code, at a `now` past the deadline (the job is due in 24 hours).
  const expiring = await ok(h, 'POST', '/checkout', key, checkoutBody());
  const pastDeadline = new Date(Date.parse(expiring.expires_at) + 1000);
  await expireOnSchedule(h.sql, expiring.checkout_id, pastDeadline, { urls: invoiceUrls(h.ctx.config), boss: h.ctx.boss });
}

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

/**
 * The SII's answers (docs/decisions.md §15): the merchant set up for DTEs, one accepted, then one
 * rejected; and a debit note (docs/decisions.md §17) with its type-56 DTE.
 */
async function emitDteEvents(h: TestApp, key: string, merchantId: string, standin: SiiStandin): Promise<void> {
  await dteMerchant(h, merchantId, sii, [
    { type: 33, from: 1, to: 10 },
    { type: 56, from: 1, to: 10 },
  ]);
  const accepted = await ok(h, 'POST', '/invoices', key, facturaBody({ send_immediately: true }));
  await until('the DTE accepted', async () => (await ok(h, 'GET', `/invoices/${accepted.invoice_id}`, key)).dte_status === 'accepted', 60_000);
  await ok(h, 'POST', `/invoices/${accepted.invoice_id}/debit-notes`, key, {
    reason: 'charge',
    description: 'Intereses por mora',
    items: [{ description: 'Intereses noviembre', quantity: 1, unit_price: 1000 }],
  });
  standin.outcome = { kind: 'envelope_rejected', code: 'RCT', glosa: 'Rechazado por Error en Caratula' };
  await ok(h, 'POST', '/invoices', key, facturaBody({ send_immediately: true }));
}

function isObject(v: unknown): v is { [k: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The schema with every object schema closed to undeclared fields (additionalProperties false
 * unless it says otherwise) and the document's component references pointing into `$defs`.
 */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (!isObject(schema)) return schema;
  const out: Schema = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === '$ref' && typeof v === 'string') out[k] = v.replace('#/components/schemas/', '#/$defs/');
    else if (k === 'properties' || k === '$defs') out[k] = Object.fromEntries(Object.entries(v as Schema).map(([name, s]) => [name, closed(s)]));
    else if (['items', 'additionalProperties', 'anyOf', 'oneOf', 'allOf', 'not', 'prefixItems'].includes(k)) out[k] = closed(v);
    else out[k] = v;
  }
  const isObjectSchema = out.type === 'object' || (Array.isArray(out.type) && out.type.includes('object')) || 'properties' in out;
  if (isObjectSchema && !('additionalProperties' in out) && !('unevaluatedProperties' in out)) out.additionalProperties = false;
  return out;
}

function jsonType(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

/**
 * Where a real and a test payload differ in shape: keys at every level and JSON types. A null on
 * one side only is no difference: both payloads are also validated against the schema, which
 * then allows null there.
 */
function shapeDiffs(real: Json, test: Json, path = ''): string[] {
  if (real === null || test === null) return [];
  if (jsonType(real) !== jsonType(test)) return [`${path || '(root)'}: ${jsonType(real)} in the real event, ${jsonType(test)} in the test event`];
  if (Array.isArray(real) && Array.isArray(test)) {
    if (real.length === 0 || test.length === 0) return real.length === test.length ? [] : [`${path}: ${real.length} items in the real event, ${test.length} in the test event`];
    return [...real.flatMap((x, i) => shapeDiffs(x, test[0]!, `${path}[${i}]`)), ...test.flatMap((y, i) => shapeDiffs(real[0]!, y, `${path}[${i}]`))];
  }
  if (isObject(real) && isObject(test)) {
    const diffs: string[] = [];
    for (const k of new Set([...Object.keys(real), ...Object.keys(test)])) {
      const at = path ? `${path}.${k}` : k;
      if (!(k in real)) diffs.push(`${at}: only in the test event`);
      else if (!(k in test)) diffs.push(`${at}: only in the real event`);
      else diffs.push(...shapeDiffs(real[k]!, test[k]!, at));
    }
    return diffs;
  }
  return [];
}

function ajvErrors(validate: ValidateFunction): string[] {
  return (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message}${e.params && 'additionalProperty' in e.params ? `: ${e.params.additionalProperty}` : ''}`);
}

t.test('test events have the shape of real ones; both match the documented webhooks', async (t) => {
  const standin = await startSiiStandin(t);
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, SII_BASE_URL: standin.url });
  const receiver = await startHttpsReceiver(t);
  const merchant = await h.merchant({ payment_provider: 'sandbox' });
  const { key } = await h.key(['*'], { merchantId: merchant.id });
  const types: string[] = (await ok(h, 'GET', '/webhooks/events', key)).data.map((e: { type: string }) => e.type);
  const endpoint = await ok(h, 'POST', '/webhooks/endpoints', key, { url: receiver.url('/events') });

  await emitEveryType(h, key);
  await emitDteEvents(h, key, merchant.id, standin);
  const parsed = (): Received[] => receiver.received.map((r) => ({ body: JSON.parse(r.body), headers: r.headers }));
  const real = await until(
    'a delivered real event of every type',
    () => {
      const got = parsed().filter((r) => r.body.is_test === false);
      return types.every((type) => got.some((r) => r.body.type === type)) && got;
    },
    60_000,
  );
  const test: Received[] = [];
  for (const type of types) {
    const delivery = await ok(h, 'POST', `/webhooks/endpoints/${endpoint.id}/test`, key, { event: type });
    if (delivery.status !== 'success') throw new Error(`test ${type}: ${JSON.stringify(delivery)}`);
    test.push(parsed().find((r) => r.body.id === delivery.event_id)!);
  }

  const doc = (await h.api('GET', '/docs/openapi.json')).body;
  t.same(Object.keys(doc.webhooks ?? {}).sort(), [...types].sort(), 'webhooks declares exactly the types of GET /webhooks/events');

  const ajv = new Ajv2020({ allErrors: true, allowUnionTypes: true });
  // A CommonJS module: imported whole, its plugin is `default`.
  ajvFormats.default(ajv);
  ajv.addKeyword('example');
  const defs = Object.fromEntries(Object.entries(doc.components.schemas as Schema).map(([name, s]) => [name, closed(s)]));

  for (const type of types) {
    t.test(type, async (t) => {
      const op = doc.webhooks[type]?.post;
      t.ok(op, 'documented as a post');
      if (!op) return;
      t.ok(Object.keys(op.responses).some((s) => /^2/.test(s)), 'documents the answer that acknowledges');
      t.ok(op.responses['410'], 'documents 410');
      const body = ajv.compile({ ...(closed(op.requestBody.content['application/json'].schema) as Schema), $defs: defs });
      const headers = (op.parameters as { name: string; in: string; required: boolean; schema: Schema }[])
        .filter((p) => p.in === 'header')
        .map((p) => ({ ...p, validate: ajv.compile(p.schema) }));
      t.ok(['X-Webhook-Signature', 'X-Webhook-Id', 'X-Webhook-Event'].every((n) => headers.some((p) => p.name === n && p.required)), 'documents the signature, id and event headers');

      /** How a delivery strays from the entry: its body (undeclared fields refused) and headers. */
      const problems = (got: Received): string[] => {
        const out = body(got.body) ? [] : ajvErrors(body).map((e) => `body ${e}`);
        for (const p of headers) {
          const value = got.headers[p.name.toLowerCase()];
          if (value === undefined) {
            if (p.required) out.push(`header ${p.name} missing`);
          } else if (!p.validate(value)) out.push(...ajvErrors(p.validate).map((e) => `header ${p.name} ${e}`));
        }
        if (got.headers['x-webhook-id'] !== got.body.id) out.push('X-Webhook-Id is not the event id');
        if (got.headers['x-webhook-event'] !== type) out.push('X-Webhook-Event is not the type');
        return out;
      };

      const sample = test.find((r) => r.body.type === type)!;
      t.equal(sample.body.is_test, true, 'the test event says so');
      t.same(problems(sample), [], 'the test event matches the entry');
      real
        .filter((r) => r.body.type === type)
        .forEach((r, i) => {
          t.same(problems(r), [], `real event #${i + 1} matches the entry`);
          t.same(shapeDiffs(r.body, sample.body), [], `real event #${i + 1} and the test event have the same shape`);
        });
    });
  }
});
