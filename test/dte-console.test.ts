// The support console shows each merchant's DTE folios left per type where it lists merchants,
// and a picked merchant's tax documents, a rejected one with SII's reason (issue 21), boletas by
// their names (docs/decisions.md §20).
// With SCREENSHOTS_DIR set, the console showing them is saved there as admin-console-dte.png.
import path from 'node:path';
import t from 'tap';
import type { Page } from 'playwright-core';
import { openConsole } from './helpers/admin-console.js';
import { testApp } from './helpers/app.js';
import { dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { facturaBody, invoiceBody } from './helpers/fixtures.js';
import { startSiiBoletaStandin } from './helpers/sii-boleta-standin.js';
import { startSiiStandin } from './helpers/sii-standin.js';
import { until } from './helpers/until.js';

const TOKEN = 'adm_test_0123456789abcdefghijklmnopqrstuvwxyz';
const sii = siiAuthority();
t.teardown(() => sii.cleanup());

async function signIn(page: Page): Promise<void> {
  await page.locator('#login').waitFor({ state: 'visible' });
  await page.fill('#token', TOKEN);
  await page.click('#login-form button');
  await page.locator('#console').waitFor({ state: 'visible' });
}

t.test('the merchant list shows the folios left per type', async (t) => {
  const h = await testApp(t, { ADMIN_TOKEN: TOKEN, SII_CERT_FILE: sii.certFile });
  const issuer = await h.merchant({ name: 'Emisora SpA' });
  await h.merchant({ name: 'Sin DTE SpA' });
  await dteMerchant(h, issuer.id, sii, [{ type: 33, from: 1, to: 30 }, { type: 34, from: 1, to: 5 }]);
  const { page, pageErrors } = await openConsole(t, h);
  await signIn(page);
  const options = await until('the merchants', async () => {
    const texts = await page.locator('#f-merchant option').allTextContents();
    return texts.length === 3 ? texts : null;
  });
  t.ok(options.includes('Emisora SpA · facturacion@test.cl · DTE folios left: 33: 30, 34: 5, 39: 0, 41: 0, 56: 0, 61: 0'), 'folios per type beside the merchant');
  t.ok(options.includes('Sin DTE SpA · facturacion@test.cl'), 'nothing for a merchant without CAFs');
  t.same(pageErrors, []);
});

t.test("a picked merchant's tax documents, a rejected one with SII's reason", async (t) => {
  const standin = await startSiiStandin(t);
  const h = await testApp(t, { ADMIN_TOKEN: TOKEN, SII_CERT_FILE: sii.certFile, SII_BASE_URL: standin.url });
  await h.startWorker();
  const { key, merchantId } = await h.key(['*']);
  const other = await h.merchant({ name: 'Sin DTE SpA' });
  await dteMerchant(h, merchantId, sii, [
    { type: 33, from: 7, to: 30 },
    { type: 61, from: 3, to: 9 },
  ]);
  const send = async () => {
    const res = await h.api('POST', '/invoices', { key, body: facturaBody({ send_immediately: true }) });
    if (res.status !== 201) throw new Error(`POST /invoices: ${res.status} ${res.raw}`);
    return res.body.invoice_id as string;
  };
  const settled = (id: string, status: string) =>
    until(`the DTE ${status}`, async () => (await h.api('GET', `/invoices/${id}`, { key })).body.dte_status === status, 60_000);
  const acceptedId = await send();
  await settled(acceptedId, 'accepted');
  standin.outcome = { kind: 'envelope_rejected', code: 'RCT', glosa: 'Rechazado por Error en Caratula' };
  const rejectedId = await send();
  await settled(rejectedId, 'rejected');
  const [accepted, rejected] = await Promise.all([acceptedId, rejectedId].map(async (id) => (await h.api('GET', `/invoices/${id}`, { key })).body));
  standin.outcome = { kind: 'accepted' };
  const credit = await h.api('POST', `/invoices/${acceptedId}/credit-notes`, { key, body: { reason: 'correct_text', corrected_text: 'Giro: Comercio al por menor' } });
  t.equal(credit.status, 201);
  await until('the credit note accepted', async () => (await h.api('GET', `/credit-notes/${credit.body.id}`, { key })).body.dte_status === 'accepted', 60_000);

  const { page, pageErrors } = await openConsole(t, h, { width: 1200, height: 900 });
  await signIn(page);
  t.ok(await page.locator('#dte-documents').isHidden(), 'no documents while every merchant is listed');
  await page.selectOption('#f-merchant', merchantId);
  const rows = () => page.locator('#dte-rows tr').evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)));
  const shown = await until('the documents', async () => ((await rows()).length === 3 ? rows() : null));
  const noteTrack = (await h.api('GET', `/credit-notes/${credit.body.id}`, { key })).body.dte_track_id;
  t.same(shown, [
    ['61 nota de crédito', '3', `${accepted.invoice_number} · CN-000001`, 'accepted', noteTrack, '', shown[0]![6]],
    ['33 factura electrónica', '8', rejected.invoice_number, 'rejected', rejected.dte_track_id, 'RCT Rechazado por Error en Caratula', shown[1]![6]],
    ['33 factura electrónica', '7', accepted.invoice_number, 'accepted', accepted.dte_track_id, '', shown[2]![6]],
  ], 'type, folio, invoice (and a note its number), status, track id and, for the rejected one, the reason; newest first');
  t.match(shown[0]![6], /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/, 'when it was last updated');

  await page.selectOption('#f-merchant', other.id);
  await until('no documents of the other merchant', async () => (await rows()).length === 1 && (await rows())[0]![0] === 'No tax documents.');
  await page.selectOption('#f-merchant', '');
  await page.locator('#dte-documents').waitFor({ state: 'hidden' });
  t.same(pageErrors, []);

  if (process.env.SCREENSHOTS_DIR) {
    await page.selectOption('#f-merchant', merchantId);
    await until('the documents again', async () => (await rows()).length === 3);
    await page.screenshot({ path: path.resolve(process.env.SCREENSHOTS_DIR, 'admin-console-dte.png'), fullPage: true });
  }
});

t.test("a consumer's boletas, 39 and 41, listed by their names with the SII's track id", async (t) => {
  const boletas = await startSiiBoletaStandin(t);
  const h = await testApp(t, { ADMIN_TOKEN: TOKEN, SII_CERT_FILE: sii.certFile, SII_BOLETA_API_URL: boletas.url, SII_BOLETA_UPLOAD_URL: boletas.url });
  await h.startWorker();
  const { key, merchantId } = await h.key(['*']);
  await dteMerchant(h, merchantId, sii, [
    { type: 39, from: 1, to: 10 },
    { type: 41, from: 4, to: 10 },
  ]);
  const accepted = async (extra: Record<string, unknown>) => {
    // A consumer: a name and an e-mail, no RUT.
    const res = await h.api('POST', '/invoices', { key, body: invoiceBody({ ...extra, send_immediately: true }) });
    if (res.status !== 201) throw new Error(`POST /invoices: ${res.status} ${res.raw}`);
    return until('the boleta accepted', async () => {
      const got = (await h.api('GET', `/invoices/${res.body.invoice_id}`, { key })).body;
      return got.dte_status === 'accepted' ? got : null;
    }, 60_000);
  };
  const taxed = await accepted({});
  const exempt = await accepted({ is_tax_exempt: true });
  t.match([taxed, exempt], [{ dte_type: 39, dte_folio: 1 }, { dte_type: 41, dte_folio: 4 }], 'a boleta each');

  const { page, pageErrors } = await openConsole(t, h, { width: 1200, height: 900 });
  await signIn(page);
  const options = await until('the merchants', async () => {
    const texts = await page.locator('#f-merchant option').allTextContents();
    return texts.length === 2 ? texts : null;
  });
  t.ok(options.some((o) => o.endsWith('DTE folios left: 33: 0, 34: 0, 39: 9, 41: 6, 56: 0, 61: 0')), 'the boletas\' folios left beside the merchant');
  await page.selectOption('#f-merchant', merchantId);
  const rows = () => page.locator('#dte-rows tr').evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)));
  const shown = await until('the documents', async () => ((await rows()).length === 2 ? rows() : null));
  t.same(
    shown.map((r) => r.slice(0, 6)),
    [
      ['41 boleta exenta', '4', exempt.invoice_number, 'accepted', exempt.dte_track_id, ''],
      ['39 boleta electrónica', '1', taxed.invoice_number, 'accepted', taxed.dte_track_id, ''],
    ],
    'type and name, folio, invoice, status and track id, newest first',
  );
  t.ok(taxed.dte_track_id && exempt.dte_track_id, 'each with the track id of its upload');
  t.same(pageErrors, []);
});
