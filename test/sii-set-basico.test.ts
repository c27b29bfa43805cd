// The SII's certification path (docs/decisions.md §17): a company in certificación (resolution number 0)
// issues a whole basic test set of its own making through the HTTP API, eight cases shaped like the
// SII's SET BÁSICO (line discounts, an exempt line, a global discount, three credit notes, a debit
// note), each carrying its SET reference. Every amount of every document is checked against the
// figures worked out by hand below, every XML validates against the SII's published schemas, and
// the SII stand-in, which refuses what the SII refuses, accepts all eight.
import t from 'tap';
import { DOMParser, type Element } from '@xmldom/xmldom';
import { testApp, type TestApp } from './helpers/app.js';
import { DTE_PROFILE, dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { startSiiStandin } from './helpers/sii-standin.js';
import { until } from './helpers/until.js';
import { assertValid } from './helpers/xsd.js';

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

// The buyer as a factura states it: RUT, giro, address and comuna are all required by the SII.
const BUYER = {
  name: 'Distribuidora Los Aromos Ltda',
  email: 'facturacion@losaromos.cl',
  rut: '77.123.456-9',
  giro: 'Venta al por mayor de ferretería',
  address: 'Av. Las Industrias 1550',
  comuna: 'Estación Central',
  ciudad: 'Santiago',
};

const SET = (caso: number) => ({ type: 'SET', reason: `CASO 4117${String(caso).padStart(2, '0')}-${caso}` });

/** The values of one element name in a DTE, in document order. */
function valuesOf(dte: Element, name: string): string[] {
  return Array.from(dte.getElementsByTagName(name)).map((e) => e.textContent ?? '');
}

/** The EnvioDTE a GET .../dte.xml answers, as its ISO-8859-1 bytes, and the Documento it holds. */
async function signedDte(h: TestApp, path: string, key: string) {
  const res = await h.app.inject({ method: 'GET', url: `/api/v1/external${path}/dte.xml`, headers: { 'x-api-key': key } });
  if (res.statusCode !== 200) throw new Error(`${path}/dte.xml: ${res.statusCode} ${res.body}`);
  const envio = res.rawPayload;
  const doc = new DOMParser().parseFromString(envio.toString('latin1'), 'text/xml');
  return { envio, dte: doc.getElementsByTagName('Documento')[0]! };
}

t.test('a company in certificación issues the basic set through the API and the SII accepts all of it', async (t) => {
  const standin = await startSiiStandin(t);
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, SII_BASE_URL: standin.url });
  await h.startWorker();
  const { key, merchantId } = await h.key(['*']);
  t.equal(DTE_PROFILE.resolucion_numero, 0, 'certificación: resolution number 0');
  await dteMerchant(h, merchantId, sii, [
    { type: 33, from: 1, to: 10 },
    { type: 56, from: 1, to: 10 },
    { type: 61, from: 1, to: 10 },
  ]);

  async function factura(caso: number, body: Record<string, unknown>) {
    const created = await h.api('POST', '/invoices', {
      key,
      body: { client: BUYER, due_date: '2099-12-31', send_immediately: true, references: [SET(caso)], ...body },
    });
    t.equal(created.status, 201, `CASO ${caso} created and sent`);
    return (await h.api('GET', `/invoices/${created.body.invoice_id}`, { key })).body;
  }

  // CASO 1: two taxable lines.
  //   123 × 3.456 = 425.088; 53 × 2.563 = 135.839; neto 560.927; IVA 19 % = 106.576,13 → 106.576; total 667.503.
  const caso1 = await factura(1, {
    items: [
      { description: 'Cajón AFECTO', quantity: 123, unit_price: 3456 },
      { description: 'Relleno AFECTO', quantity: 53, unit_price: 2563 },
    ],
  });
  t.match(caso1, { taxable_amount: '560927.00', exempt_amount: '0.00', tax_total: '106576.00', total: '667503.00', dte_type: 33, dte_folio: 1 });

  // CASO 2: line discounts.
  //   235 × 1.234 = 289.990, 9 % = 26.099,1 → 26.099, line 263.891;
  //   161 × 922 = 148.442, 21 % = 31.172,82 → 31.173, line 117.269;
  //   neto 381.160; IVA 72.420,4 → 72.420; total 453.580.
  const caso2 = await factura(2, {
    items: [
      { description: 'Pañuelo AFECTO', quantity: 235, unit_price: 1234, discount_percent: 9 },
      { description: 'ITEM 2 AFECTO', quantity: 161, unit_price: 922, discount_percent: 21 },
    ],
  });
  t.same(
    caso2.items.map((i: { discount_amount: string; line_total: string }) => [i.discount_amount, i.line_total]),
    [
      ['26099.00', '263891.00'],
      ['31173.00', '117269.00'],
    ],
  );
  t.match(caso2, { taxable_amount: '381160.00', tax_total: '72420.00', total: '453580.00', dte_folio: 2 });

  // CASO 3: an exempt service among taxable lines.
  //   24 × 1.590 = 38.160; 149 × 835 = 124.415; neto 162.575; exento 34.567;
  //   IVA 30.889,25 → 30.889; total 162.575 + 34.567 + 30.889 = 228.031.
  const caso3 = await factura(3, {
    items: [
      { description: 'Pintura B&W AFECTO', quantity: 24, unit_price: 1590 },
      { description: 'ITEM 2 AFECTO', quantity: 149, unit_price: 835 },
      { description: 'ITEM 3 SERVICIO EXENTO', quantity: 1, unit_price: 34567, exempt: true },
    ],
  });
  t.match(caso3, { taxable_amount: '162575.00', exempt_amount: '34567.00', subtotal: '197142.00', tax_total: '30889.00', total: '228031.00', dte_folio: 3 });

  // CASO 4: a 21 % global discount on the taxable lines only.
  //   123 × 4.567 = 561.741; 47 × 1.234 = 57.998; taxable lines 619.739; 21 % = 130.145,19 → 130.145;
  //   neto 489.594; exento 2 × 6.789 = 13.578; IVA 93.022,86 → 93.023; total 489.594 + 13.578 + 93.023 = 596.195.
  const caso4 = await factura(4, {
    items: [
      { description: 'ITEM 1 AFECTO', quantity: 123, unit_price: 4567 },
      { description: 'ITEM 2 AFECTO', quantity: 47, unit_price: 1234 },
      { description: 'ITEM 3 SERVICIO EXENTO', quantity: 2, unit_price: 6789, exempt: true },
    ],
    global_discount: { percent: 21, description: 'Descuento global ítemes afectos' },
  });
  t.match(caso4, { discount_total: '130145.00', taxable_amount: '489594.00', exempt_amount: '13578.00', tax_total: '93023.00', total: '596195.00', dte_folio: 4 });

  // CASO 5: a credit note that corrects the receiver's giro in CASO 1: one line, every amount 0.
  const caso5 = await h.api('POST', `/invoices/${caso1.id}/credit-notes`, {
    key,
    body: { reason: 'correct_text', corrected_text: 'Donde dice Venta al por mayor debe decir Venta al por menor', description: 'Corrige giro del receptor', references: [SET(5)] },
  });
  t.equal(caso5.status, 201);
  t.match(caso5.body, { number: 'CN-000001', reason: 'correct_text', total: '0.00', dte_type: 61, dte_folio: 1 });

  // CASO 6: goods of CASO 2 returned: 86 pañuelos and 111 of ITEM 2, at their prices and discounts.
  //   86 × 1.234 = 106.124, 9 % = 9.551,16 → 9.551, line 96.573;
  //   111 × 922 = 102.342, 21 % = 21.491,82 → 21.492, line 80.850;
  //   neto 177.423; IVA 33.710,37 → 33.710; total 211.133.
  const caso6 = await h.api('POST', `/invoices/${caso2.id}/credit-notes`, {
    key,
    body: {
      reason: 'return',
      items: [
        { item_id: caso2.items[0].id, quantity: 86 },
        { item_id: caso2.items[1].id, quantity: 111 },
      ],
      references: [SET(6)],
    },
  });
  t.equal(caso6.status, 201);
  t.same(
    caso6.body.items.map((i: { discount_amount: string; line_total: string }) => [i.discount_amount, i.line_total]),
    [
      ['9551.00', '96573.00'],
      ['21492.00', '80850.00'],
    ],
  );
  t.match(caso6.body, { number: 'CN-000002', taxable_amount: '177423.00', tax_total: '33710.00', total: '211133.00', dte_folio: 2 });

  // CASO 7: CASO 3 cancelled whole: its lines and totals (228.031), and the invoice is cancelled.
  const caso7 = await h.api('POST', `/invoices/${caso3.id}/credit-notes`, { key, body: { reason: 'cancel', references: [SET(7)] } });
  t.equal(caso7.status, 201);
  t.match(caso7.body, { number: 'CN-000003', reason: 'cancel', description: 'Anula documento', exempt_amount: '34567.00', total: '228031.00', dte_folio: 3 });
  const cancelled = (await h.api('GET', `/invoices/${caso3.id}`, { key })).body;
  t.match(cancelled, { status: 'cancelled', amount_credited: '228031.00', amount_due: '0.00', credit_note: { type: 61, folio: 3 } });

  // CASO 8: a debit note that cancels the credit note of CASO 5 (amounts 0, like the note).
  const caso8 = await h.api('POST', `/credit-notes/${caso5.body.id}/debit-notes`, { key, body: { reason: 'cancel', references: [SET(8)] } });
  t.equal(caso8.status, 201);
  t.match(caso8.body, { number: 'DN-000001', reason: 'cancel', credit_note_id: caso5.body.id, total: '0.00', dte_type: 56, dte_folio: 1 });
  t.equal((await h.api('GET', `/credit-notes/${caso5.body.id}`, { key })).body.cancelled_by_debit_note_id, caso8.body.id);
  t.match((await h.api('GET', `/invoices/${caso2.id}`, { key })).body, { amount_credited: '211133.00', amount_due: '242447.00' }, 'CASO 2 owes 453.580 − 211.133');

  // What each DTE states, element by element, against the figures above.
  const docs = {
    1: await signedDte(h, `/invoices/${caso1.id}`, key),
    2: await signedDte(h, `/invoices/${caso2.id}`, key),
    3: await signedDte(h, `/invoices/${caso3.id}`, key),
    4: await signedDte(h, `/invoices/${caso4.id}`, key),
    5: await signedDte(h, `/credit-notes/${caso5.body.id}`, key),
    6: await signedDte(h, `/credit-notes/${caso6.body.id}`, key),
    7: await signedDte(h, `/credit-notes/${caso7.body.id}`, key),
    8: await signedDte(h, `/debit-notes/${caso8.body.id}`, key),
  };
  for (const [caso, { envio, dte }] of Object.entries(docs)) {
    assertValid(t, envio, 'EnvioDTE', `CASO ${caso}: its EnvioDTE validates against EnvioDTE_v10.xsd`);
    t.same(valuesOf(dte, 'TpoDocRef')[0], 'SET', `CASO ${caso}: its first reference is the SET`);
    t.equal(valuesOf(dte, 'RazonRef')[0], SET(Number(caso)).reason);
    t.same(
      ['GiroRecep', 'DirRecep', 'CmnaRecep'].map((n) => valuesOf(dte, n)[0]),
      ['Venta al por mayor de ferretería', 'Av. Las Industrias 1550', 'Estación Central'],
      `CASO ${caso}: the receiver's giro, address and comuna`,
    );
  }
  const totals = (caso: keyof typeof docs) => ['MntNeto', 'MntExe', 'IVA', 'MntTotal'].map((n) => valuesOf(docs[caso].dte, n)[0] ?? null);
  t.same(totals(1), ['560927', null, '106576', '667503']);
  t.same(totals(2), ['381160', null, '72420', '453580']);
  t.same(valuesOf(docs[2].dte, 'DescuentoPct'), ['9', '21']);
  t.same(valuesOf(docs[2].dte, 'DescuentoMonto'), ['26099', '31173']);
  t.same(totals(3), ['162575', '34567', '30889', '228031']);
  t.same(valuesOf(docs[3].dte, 'IndExe'), ['1'], 'the exempt line, marked');
  t.same(totals(4), ['489594', '13578', '93023', '596195']);
  t.same(
    ['TpoMov', 'TpoValor', 'ValorDR'].map((n) => valuesOf(docs[4].dte, n)[0]),
    ['D', '%', '21'],
    'DscRcgGlobal: a 21 % discount',
  );
  t.same(totals(5), ['0', null, '0', '0']);
  t.same(valuesOf(docs[5].dte, 'QtyItem'), [], 'a corrected text has no quantity');
  t.same(totals(6), ['177423', null, '33710', '211133']);
  t.same(totals(7), ['162575', '34567', '30889', '228031']);
  t.same(totals(8), ['0', null, '0', '0']);
  // The note's own reference comes after the SET's, with its CodRef.
  const ownReference = (caso: keyof typeof docs) => ['TpoDocRef', 'FolioRef', 'CodRef'].map((n) => valuesOf(docs[caso].dte, n).at(-1));
  t.same(ownReference(5), ['33', '1', '2'], 'CASO 5 corrects the text of factura 1');
  t.same(ownReference(6), ['33', '2', '3'], 'CASO 6 corrects the amounts of factura 2');
  t.same(ownReference(7), ['33', '3', '1'], 'CASO 7 cancels factura 3');
  t.same(ownReference(8), ['61', '1', '1'], 'CASO 8 cancels credit note 1');

  // The worker submits all eight; the stand-in checks each as the SII does and accepts them.
  await until(
    'every document of the set answered by the SII',
    async () => {
      const rows = await h.sql<{ status: string }[]>`SELECT status FROM dte_documents WHERE merchant_id = ${merchantId}`;
      return rows.length === 8 && rows.every((r) => r.status === 'accepted' || r.status === 'rejected');
    },
    90_000,
  );
  const rejections = standin.uploads.flatMap((u) => u.rejections.filter((r) => r.problems.length));
  t.same(rejections, [], 'the stand-in found nothing the SII would refuse');
  const statuses = await h.sql<{ dte_type: number; folio: number; status: string }[]>`
    SELECT dte_type, folio, status FROM dte_documents WHERE merchant_id = ${merchantId} ORDER BY dte_type, folio`;
  t.same(
    statuses.map((s) => `${s.dte_type}-${s.folio} ${s.status}`),
    ['33-1 accepted', '33-2 accepted', '33-3 accepted', '33-4 accepted', '56-1 accepted', '61-1 accepted', '61-2 accepted', '61-3 accepted'],
  );
  const uploaded = await h.sql<{ envio_xml: Buffer }[]>`SELECT envio_xml FROM dte_submissions WHERE merchant_id = ${merchantId}`;
  for (const [i, u] of uploaded.entries()) assertValid(t, u.envio_xml, 'EnvioDTE', `upload ${i + 1}: the EnvioDTE sent to the SII validates`);
  t.match((await h.api('GET', `/credit-notes/${caso6.body.id}`, { key })).body, { dte_status: 'accepted' }, "a note shows its DTE's status");
  t.match((await h.api('GET', `/debit-notes/${caso8.body.id}`, { key })).body, { dte_status: 'accepted' });
  // Four facturas, three credit notes and one debit note took their folios from ten of each.
  t.same((await h.api('GET', '/me', { key })).body.dte.folios_left, { 33: 6, 34: 0, 39: 0, 41: 0, 56: 9, 61: 7 }, 'GET /me counts every type left, 56 included');
});
