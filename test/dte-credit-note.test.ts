// Cancelling a sent invoice that has a DTE issues a credit note (type 61, CodRef 1 "anula
// documento") referencing it, with its own folio, signature, submission and status (decisions
// §15), against the SII stand-in; without a DTE, cancel works as before. A POST /checkout
// invoice cancelled by its session's expiry gets its credit note the same way, and an expiry
// that cannot issue it changes nothing and fails, to be retried, without holding up the others.
import t from 'tap';
import { DOMParser } from '@xmldom/xmldom';
import { testApp, type TestApp } from './helpers/app.js';
import { cafFile, DTE_PROFILE, dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { facturaBody } from './helpers/fixtures.js';
import { checkoutBody, checkoutFormOf } from './helpers/checkout.js';
import { startSiiStandin } from './helpers/sii-standin.js';
import { until } from './helpers/until.js';
import { expireCheckouts } from '../jobs/checkout-expire.js';
import type { WorkerDeps } from '../jobs/worker.js';
import { clock } from '../src/clock.js';
import { addCaf } from '../src/dte/service.js';
import { createMailer } from '../src/email/transport.js';

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

t.test('the credit note is issued on cancel, uploaded and accepted, and the invoice shows it', async (t) => {
  const standin = await startSiiStandin(t);
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, SII_BASE_URL: standin.url });
  await h.startWorker();
  const { key, merchantId } = await h.key(['*']);
  await dteMerchant(h, merchantId, sii, [
    { type: 33, from: 10, to: 20 },
    { type: 61, from: 5, to: 9 },
  ]);
  const created = await h.api('POST', '/invoices', { key, body: facturaBody({ send_immediately: true }) });
  const id = created.body.invoice_id as string;
  await until('the DTE accepted', async () => (await h.api('GET', `/invoices/${id}`, { key })).body.dte_status === 'accepted', 60_000);

  const cancelled = await h.api('POST', `/invoices/${id}/cancel`, { key, body: { reason: 'Pedido duplicado' } });
  t.equal(cancelled.status, 200);
  t.same(cancelled.body.credit_note, { type: 61, folio: 5, status: 'pending' }, 'the cancel response carries the credit note');
  const invoice = await until(
    'the credit note accepted',
    async () => {
      const res = await h.api('GET', `/invoices/${id}`, { key });
      return res.body.credit_note?.status === 'accepted' ? res.body : null;
    },
    60_000,
  );
  t.equal(invoice.status, 'cancelled');
  t.equal(invoice.dte_status, 'accepted', "the invoice's own DTE keeps its status");
  const nc = standin.uploads.find((u) => u.documents.some((d) => d.type === 61));
  t.ok(nc, 'the credit note was uploaded');
  t.ok(nc!.signaturesValid, 'its signatures verify at the stand-in');
  t.same(nc!.documents, [{ type: 61, folio: 5 }]);
  t.equal(standin.uploads.length, 2, 'the invoice and the credit note, each once');

  const [doc] = await h.sql<{ signed_dte: string }[]>`SELECT signed_dte FROM dte_documents WHERE dte_type = 61 AND invoice_id = ${id}`;
  const xml = new DOMParser().parseFromString(doc!.signed_dte, 'text/xml');
  const text = (name: string) => xml.getElementsByTagName(name)[0]?.textContent;
  t.equal(text('TipoDTE'), '61');
  t.equal(text('TpoDocRef'), '33', 'it references the invoice type');
  t.equal(text('FolioRef'), '10', "and the invoice's folio");
  t.equal(text('CodRef'), '1', 'CodRef 1: anula documento');
  t.equal(text('RazonRef'), 'Anula documento');
  t.equal(text('MntTotal'), created.body.total.replace(/\.\d+$/, ''), 'the same total');
  const [events] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE type = 'invoice.cancelled'`;
  t.equal(events!.n, 1);
});

t.test('no type-61 folio left refuses the cancel and changes nothing; no DTE cancels as before', async (t) => {
  const standin = await startSiiStandin(t);
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, SII_BASE_URL: standin.url });
  const { key, merchantId } = await h.key(['*']);
  await dteMerchant(h, merchantId, sii, [{ type: 33, from: 1, to: 5 }]);
  const created = await h.api('POST', '/invoices', { key, body: facturaBody({ send_immediately: true }) });
  const id = created.body.invoice_id as string;
  const refused = await h.api('POST', `/invoices/${id}/cancel`, { key, body: {} });
  t.equal(refused.status, 400);
  t.equal(refused.body.code, 'merchant_misconfigured');
  t.equal(refused.body.details.dte_type, 61);
  const after = await h.api('GET', `/invoices/${id}`, { key });
  t.equal(after.body.status, 'sent', 'nothing cancelled');
  t.equal(after.body.credit_note, null);

  const plain = await h.key(['*']);
  const other = await h.api('POST', '/invoices', { key: plain.key, body: facturaBody({ send_immediately: true }) });
  const cancelled = await h.api('POST', `/invoices/${other.body.invoice_id}/cancel`, { key: plain.key, body: {} });
  t.equal(cancelled.status, 200);
  t.equal(cancelled.body.status, 'cancelled');
  t.equal(cancelled.body.credit_note, null, 'a merchant without DTEs: no credit note');
});

function jobDeps(t: { teardown(fn: () => unknown): void }, h: TestApp): WorkerDeps {
  const mailer = createMailer(h.ctx.config);
  t.teardown(() => mailer.close());
  return { config: h.ctx.config, sql: h.sql, boss: h.ctx.boss, mailer, secrets: h.ctx.secrets };
}

/** A merchant that can charge (the sandbox gateway), and a key for it. */
async function seller(h: TestApp) {
  const m = await h.merchant({ payment_provider: 'sandbox' });
  const { key } = await h.key(['*'], { merchantId: m.id });
  return { merchantId: m.id, key };
}

/**
 * A checkout paid by a company the merchant knows already: its invoice takes that client as it
 * is, RUT, giro and comuna included, so it gets a factura (a consumer's gets none, docs/decisions.md §17).
 */
async function checkout(h: TestApp, key: string) {
  const body = checkoutBody();
  const client = await h.api('POST', '/clients', { key, body: { ...facturaBody().client, name: body.customer_name, email: body.customer_email } });
  if (client.status !== 201) throw new Error(`client create: ${client.status} ${client.raw}`);
  const res = await h.api('POST', '/checkout', { key, body });
  if (res.status !== 201) throw new Error(`checkout create: ${res.status} ${res.raw}`);
  return res.body as { checkout_id: string; checkout_url: string; invoice_id: string; expires_at: string };
}

const cancelReason = async (h: TestApp, id: string) =>
  (await h.sql<{ cancel_reason: string | null }[]>`SELECT cancel_reason FROM invoices WHERE id = ${id}`)[0]!.cancel_reason;

const sessionStatus = async (h: TestApp, id: string) =>
  (await h.sql<{ status: string }[]>`SELECT status FROM checkout_sessions WHERE id = ${id}`)[0]!.status;

const eventsOf = (h: TestApp, merchantId: string, type: string) =>
  h.sql<{ payload: any }[]>`SELECT payload FROM events WHERE merchant_id = ${merchantId} AND type = ${type} ORDER BY created_at, id`;

/** The signed credit note of an invoice, its reference to the invoice's DTE read from the XML. */
async function creditNoteXml(h: TestApp, invoiceId: string) {
  const [doc] = await h.sql<{ signed_dte: string }[]>`SELECT signed_dte FROM dte_documents WHERE dte_type = 61 AND invoice_id = ${invoiceId}`;
  if (!doc) return null;
  const xml = new DOMParser().parseFromString(doc.signed_dte, 'text/xml');
  const text = (name: string) => xml.getElementsByTagName(name)[0]?.textContent;
  return { folio: text('Folio'), tpoDocRef: text('TpoDocRef'), folioRef: text('FolioRef'), codRef: text('CodRef') };
}

t.test("a checkout's expiry cancels its invoice with a credit note, carried by invoice.cancelled", async (t) => {
  const standin = await startSiiStandin(t);
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, SII_BASE_URL: standin.url });
  t.teardown(() => clock.reset());
  const { merchantId, key } = await seller(h);
  await dteMerchant(h, merchantId, sii, [
    { type: 33, from: 10, to: 20 },
    { type: 61, from: 5, to: 9 },
  ]);
  const c = await checkout(h, key);
  const sent = (await h.api('GET', `/invoices/${c.invoice_id}`, { key })).body;
  t.match(sent, { status: 'sent', currency: 'CLP', dte_type: 33, dte_folio: 10, credit_note: null }, 'the checkout invoice got its DTE when sent');

  clock.advance(Date.parse(c.expires_at) - clock.now().getTime() + 1000);
  t.equal(await expireCheckouts(jobDeps(t, h), { checkout_id: c.checkout_id }), 1, 'the expiry job expires the session');
  t.equal(await sessionStatus(h, c.checkout_id), 'expired');
  const invoice = (await h.api('GET', `/invoices/${c.invoice_id}`, { key })).body;
  t.match(invoice, { status: 'cancelled', dte_type: 33, dte_folio: 10 });
  t.equal(await cancelReason(h, c.invoice_id), 'checkout_expired');
  t.same(invoice.credit_note, { type: 61, folio: 5, status: 'pending' }, 'a credit note with the first type-61 folio');
  t.same(await creditNoteXml(h, c.invoice_id), { folio: '5', tpoDocRef: '33', folioRef: '10', codRef: '1' }, "it annuls the invoice's DTE");
  const jobs = await h.sql`SELECT 1 FROM pgboss.job WHERE name = 'dte-submit'`;
  t.equal(jobs.length, 2, "the credit note's submission is queued beside the invoice's");

  const cancelled = await eventsOf(h, merchantId, 'invoice.cancelled');
  t.equal(cancelled.length, 1, 'one invoice.cancelled');
  t.same(cancelled[0]!.payload.data.object.credit_note, { type: 61, folio: 5, status: 'pending' }, 'the event carries the credit note');
  t.same(cancelled[0]!.payload.data.object, invoice, 'and the invoice as GET /invoices/{id} shows it');
  t.equal((await eventsOf(h, merchantId, 'checkout.expired')).length, 1);
});

t.test('an expiry that cannot issue its credit note changes nothing, fails, and lets the others expire', async (t) => {
  const standin = await startSiiStandin(t);
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, SII_BASE_URL: standin.url });
  t.teardown(() => clock.reset());
  const deps = jobDeps(t, h);
  const dte = await seller(h);
  await dteMerchant(h, dte.merchantId, sii, [{ type: 33, from: 1, to: 5 }]);
  const plain = await seller(h);
  // Expired in this order, so that the sweep meets the failing session between two others.
  const before = await checkout(h, plain.key);
  const stuck = await checkout(h, dte.key);
  const after = await checkout(h, plain.key);
  t.equal((await h.api('GET', `/invoices/${stuck.invoice_id}`, { key: dte.key })).body.dte_folio, 1, 'the stuck invoice has a DTE');
  const pay = checkoutFormOf((await h.app.inject({ url: new URL(stuck.checkout_url).pathname })).body, 'pay');
  t.ok(pay, 'a Pay button before the deadline');

  clock.advance(Date.parse(after.expires_at) - clock.now().getTime() + 1000);
  await t.rejects(
    expireCheckouts(deps, { checkout_id: stuck.checkout_id }),
    { code: 'merchant_misconfigured', details: { dte_type: 61 } },
    'the expiry job fails, to be retried',
  );
  t.equal(await sessionStatus(h, stuck.checkout_id), 'pending', 'the session stays pending');

  const failure = await expireCheckouts(deps, {}).then(
    () => null,
    (err: unknown) => err,
  );
  t.type(failure, AggregateError, 'the sweep fails too');
  t.match(
    failure,
    { errors: [{ code: 'merchant_misconfigured', details: { dte_type: 61 } }], message: new RegExp(`checkout ${stuck.checkout_id}: No folios of DTE type 61`) },
    'its error names the session and why',
  );
  t.equal((failure as { errors?: unknown[] } | null)?.errors?.length, 1, 'that one session only');
  t.equal(await sessionStatus(h, before.checkout_id), 'expired', 'a session swept before it still expires');
  t.equal(await sessionStatus(h, after.checkout_id), 'expired', 'and one swept after it');
  t.equal(await sessionStatus(h, stuck.checkout_id), 'pending');
  const stuckInvoice = (await h.api('GET', `/invoices/${stuck.invoice_id}`, { key: dte.key })).body;
  t.match(stuckInvoice, { status: 'sent', credit_note: null }, 'its invoice is not cancelled');
  t.equal(await cancelReason(h, stuck.invoice_id), null);
  t.same(await eventsOf(h, dte.merchantId, 'invoice.cancelled'), [], 'no event of the rolled-back expiry');
  t.same(await eventsOf(h, dte.merchantId, 'checkout.expired'), []);
  t.equal((await h.api('GET', `/invoices/${before.invoice_id}`, { key: plain.key })).body.status, 'cancelled');

  // Pending past its deadline, the session is expired to the customer all the same.
  const page = await h.app.inject({ url: new URL(stuck.checkout_url).pathname });
  t.equal(page.statusCode, 200);
  t.equal(checkoutFormOf(page.body, 'pay'), null, 'no Pay button');
  t.match(page.body, /data-state="expired"/);
  const late = await h.app.inject({
    method: 'POST',
    url: new URL(pay!.action).pathname,
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', origin: 'null' },
    payload: new URLSearchParams({ csrf_token: pay!.csrf }).toString(),
  });
  t.equal(late.headers.location, stuck.checkout_url, 'a Pay posted now goes back to the page');
  t.same(await h.sql`SELECT 1 FROM payments WHERE invoice_id = ${stuck.invoice_id}`, [], 'and pays nothing');

  await addCaf(h.sql, h.ctx.config, h.ctx.secrets, dte.merchantId, cafFile(sii, { rut: DTE_PROFILE.rut, type: 61, from: 1, to: 3 }));
  t.equal(await expireCheckouts(deps, {}), 1, 'with a type-61 CAF loaded the next sweep expires it');
  t.equal(await sessionStatus(h, stuck.checkout_id), 'expired');
  const invoice = (await h.api('GET', `/invoices/${stuck.invoice_id}`, { key: dte.key })).body;
  t.equal(invoice.status, 'cancelled');
  t.equal(await cancelReason(h, stuck.invoice_id), 'checkout_expired');
  t.same(invoice.credit_note, { type: 61, folio: 1, status: 'pending' });
  t.same(await creditNoteXml(h, stuck.invoice_id), { folio: '1', tpoDocRef: '33', folioRef: '1', codRef: '1' });
  const cancelled = await eventsOf(h, dte.merchantId, 'invoice.cancelled');
  t.equal(cancelled.length, 1);
  t.same(cancelled[0]!.payload.data.object.credit_note, { type: 61, folio: 1, status: 'pending' });
  t.equal((await eventsOf(h, dte.merchantId, 'checkout.expired')).length, 1);
  t.equal(await expireCheckouts(deps, {}), 0, 'nothing is left');
});
