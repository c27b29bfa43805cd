// Cancelling a sent invoice that has a DTE issues a credit note (type 61, CodRef 1 "anula
// documento") referencing it, with its own folio, signature, submission and status (decisions
// §15), against the SII stand-in; without a DTE, cancel works as before.
import t from 'tap';
import { DOMParser } from '@xmldom/xmldom';
import { testApp } from './helpers/app.js';
import { dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { invoiceBody } from './helpers/fixtures.js';
import { startSiiStandin } from './helpers/sii-standin.js';
import { until } from './helpers/until.js';

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
  const created = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) });
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
  const created = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) });
  const id = created.body.invoice_id as string;
  const refused = await h.api('POST', `/invoices/${id}/cancel`, { key, body: {} });
  t.equal(refused.status, 400);
  t.equal(refused.body.code, 'merchant_misconfigured');
  t.equal(refused.body.details.dte_type, 61);
  const after = await h.api('GET', `/invoices/${id}`, { key });
  t.equal(after.body.status, 'sent', 'nothing cancelled');
  t.equal(after.body.credit_note, null);

  const plain = await h.key(['*']);
  const other = await h.api('POST', '/invoices', { key: plain.key, body: invoiceBody({ send_immediately: true }) });
  const cancelled = await h.api('POST', `/invoices/${other.body.invoice_id}/cancel`, { key: plain.key, body: {} });
  t.equal(cancelled.status, 200);
  t.equal(cancelled.body.status, 'cancelled');
  t.equal(cancelled.body.credit_note, null, 'a merchant without DTEs: no credit note');
});
