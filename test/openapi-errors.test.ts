// Every error code that carries details answers exactly what the served document declares for it:
// each answer is checked with ajv against the schema of its operation and status, with any field
// the document does not declare counted as an error.
import t from 'tap';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { ProviderError } from '../src/checkout/providers/provider.js';
import { errorSchemaName } from '../src/docs/openapi.js';
import { errorCatalogue, type ErrorCode } from '../src/errors.js';
import { API_PREFIX } from '../src/http/urls.js';
import { testApp, type ApiResponse, type TestApp } from './helpers/app.js';
import { checkoutBody, gatedProvider, holdConfirmations } from './helpers/checkout.js';
import { invoiceBody } from './helpers/fixtures.js';

type Json = Record<string, any>;

/** A copy of a schema in which every object with declared properties admits no other. */
function closed(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closed);
  if (typeof node !== 'object' || node === null) return node;
  const out: Json = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, closed(v)]));
  if (typeof out.properties === 'object' && !('additionalProperties' in out) && !('unevaluatedProperties' in out)) out.additionalProperties = false;
  return out;
}

/** Validates answers against the schema of their (operation, status) in the document. */
function checker(doc: Json) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  ajvFormats.default(ajv);
  const components = closed(doc.components);
  const compiled = new Map<string, ValidateFunction>();
  return (method: string, template: string, res: ApiResponse): string[] => {
    const key = `${method} ${template} ${res.status}`;
    const schema = doc.paths[API_PREFIX + template]?.[method.toLowerCase()]?.responses?.[res.status]?.content?.['application/json']?.schema;
    if (!schema) return [`${key} is not in the document`];
    let validate = compiled.get(key);
    if (!validate) {
      // The document's components ride along, so that its `#/components/...` references resolve.
      validate = ajv.compile({ ...(closed(schema) as Json), components });
      compiled.set(key, validate);
    }
    return validate(res.body) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
  };
}

/** The hosted checkout page's Pay form, as a customer's browser submits it. */
async function payForm(h: TestApp, checkoutUrl: string) {
  const path = new URL(checkoutUrl).pathname;
  const page = await h.app.inject({ method: 'GET', url: path });
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.body)?.[1];
  if (!csrf) throw new Error('the page has no Pay form');
  return () =>
    h.app.inject({
      method: 'POST',
      url: `${path}/pay`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', origin: 'null' },
      payload: new URLSearchParams({ csrf_token: csrf }).toString(),
    });
}

t.test('error answers match the details the document declares for their code', async (t) => {
  const h = await testApp(t);
  const doc = (await h.api('GET', '/docs/openapi.json')).body as Json;
  const check = checker(doc);
  const seen = new Set<ErrorCode>();

  /** Asserts the answer has this code and status and matches the document; returns it. */
  const expectError = async (code: ErrorCode, status: number, method: string, template: string, answer: Promise<ApiResponse>) => {
    const res = await answer;
    const label = `${code} (${status}) from ${method} ${template}`;
    t.match({ status: res.status, code: res.body?.code }, { status, code }, `${label}: ${res.raw.slice(0, 300)}`);
    t.same(check(method, template, res), [], `${label} matches the document`);
    seen.add(code);
    return res;
  };

  const merchant = await h.merchant();
  const { key } = await h.key(['*'], { merchantId: merchant.id });
  const api = (method: string, path: string, body?: unknown, extra: { key?: string; raw?: string; headers?: Record<string, string> } = {}) =>
    h.api(method as 'GET', path, { key, ...(body === undefined ? {} : { body }), ...extra });

  // validation_error, at each status it is documented with.
  await expectError('validation_error', 422, 'POST', '/invoices', api('POST', '/invoices', { items: [] }));
  await expectError('validation_error', 400, 'POST', '/invoices', api('POST', '/invoices', undefined, { raw: '{"client":', headers: { 'content-type': 'application/json' } }));
  await expectError('validation_error', 415, 'POST', '/invoices', api('POST', '/invoices', undefined, { raw: 'x', headers: { 'content-type': 'text/plain' } }));
  await expectError('validation_error', 400, 'GET', '/invoices/{invoice_id}', api('GET', '/invoices/not-a-uuid'));
  await expectError('validation_error', 422, 'GET', '/webhooks/endpoints/{endpoint_id}', api('GET', '/webhooks/endpoints/not-a-uuid'));

  const reader = (await h.key(['clients:read'], { merchantId: merchant.id })).key;
  await expectError('insufficient_scope', 403, 'GET', '/invoices', api('GET', '/invoices', undefined, { key: reader }));
  await expectError('missing_api_key', 401, 'GET', '/invoices', h.api('GET', '/invoices'));

  const client = { name: 'Ferretería Sur', email: 'caja@sur.cl' };
  t.equal((await api('POST', '/clients', client)).status, 201);
  const taken = await expectError('client_already_exists', 409, 'POST', '/clients', api('POST', '/clients', { ...client, email: 'CAJA@sur.cl' }));
  t.equal(taken.body.details.email, 'CAJA@sur.cl');

  const unsupported = await expectError('currency_not_supported', 400, 'POST', '/invoices', api('POST', '/invoices', invoiceBody({ currency: 'XYZ' })));
  t.same(unsupported.body.details, { currency: 'XYZ' });
  // No rate stored and no rate provider: the conversion fails.
  const noRate = await expectError('currency_conversion_failed', 503, 'POST', '/invoices', api('POST', '/invoices', invoiceBody({ currency: 'USD', issue_date: '2026-11-02' })));
  t.same(noRate.body.details, { currency: 'USD', base_currency: 'CLP', date: '2026-11-02' });
  await expectError('invoice_not_found', 404, 'GET', '/invoices/{invoice_id}', api('GET', '/invoices/0192f3a4-5b6c-7d8e-9f01-23456789abcd'));

  // The 409s of the lifecycle name the invoice's status.
  const draft = (await api('POST', '/invoices', invoiceBody())).body.invoice_id as string;
  const notSent = await expectError('invoice_not_sent', 409, 'POST', '/invoices/{invoice_id}/remind', api('POST', `/invoices/${draft}/remind`));
  t.same(notSent.body.details, { status: 'draft' });
  await expectError('invoice_not_sent', 409, 'POST', '/invoices/{invoice_id}/mark-paid', api('POST', `/invoices/${draft}/mark-paid`, {}));
  const sent = (await api('POST', '/invoices', invoiceBody({ send_immediately: true }))).body.invoice_id as string;
  const resend = await expectError('invoice_invalid_state', 409, 'POST', '/invoices/{invoice_id}/send', api('POST', `/invoices/${sent}/send`));
  t.same(resend.body.details, { status: 'sent' });
  t.equal((await api('POST', `/invoices/${sent}/mark-paid`)).status, 200, 'mark-paid with no body');
  const paid = await expectError('invoice_already_paid', 409, 'POST', '/invoices/{invoice_id}/cancel', api('POST', `/invoices/${sent}/cancel`));
  t.same(paid.body.details, { status: 'paid' });
  await expectError('invoice_already_paid', 409, 'POST', '/invoices/{invoice_id}/mark-paid', api('POST', `/invoices/${sent}/mark-paid`));

  const invalidUrl = await expectError('webhook_endpoint_invalid', 400, 'POST', '/webhooks/endpoints', api('POST', '/webhooks/endpoints', { url: 'http://hooks.example.com/in' }));
  t.equal(invalidUrl.body.details.errors[0].path, 'url');

  // Checkout: no provider, an unknown one, then a gateway failing each way it can.
  await expectError('provider_not_configured', 400, 'POST', '/checkout', api('POST', '/checkout', checkoutBody()));
  await h.sql`UPDATE merchants SET payment_provider = 'retired-gateway' WHERE id = ${merchant.id}`;
  const unknown = await expectError('invalid_provider', 400, 'POST', '/checkout', api('POST', '/checkout', checkoutBody()));
  t.same(unknown.body.details, { provider: 'retired-gateway' });
  const gateway = gatedProvider('errors-gateway');
  await h.sql`UPDATE merchants SET payment_provider = 'errors-gateway' WHERE id = ${merchant.id}`;
  for (const [code, status] of [
    ['provider_credentials_missing', 400],
    ['merchant_misconfigured', 400],
    ['invalid_provider', 400],
    ['provider_unavailable', 503],
  ] as const) {
    gateway.failure = new ProviderError(code, code);
    const res = await expectError(code, status, 'POST', '/checkout', api('POST', '/checkout', checkoutBody()));
    t.same(res.body.details, { provider: 'errors-gateway' }, `${code} names the provider`);
  }
  gateway.failure = null;

  // While the customer's payment is at the gateway, cancel is refused with payment_in_progress.
  const session = (await api('POST', '/checkout', checkoutBody())).body as { checkout_url: string; invoice_id: string };
  const pay = await payForm(h, session.checkout_url);
  const { entered, open } = holdConfirmations(gateway);
  const paying = pay();
  await entered;
  const busy = await expectError('invoice_invalid_state', 409, 'POST', '/invoices/{invoice_id}/cancel', api('POST', `/invoices/${session.invoice_id}/cancel`));
  t.same(busy.body.details, { status: 'sent', payment_in_progress: true });
  open();
  await paying;

  // Every code the document gives details to was answered above.
  const withDetails = (Object.keys(errorCatalogue) as ErrorCode[]).filter((code) => {
    const schema = doc.components.schemas[errorSchemaName(code)];
    return schema && schema.properties.details.type !== 'null';
  });
  t.ok(withDetails.length >= 10, `${withDetails.length} codes with details in the document`);
  t.same(
    withDetails.filter((code) => !seen.has(code)),
    [],
    'each was triggered and checked',
  );
});
