// Submitting DTEs to the SII (docs/decisions.md §15) against a stand-in of its web services that the
// real client code talks to unchanged (SII_BASE_URL): seed, token from the signed seed, upload
// of the signed EnvioDTE, polls of its state until SII's answer is final, and the events.
import t from 'tap';
import { testApp, type TestApp } from './helpers/app.js';
import { dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { facturaBody } from './helpers/fixtures.js';
import { startSiiStandin, type SiiStandin } from './helpers/sii-standin.js';
import { until } from './helpers/until.js';

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

async function setup(t: { teardown(fn: () => unknown): void }, standin: SiiStandin, opts: { worker?: boolean } = {}) {
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, SII_BASE_URL: standin.url });
  if (opts.worker !== false) await h.startWorker();
  const { key, merchantId } = await h.key(['*']);
  await dteMerchant(h, merchantId, sii, [
    { type: 33, from: 1, to: 50 },
    { type: 34, from: 1, to: 50 },
  ]);
  return { h, key, merchantId };
}

async function sendInvoice(h: TestApp, key: string, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await h.api('POST', '/invoices', { key, body: facturaBody({ send_immediately: true, ...extra }) });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.invoice_id as string;
}

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

t.test('a sent invoice is uploaded, polled and accepted, with one event', async (t) => {
  const standin = await startSiiStandin(t);
  standin.underWayPolls = 1;
  const { h, key } = await setup(t, standin);
  const id = await sendInvoice(h, key);
  const invoice = await invoiceWhen(h, key, id, 'accepted');
  t.equal(standin.uploads.length, 1, 'uploaded once');
  const [upload] = standin.uploads;
  t.ok(upload!.signaturesValid, "the stand-in verified the envelope's and the DTE's signatures");
  t.same(upload!.documents, [{ type: 33, folio: 1 }]);
  t.equal(upload!.company, '76086428-5');
  t.equal(upload!.sender, '11111111-1', "the certificate holder's RUT sends");
  t.equal(invoice.dte_track_id, upload!.trackId, 'the track id SII gave');
  t.ok(upload!.polls >= 2, 'polled past "under way" to the final answer');
  t.equal(await eventsOf(h, 'invoice.dte_accepted', id), 1, 'invoice.dte_accepted once');
  t.equal(await eventsOf(h, 'invoice.dte_rejected', id), 0);
});

t.test('a rejection keeps SII\'s reason; objections are accepted_with_objections', async (t) => {
  const standin = await startSiiStandin(t);
  const { h, key, merchantId } = await setup(t, standin);
  standin.outcome = { kind: 'envelope_rejected', code: 'RCT', glosa: 'Rechazado por Error en Caratula' };
  const rejected = await sendInvoice(h, key);
  await invoiceWhen(h, key, rejected, 'rejected');
  t.equal(await eventsOf(h, 'invoice.dte_rejected', rejected), 1, 'invoice.dte_rejected once');
  const [doc] = await h.sql<{ reason: string }[]>`SELECT reason FROM dte_documents WHERE invoice_id = ${rejected}`;
  t.match(doc!.reason, /RCT Rechazado por Error en Caratula/, "SII's state and reason are kept");

  standin.outcome = { kind: 'rejected' };
  const countedOut = await sendInvoice(h, key);
  await invoiceWhen(h, key, countedOut, 'rejected');
  const [doc2] = await h.sql<{ reason: string }[]>`SELECT reason FROM dte_documents WHERE invoice_id = ${countedOut}`;
  t.match(doc2!.reason, /EPR .*1 rejected of 1/, 'a document rejected in the counts says so');

  standin.outcome = { kind: 'objections' };
  const objected = await sendInvoice(h, key);
  await invoiceWhen(h, key, objected, 'accepted_with_objections');
  t.equal(await eventsOf(h, 'invoice.dte_accepted', objected), 1, 'accepted (with objections) is invoice.dte_accepted');
  t.ok(merchantId);
});

t.test('documents ready together go in one envelope, and one token serves every call', async (t) => {
  const standin = await startSiiStandin(t);
  const { h, key } = await setup(t, standin, { worker: false });
  const ids = [await sendInvoice(h, key), await sendInvoice(h, key, { is_tax_exempt: true }), await sendInvoice(h, key)];
  await h.startWorker();
  for (const id of ids) await invoiceWhen(h, key, id, 'accepted');
  t.equal(standin.uploads.length, 1, 'one upload');
  t.same(
    standin.uploads[0]!.documents.sort((a, b) => a.type - b.type || a.folio - b.folio),
    [
      { type: 33, folio: 1 },
      { type: 33, folio: 2 },
      { type: 34, folio: 1 },
    ],
    'the three documents in one EnvioDTE',
  );
  t.ok(standin.uploads[0]!.signaturesValid, 'the combined envelope is signed again, each DTE keeps its signature');
  const another = await sendInvoice(h, key);
  await invoiceWhen(h, key, another, 'accepted');
  t.equal(standin.seeds, 1, 'one seed');
  t.equal(standin.tokens, 1, 'one token, cached across uploads and polls');

  standin.expireTokens();
  const afterExpiry = await sendInvoice(h, key);
  await invoiceWhen(h, key, afterExpiry, 'accepted');
  t.equal(standin.tokens, 2, 'a refused token is replaced once');
});

t.test('SII down, unavailable, slow or answering garbage: retried, nothing lost, nothing uploaded twice', async (t) => {
  const standin = await startSiiStandin(t);
  const { h, key } = await setup(t, standin);
  await standin.stop();
  const first = await sendInvoice(h, key);
  // The upload was tried against a closed port and is waiting for its retry.
  await until('a failed attempt', async () => {
    const [r] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM dte_submissions WHERE status = 'abandoned'`;
    return r!.n > 0;
  });
  await standin.start();
  standin.faults.unavailable = true;
  const second = await sendInvoice(h, key);
  await until('an attempt answered 503', async () => {
    const [r] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM dte_submissions WHERE status = 'abandoned'`;
    return r!.n > 1;
  });
  standin.faults.unavailable = false;
  standin.faults.garbage = 2;
  standin.faults.delayMs = 300;
  await invoiceWhen(h, key, first, 'accepted', 180_000);
  await invoiceWhen(h, key, second, 'accepted', 180_000);
  const uploaded = standin.uploads.flatMap((u) => u.documents.map((d) => `${d.type}/${d.folio}`)).sort();
  t.same(uploaded, ['33/1', '33/2'], 'each document uploaded exactly once');
  t.equal(await eventsOf(h, 'invoice.dte_accepted', first), 1);
  t.equal(await eventsOf(h, 'invoice.dte_accepted', second), 1);
});

t.test("an upload SII refuses for its schema or signature rejects its documents with the reason, and later ones still go up", async (t) => {
  const standin = await startSiiStandin(t);
  const { h, key } = await setup(t, standin);
  standin.faults.refuseUploads = '7';
  const refused = await sendInvoice(h, key);
  await invoiceWhen(h, key, refused, 'rejected');
  const [doc] = await h.sql<{ reason: string }[]>`SELECT reason FROM dte_documents WHERE invoice_id = ${refused}`;
  t.match(doc!.reason, /STATUS 7 \(the schema is invalid\)/, "SII's refusal as the reason");
  t.equal(await eventsOf(h, 'invoice.dte_rejected', refused), 1, 'invoice.dte_rejected once');
  t.equal(standin.uploads.length, 0, 'nothing was taken');
  const [attempts] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM dte_submissions`;
  t.equal(attempts!.n, 1, 'not uploaded again');

  standin.faults.refuseUploads = null;
  const next = await sendInvoice(h, key);
  t.match(await invoiceWhen(h, key, next, 'accepted'), { dte_folio: 2 }, 'the next document is not held behind it');
  t.equal((await h.api('GET', `/invoices/${refused}`, { key })).body.dte_status, 'rejected', 'and the refused one stays rejected');
});

t.test('an upload whose answer was lost is resolved by asking SII, not by uploading again', async (t) => {
  const standin = await startSiiStandin(t);
  const { h, key } = await setup(t, standin);
  standin.faults.loseUploadAnswer = 1;
  const id = await sendInvoice(h, key);
  const invoice = await invoiceWhen(h, key, id, 'accepted', 120_000);
  t.equal(standin.uploads.length, 1, 'uploaded once');
  t.ok(standin.documentQueries >= 1, "the document's state was asked (QueryEstDte)");
  t.equal(invoice.dte_track_id, null, 'the lost answer carried the track id: it stays unknown');
  t.equal(await eventsOf(h, 'invoice.dte_accepted', id), 1);
});

t.test('a worker restarted mid-flow finishes the job, once', async (t) => {
  const standin = await startSiiStandin(t);
  standin.underWayPolls = 2;
  const { h, key } = await setup(t, standin);
  const id = await sendInvoice(h, key);
  await invoiceWhen(h, key, id, 'sent');
  const worker = await h.startWorker();
  await worker.stop();
  standin.faults.unavailable = true;
  // A new worker on the same database, as after a deploy.
  const { startWorker } = await import('../jobs/worker.js');
  const again = await startWorker(h.ctx.config, h.sql);
  t.teardown(() => again.stop());
  standin.faults.unavailable = false;
  await invoiceWhen(h, key, id, 'accepted', 120_000);
  t.equal(standin.uploads.length, 1, 'uploaded once');
  t.equal(await eventsOf(h, 'invoice.dte_accepted', id), 1, 'one event');
});
