// A test event links somewhere and numbers nothing real (docs/decisions.md §10): every URL in the sample of
// every event type answers 200 with a page that says it is a sample, and a merchant whose first real
// invoice is INV-000001 gets a test event with another number.
import t from 'tap';
import { testApp, type TestApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';

async function ok(h: TestApp, method: 'GET' | 'POST', path: string, key: string, body?: unknown) {
  const res = await h.api(method, path, { key, body });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.raw}`);
  return res.body;
}

/** Every string in the payload that is an absolute URL, with where it was found. */
function urlsIn(v: unknown, path = ''): { path: string; url: string }[] {
  if (typeof v === 'string') return /^https?:\/\//.test(v) ? [{ path, url: v }] : [];
  if (Array.isArray(v)) return v.flatMap((x, i) => urlsIn(x, `${path}[${i}]`));
  if (v && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => urlsIn(x, path ? `${path}.${k}` : k));
  return [];
}

t.test('every link of every test event answers, and no sample number is a real one', async (t) => {
  const h = await testApp(t);
  const receiver = await startHttpsReceiver(t);
  const merchant = await h.merchant({ payment_provider: 'sandbox' });
  const { key } = await h.key(['*'], { merchantId: merchant.id });

  // The merchant's first real invoice, numbered INV-000001, and a credit note CN-000001 on it.
  const real = await ok(h, 'POST', '/invoices', key, invoiceBody({ send_immediately: true }));
  const realInvoice = await ok(h, 'GET', `/invoices/${real.invoice_id}`, key);
  t.equal(realInvoice.invoice_number, 'INV-000001', 'the real invoice is INV-000001');
  const realNote = await ok(h, 'POST', `/invoices/${real.invoice_id}/credit-notes`, key, { reason: 'correct_text', corrected_text: 'Consultoría de marzo' });
  t.equal(realNote.number, 'CN-000001', 'the real credit note is CN-000001');

  const endpoint = await ok(h, 'POST', '/webhooks/endpoints', key, { url: receiver.url('/events') });
  const types: string[] = (await ok(h, 'GET', '/webhooks/events', key)).data.map((e: { type: string }) => e.type);
  const base = new URL(h.ctx.config.publicBaseUrl);

  for (const type of types) {
    t.test(type, async (t) => {
      const delivery = await ok(h, 'POST', `/webhooks/endpoints/${endpoint.id}/test`, key, { event: type });
      t.equal(delivery.status, 'success', `delivered: ${JSON.stringify(delivery)}`);
      const got = receiver.received.map((r) => JSON.parse(r.body)).find((b) => b.id === delivery.event_id);
      t.ok(got, 'the receiver got it');
      if (!got) return;
      t.equal(got.is_test, true, 'a test event');
      const object = got.data.object;

      if (type.startsWith('invoice.') && object.invoice_number !== null) {
        t.not(object.invoice_number, realInvoice.invoice_number, `invoice_number ${object.invoice_number} is not the real invoice's`);
        t.match(object.invoice_number, /-000000$/, 'a number no counter gives (n starts at 1)');
      }
      if (type === 'payment.succeeded' || type === 'payment.failed') t.not(object.invoice_number, realInvoice.invoice_number, 'the payment names no real invoice');
      if (type === 'credit_note.created' || type === 'debit_note.created') {
        t.not(object.number, realNote.number, `number ${object.number} is not the real note's`);
        t.match(object.number, /^(CN|DN)-000000$/, 'a number no counter gives');
      }
      if (typeof object.dte_folio === 'number') t.equal(object.dte_folio, 0, 'a folio no CAF grants');

      const links = urlsIn(got.data);
      if (type.startsWith('invoice.')) t.ok(links.some((l) => l.path === 'object.public_url'), 'public_url is among the links');
      for (const { path, url } of links) {
        const u = new URL(url);
        t.equal(u.origin, base.origin, `${path} is ours`);
        // Without a key, as a browser or a link checker follows it; and with the merchant's key.
        const res = await h.app.inject({ method: 'GET', url: u.pathname + u.search, headers: { 'accept-language': 'en' } });
        t.equal(res.statusCode, 200, `${path} (${u.pathname}) answers 200`);
        t.match(res.body, /test event/i, `${path} says it is a test event`);
        t.notMatch(res.body, realInvoice.invoice_number, `${path} shows nothing of the merchant`);
        const head = await h.app.inject({ method: 'HEAD', url: u.pathname + u.search, headers: { 'x-api-key': key } });
        t.equal(head.statusCode, 200, `${path} answers HEAD 200`);
      }
    });
  }

  // The real invoice's page is still the real one, and a token that is no sample's is still 404.
  t.equal((await h.app.inject({ url: new URL(real.public_url).pathname })).statusCode, 200, 'the real hosted page');
  t.equal((await h.app.inject({ url: '/i/samplesamplesample1' })).statusCode, 404, 'an unknown token');
  t.equal((await h.app.inject({ method: 'POST', url: '/i/sample/pay' })).statusCode, 404, 'the sample has no Pay');
});
