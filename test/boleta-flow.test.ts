// Boletas end to end (docs/decisions.md §20): a DTE merchant with CAFs of type 39/41 gives a consumer's
// invoice (a client without a Chilean RUT, a checkout's customer) a boleta in the sending
// transaction; the worker uploads the merchant's waiting boletas in one EnvioBOLETA to a stand-in
// of the SII's boleta REST service (SII_BOLETA_API_URL, SII_BOLETA_UPLOAD_URL) that the real client
// code talks to unchanged, polls its state and records each boleta's outcome with its event.
import { DOMParser } from '@xmldom/xmldom';
import t from 'tap';
import { testApp, type TestApp } from './helpers/app.js';
import { submitCheckoutForm, checkoutBody } from './helpers/checkout.js';
import { dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { facturaBody, invoiceBody } from './helpers/fixtures.js';
import { pdfToText } from './helpers/pdftotext.js';
import { startSiiBoletaStandin, type SiiBoletaStandin } from './helpers/sii-boleta-standin.js';
import { startSiiStandin, type SiiStandin } from './helpers/sii-standin.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp.js';
import { until } from './helpers/until.js';
import { assertValid } from './helpers/xsd.js';

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

type Caf = { type: number; from: number; to: number };
const BOLETA_CAFS: Caf[] = [
  { type: 39, from: 1, to: 50 },
  { type: 41, from: 1, to: 50 },
];

async function setup(
  t: { teardown(fn: () => unknown): void },
  boletas: SiiBoletaStandin,
  opts: { worker?: boolean; soap?: SiiStandin; cafs?: Caf[]; provider?: 'sandbox'; smtp?: SmtpSink } = {},
) {
  const h = await testApp(t, {
    SII_CERT_FILE: sii.certFile,
    SII_BOLETA_API_URL: boletas.url,
    SII_BOLETA_UPLOAD_URL: boletas.url,
    ...(opts.soap ? { SII_BASE_URL: opts.soap.url } : {}),
    ...(opts.smtp ? { SMTP_URL: opts.smtp.url } : {}),
  });
  if (opts.worker !== false) await h.startWorker();
  const m = await h.merchant({ payment_provider: opts.provider ?? null });
  const { key, merchantId } = await h.key(['*'], { merchantId: m.id });
  await dteMerchant(h, merchantId, sii, opts.cafs ?? BOLETA_CAFS);
  return { h, key, merchantId };
}

async function sendInvoice(h: TestApp, key: string, body: Record<string, unknown>): Promise<string> {
  const res = await h.api('POST', '/invoices', { key, body: { ...body, send_immediately: true } });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.invoice_id as string;
}

/** A consumer's invoice: a client with a name and an e-mail, no RUT. */
const consumerInvoice = (h: TestApp, key: string, extra: Record<string, unknown> = {}) => sendInvoice(h, key, invoiceBody(extra));

async function invoiceWhen(h: TestApp, key: string, id: string, status: string, timeoutMs = 60_000) {
  return until(
    `invoice ${id} dte_status ${status}`,
    async () => {
      const res = await h.api('GET', `/invoices/${id}`, { key });
      return res.body.dte_status === status ? res.body : null;
    },
    timeoutMs,
  );
}

async function eventsOf(h: TestApp, type: string, invoiceId: string): Promise<number> {
  const [row] = await h.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM events WHERE type = ${type} AND payload->'data'->'object'->>'id' = ${invoiceId}`;
  return row!.n;
}

const uploadedBoletas = (standin: SiiBoletaStandin) =>
  standin.uploads.flatMap((u) => u.boletas.map((b) => `${b.tipo}/${b.folio}`)).sort();

t.test("a consumer's invoice gets a boleta 39, uploaded, polled past processing and accepted, with one event", async (t) => {
  const standin = await startSiiBoletaStandin(t);
  standin.processingPolls = 1;
  const { h, key } = await setup(t, standin, { worker: false });
  const id = await consumerInvoice(h, key);
  const sent = (await h.api('GET', `/invoices/${id}`, { key })).body;
  t.match(sent, { status: 'sent', dte_type: 39, dte_folio: 1, dte_status: 'pending', dte_track_id: null }, 'a boleta, numbered in the sending transaction');
  const me = await h.api('GET', '/me', { key });
  t.same(me.body.dte, { enabled: true, folios_left: { 33: 0, 34: 0, 39: 49, 41: 50, 56: 0, 61: 0 } }, 'GET /me counts the boletas left');

  const xml = await h.app.inject({ url: `/api/v1/external/invoices/${id}/dte.xml`, headers: { 'x-api-key': key } });
  t.equal(xml.statusCode, 200);
  assertValid(t, xml.rawPayload, 'EnvioBOLETA', "the invoice's dte.xml");

  // The hosted page names what the consumer holds.
  const page = await h.app.inject({ url: new URL(sent.public_url).pathname });
  t.equal(page.statusCode, 200);
  t.match(page.body, `<title>Boleta ${sent.invoice_number} · `, 'the page calls it a boleta');
  t.notMatch(page.body, /\bfactura\b/i, 'never a factura');

  await h.startWorker();
  const invoice = await invoiceWhen(h, key, id, 'accepted');
  t.equal(standin.uploads.length, 1, 'uploaded once');
  const [upload] = standin.uploads;
  assertValid(t, upload!.xml, 'EnvioBOLETA', 'the uploaded EnvioBOLETA');
  t.ok(upload!.signaturesValid, "the stand-in verified the envelope's and the boleta's signatures");
  t.same(upload!.boletas, [{ tipo: 39, folio: 1, montoTotal: '11900', fechaEmision: sent.issue_date }]);
  t.equal(upload!.company, '76086428-5');
  t.equal(upload!.sender, '11111111-1', "the certificate holder's RUT sends");
  t.equal(invoice.dte_track_id, upload!.trackid, 'the track id SII gave');
  t.ok(upload!.polls >= 2, 'polled past "processing" to the outcome');
  t.equal(await eventsOf(h, 'invoice.dte_accepted', id), 1, 'invoice.dte_accepted once');
  t.equal(await eventsOf(h, 'invoice.dte_rejected', id), 0);
});

t.test('an exempt sale is a 41; a rejected boleta keeps SII\'s reason; objections are accepted_with_objections', async (t) => {
  const standin = await startSiiBoletaStandin(t);
  const { h, key } = await setup(t, standin);
  const exempt = await consumerInvoice(h, key, { is_tax_exempt: true });
  const accepted = await invoiceWhen(h, key, exempt, 'accepted');
  t.match(accepted, { dte_type: 41, dte_folio: 1 });
  assertValid(t, standin.uploads[0]!.xml, 'EnvioBOLETA', 'the EnvioBOLETA of a 41');

  standin.rejectFolios.add(1);
  const rejected = await consumerInvoice(h, key);
  await invoiceWhen(h, key, rejected, 'rejected');
  t.equal(await eventsOf(h, 'invoice.dte_rejected', rejected), 1, 'invoice.dte_rejected once');
  t.equal(await eventsOf(h, 'invoice.dte_accepted', rejected), 0);
  const [doc] = await h.sql<{ reason: string }[]>`SELECT reason FROM dte_documents WHERE invoice_id = ${rejected}`;
  t.match(doc!.reason, /^RCH DTE Rechazado; 100 Rechazo por prueba: folio 1$/, "SII's state and errors are kept");

  standin.objectionFolios.add(2);
  const objected = await consumerInvoice(h, key);
  await invoiceWhen(h, key, objected, 'accepted_with_objections');
  t.equal(await eventsOf(h, 'invoice.dte_accepted', objected), 1, 'accepted with objections is invoice.dte_accepted');
  for (const u of standin.uploads) assertValid(t, u.xml, 'EnvioBOLETA', `upload ${u.trackid}`);
});

t.test("a merchant's waiting boletas go in one envelope, with the generic RUT's client too", async (t) => {
  const standin = await startSiiBoletaStandin(t);
  const { h, key } = await setup(t, standin, { worker: false });
  const ids = [
    await consumerInvoice(h, key),
    await consumerInvoice(h, key, { is_tax_exempt: true }),
    await sendInvoice(h, key, invoiceBody({ client: { name: 'Cliente final', email: 'final@example.cl', rut: '66.666.666-6' } })),
  ];
  await h.startWorker();
  for (const id of ids) await invoiceWhen(h, key, id, 'accepted');
  t.equal(standin.uploads.length, 1, 'one upload');
  t.same(uploadedBoletas(standin), ['39/1', '39/2', '41/1'], 'the three boletas in one EnvioBOLETA');
  assertValid(t, standin.uploads[0]!.xml, 'EnvioBOLETA', 'the combined EnvioBOLETA');
  t.ok(standin.uploads[0]!.signaturesValid, 'signed again as one, each boleta keeps its signature');
  t.equal(standin.tokens, 1, 'one token for the upload and its polls');

  standin.expireTokens();
  const afterExpiry = await consumerInvoice(h, key);
  await invoiceWhen(h, key, afterExpiry, 'accepted');
  t.equal(standin.tokens, 2, 'a refused token is replaced once');
});

t.test('the boleta service down: retried, nothing lost, nothing uploaded twice', async (t) => {
  const standin = await startSiiBoletaStandin(t);
  const { h, key } = await setup(t, standin);
  standin.faults.unavailable = true;
  const id = await consumerInvoice(h, key);
  await until('an attempt answered 503', async () => {
    const [r] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM dte_submissions WHERE status = 'abandoned' AND channel = 'boleta'`;
    return r!.n > 0;
  });
  t.equal(standin.uploads.length, 0, 'nothing went up');
  standin.faults.unavailable = false;
  await invoiceWhen(h, key, id, 'accepted', 120_000);
  t.same(uploadedBoletas(standin), ['39/1'], 'uploaded exactly once');
  assertValid(t, standin.uploads[0]!.xml, 'EnvioBOLETA', 'the upload after the outage');
  t.equal(await eventsOf(h, 'invoice.dte_accepted', id), 1);
});

t.test('an upload whose answer was lost is settled by asking SII about each boleta, not by uploading again', async (t) => {
  const standin = await startSiiBoletaStandin(t);
  const { h, key } = await setup(t, standin);
  standin.faults.loseUploadAnswer = 1;
  const id = await consumerInvoice(h, key);
  const invoice = await invoiceWhen(h, key, id, 'accepted', 120_000);
  t.equal(standin.uploads.length, 1, 'uploaded once');
  assertValid(t, standin.uploads[0]!.xml, 'EnvioBOLETA', 'the upload whose answer was lost');
  t.ok(standin.folioQueries >= 1, "the boleta's state was asked by its folio");
  t.equal(invoice.dte_track_id, null, 'the lost answer carried the track id: it stays unknown');
  t.equal(await eventsOf(h, 'invoice.dte_accepted', id), 1);
});

t.test("a factura of the same merchant goes through the SOAP upload as before; no CAF of the boleta's type: not_applicable", async (t) => {
  const boletas = await startSiiBoletaStandin(t);
  const soap = await startSiiStandin(t);
  const { h, key } = await setup(t, boletas, {
    soap,
    cafs: [
      { type: 33, from: 1, to: 50 },
      { type: 39, from: 1, to: 50 },
    ],
  });
  const factura = await sendInvoice(h, key, facturaBody());
  const boleta = await consumerInvoice(h, key);
  t.match(await invoiceWhen(h, key, factura, 'accepted'), { dte_type: 33, dte_folio: 1 });
  t.match(await invoiceWhen(h, key, boleta, 'accepted'), { dte_type: 39, dte_folio: 1 });
  t.same(
    soap.uploads.flatMap((u) => u.documents),
    [{ type: 33, folio: 1 }],
    'the factura alone went to the SOAP upload',
  );
  t.same(uploadedBoletas(boletas), ['39/1'], 'the boleta alone went to the boleta service');
  assertValid(t, boletas.uploads[0]!.xml, 'EnvioBOLETA', 'the boleta beside a factura');

  const exempt = await consumerInvoice(h, key, { is_tax_exempt: true });
  t.match((await h.api('GET', `/invoices/${exempt}`, { key })).body, { dte_type: null, dte_folio: null, dte_status: 'not_applicable' }, 'no CAF of type 41');
});

t.test('IVA at another rate than 19 % refuses the send of a factura or a boleta, nothing numbered; an exempt sale keeps its rate', async (t) => {
  const boletas = await startSiiBoletaStandin(t);
  const { h, key, merchantId } = await setup(t, boletas, {
    worker: false,
    cafs: [
      { type: 33, from: 1, to: 50 },
      { type: 39, from: 1, to: 50 },
      { type: 41, from: 1, to: 50 },
    ],
  });
  const count = async () => (await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM invoices WHERE merchant_id = ${merchantId}`)[0]!.n;
  for (const [what, body] of [
    ['a factura at 10 %', facturaBody({ tax_rate: 10 })],
    ['a boleta at 0 %, not exempt', invoiceBody({ tax_rate: 0 })],
    ['a boleta at 19.5 %', invoiceBody({ tax_rate: 19.5, tax_inclusive: true })],
  ] as const) {
    const refused = await h.api('POST', '/invoices', { key, body: { ...body, send_immediately: true } });
    t.equal(refused.status, 422, `${what}: 422`);
    t.equal(refused.body.code, 'validation_error');
    t.same(refused.body.details.errors.map((e: { path: string }) => e.path), ['tax_rate'], 'naming tax_rate');
    t.match(refused.body.details.errors[0].message, /^must be 19 on an invoice with a tax document/);
  }
  t.equal(await count(), 0, 'nothing created');

  const draft = await h.api('POST', '/invoices', { key, body: invoiceBody({ tax_rate: 10 }) });
  t.equal(draft.status, 201, 'a draft at any rate');
  const send = await h.api('POST', `/invoices/${draft.body.invoice_id}/send`, { key });
  t.equal(send.status, 422);
  t.same(send.body.details.errors.map((e: { path: string }) => e.path), ['tax_rate']);
  t.match((await h.api('GET', `/invoices/${draft.body.invoice_id}`, { key })).body, { status: 'draft', invoice_number: null, dte_folio: null }, 'still a draft, not numbered');

  const exempt = await consumerInvoice(h, key, { tax_rate: 10, is_tax_exempt: true });
  t.match((await h.api('GET', `/invoices/${exempt}`, { key })).body, { dte_type: 41, dte_folio: 1, tax_total: '0' }, 'an exempt sale: a 41, whatever its rate');
  const taxed = await consumerInvoice(h, key);
  t.match((await h.api('GET', `/invoices/${taxed}`, { key })).body, { dte_type: 39, dte_folio: 1 }, "at 19 %: the first 39 folio, none taken by the refusals");
});

t.test('a checkout paid end to end gets its boleta accepted, e-mailed with the receipt and linked from the paid page', async (t) => {
  const standin = await startSiiBoletaStandin(t);
  const smtp = await startSmtpSink(t);
  const { h, key } = await setup(t, standin, { provider: 'sandbox', smtp });
  const res = await h.api('POST', '/checkout', { key, body: checkoutBody() });
  t.equal(res.status, 201);
  const { checkout_url, invoice_id } = res.body as { checkout_url: string; invoice_id: string };
  await submitCheckoutForm(h, checkout_url, 'pay');
  const invoice = await invoiceWhen(h, key, invoice_id, 'accepted');
  t.match(invoice, { status: 'paid', dte_type: 39, dte_folio: 1 });
  t.same(uploadedBoletas(standin), ['39/1']);
  assertValid(t, standin.uploads[0]!.xml, 'EnvioBOLETA', "the checkout's boleta");
  t.match(standin.uploads[0]!.xml, /<RznSocRecep>Comprador \d+<\/RznSocRecep>/, "the customer's name on the boleta");
  t.equal(await eventsOf(h, 'invoice.dte_accepted', invoice_id), 1);
  const page = await h.app.inject({ method: 'GET', url: new URL(checkout_url).pathname });
  const href = /<a href="([^"]+)" data-boleta>/.exec(page.body)?.[1];
  t.ok(href, "the paid page links the customer's boleta");
  const pdf = await h.app.inject({ method: 'GET', url: new URL(href!).pathname });
  t.equal(pdf.statusCode, 200);
  t.match(await pdfToText(pdf.rawPayload), /BOLETA ELECTRÓNICA[\s\S]*N\.º 1/, 'the boleta itself');

  // The checkout's one e-mail, its receipt, carries the boleta: the printed one and the signed XML.
  const [receipt, ...more] = await smtp.waitFor(1, 60_000);
  t.same(more, [], 'one e-mail');
  t.equal(receipt!.headers.get('x-invoice-id'), invoice_id);
  t.match(receipt!.subject, new RegExp(`^Recibo de pago: boleta ${invoice.invoice_number} de `), 'a boleta, not a factura, by name');
  t.match(receipt!.text, new RegExp(`por la boleta ${invoice.invoice_number} el`));
  t.notMatch(receipt!.text + receipt!.html, /\bfactura\b/i, 'the word factura nowhere');
  t.same(
    receipt!.attachments.map((a) => [a.filename, a.contentType]),
    [
      [`${invoice.invoice_number}.pdf`, 'application/pdf'],
      ['DTE-39-1.xml', 'application/xml'],
    ],
    'the receipt carries the boleta, printed and signed',
  );
  t.match(await pdfToText(Buffer.from(receipt!.attachments[0]!.content)), /BOLETA ELECTRÓNICA[\s\S]*El IVA de esta boleta es/);
  const xml = await h.app.inject({ method: 'GET', url: `/api/v1/external/invoices/${invoice_id}/dte.xml`, headers: { 'x-api-key': key } });
  t.ok(Buffer.from(receipt!.attachments[1]!.content).equals(xml.rawPayload), 'the very bytes of GET dte.xml');
});

t.test("a cancelled boleta's credit note goes through the SOAP upload, addressed to the issuer, never to 66666666-6", async (t) => {
  const boletas = await startSiiBoletaStandin(t);
  const soap = await startSiiStandin(t);
  const { h, key } = await setup(t, boletas, {
    soap,
    cafs: [
      { type: 39, from: 1, to: 50 },
      { type: 61, from: 1, to: 50 },
    ],
  });
  const id = await consumerInvoice(h, key);
  await invoiceWhen(h, key, id, 'accepted');
  const cancelled = await h.api('POST', `/invoices/${id}/cancel`, { key, body: {} });
  t.equal(cancelled.status, 200);
  t.same(cancelled.body.credit_note, { type: 61, folio: 1, status: 'pending' });
  await until('the credit note accepted', async () => (await h.api('GET', `/invoices/${id}`, { key })).body.credit_note?.status === 'accepted', 60_000);
  t.same(
    soap.uploads.flatMap((u) => u.documents),
    [{ type: 61, folio: 1 }],
    'the note went to the SOAP upload',
  );
  t.same(soap.uploads[0]!.rejections.flatMap((r) => r.problems), [], 'the stand-in found nothing to refuse');
  const [doc] = await h.sql<{ signed_dte: string }[]>`SELECT signed_dte FROM dte_documents WHERE dte_type = 61 AND invoice_id = ${id}`;
  const xml = new DOMParser().parseFromString(doc!.signed_dte, 'text/xml');
  const text = (name: string) => xml.getElementsByTagName(name)[0]?.textContent;
  t.equal(text('RUTRecep'), '76086428-5', "the issuer's own RUT as the receiver");
  t.equal(text('RznSocRecep'), 'Comercial Peñalolén SpA');
  t.equal(text('TpoDocRef'), '39', 'it references the boleta');
  t.equal(text('FolioRef'), '1');
  t.equal(text('CodRef'), '1');
  t.same(uploadedBoletas(boletas), ['39/1'], 'the boleta went up once, the note not with it');
});
