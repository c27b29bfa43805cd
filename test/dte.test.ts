// Chilean tax documents (docs/decisions.md §15): a merchant set up with its tax profile, a certificate and
// CAFs gets, on sending a CLP invoice, a folio and a signed EnvioDTE that an outsider can check:
// both XMLDSig signatures verify with xml-crypto and the certificate in KeyInfo, the timbre with
// the CAF's own public key, and every amount read back equals the invoice's.
import t from 'tap';
import { testApp, type TestApp } from './helpers/app.js';
import { addCaf } from '../src/dte/service.js';
import { cafFile, DTE_PROFILE, dteMerchant, readDte, siiAuthority } from './helpers/dte-fixtures.js';
import { facturaBody, invoiceBody } from './helpers/fixtures.js';
import { clock, dateInZone } from '../src/clock.js';
import { setRate } from '../src/rates/service.js';

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

async function dteXml(h: TestApp, key: string, invoiceId: string) {
  const res = await h.app.inject({ method: 'GET', url: `/api/v1/external/invoices/${invoiceId}/dte.xml`, headers: { 'x-api-key': key } });
  return { status: res.statusCode, headers: res.headers, raw: res.rawPayload, json: res.statusCode === 200 ? null : res.json() };
}

t.test('DTE', async (t) => {
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile });
  const { key, merchantId } = await h.key(['*']);
  await dteMerchant(h, merchantId, sii, [
    { type: 33, from: 1, to: 3 },
    { type: 34, from: 1, to: 5 },
  ]);

  t.test('a sent invoice gets type 33, the first folio, a signed EnvioDTE that verifies and amounts equal to its own', async (t) => {
    const body = facturaBody({
      client: { name: 'Ñandú & Hijos "Ltda"', email: 'pagos@nandu.cl', rut: '12.345.678-5', address: 'Av. Ñuble 99' },
      items: [
        { description: 'Consultoría de diseño', quantity: 2, unit_price: 5000 },
        { description: 'Horas de soporte técnico', quantity: 1.5, unit_price: 3333.33 },
      ],
      send_immediately: true,
    });
    const created = await h.api('POST', '/invoices', { key, body });
    t.equal(created.status, 201);
    const invoice = (await h.api('GET', `/invoices/${created.body.invoice_id}`, { key })).body;
    t.match(invoice, { dte_type: 33, dte_folio: 1, dte_status: 'pending', dte_track_id: null });

    const xml = await dteXml(h, key, invoice.id);
    t.equal(xml.status, 200);
    t.equal(xml.headers['content-type'], 'application/xml; charset=ISO-8859-1');
    t.match(xml.headers['content-disposition'], /filename="DTE-33-1\.xml"/);
    t.ok(xml.raw.subarray(0, 60).toString('latin1').startsWith('<?xml version="1.0" encoding="ISO-8859-1"?>'), 'declared ISO-8859-1');
    t.ok(xml.raw.includes(Buffer.from('Ñandú', 'latin1')) && !xml.raw.includes(Buffer.from('Ñ', 'utf8')), 'written in ISO-8859-1, not UTF-8');

    const dte = readDte(xml.raw);
    t.ok(dte.dteSignatureValid, 'the Documento signature verifies on the DTE taken out of its envelope');
    t.ok(dte.envelopeSignatureValid, 'the EnvioDTE signature over SetDTE verifies');
    t.ok(dte.timbreValid, "the timbre's FRMT verifies with the CAF's public key");
    t.equal(dte.value('TipoDTE'), '33');
    t.equal(dte.value('Folio'), '1');
    t.equal(dte.value('FchEmis'), invoice.issue_date);
    t.equal(dte.value('RUTEmisor'), '76086428-5', 'RUTs without dots');
    t.equal(dte.value('RUTRecep'), '12345678-5');
    t.equal(dte.value('RznSocRecep'), 'Ñandú & Hijos "Ltda"');
    t.equal(dte.value('Acteco'), '620200');
    t.equal(dte.value('RutReceptor'), '60803000-K', 'the Carátula is addressed to SII');
    t.equal(dte.value('RutEnvia'), '11111111-1', "the certificate holder's RUT");
    t.equal(dte.value('NroResol'), '0', 'certificación: resolution 0');
    t.equal(dte.value('FchResol'), '2014-08-22');
    const whole = (s: string) => String(Number(s));
    t.equal(dte.value('MntNeto'), whole(invoice.subtotal));
    t.equal(dte.value('IVA'), whole(invoice.tax_total));
    t.equal(dte.value('MntTotal'), whole(invoice.total));
    t.equal(dte.value('TasaIVA'), '19');
    t.equal(Number(dte.value('MntNeto')) + Number(dte.value('IVA')), Number(invoice.total), 'MntNeto + IVA = MntTotal');
    t.same(dte.values('MontoItem'), invoice.items.map((i: any) => whole(i.line_total)));
    t.same(dte.values('QtyItem'), ['2', '1.5']);
    t.same(dte.values('PrcItem'), ['5000', '3333.33']);
    t.same(dte.values('NmbItem'), ['Consultoría de diseño', 'Horas de soporte técnico']);
    t.equal(dte.value('MNT'), whole(invoice.total), "the timbre's amount");
    t.equal(dte.value('IT1'), 'Consultoría de diseño');
    t.equal(dte.value('MntBruto'), null, 'net lines');

    const events = await h.sql`SELECT type, payload FROM events WHERE merchant_id = ${merchantId} AND type = 'invoice.sent'`;
    t.match((events[0]!.payload as any).data.object, { dte_type: 33, dte_folio: 1, dte_status: 'pending' }, 'the event carries the DTE too');
  });

  t.test('a tax-inclusive invoice: gross lines (MntBruto), and MntNeto + IVA = MntTotal = the total', async (t) => {
    const created = await h.api('POST', '/invoices', {
      key,
      body: facturaBody({ tax_inclusive: true, items: [{ description: 'Plan mensual', quantity: 1, unit_price: 86710 }], send_immediately: true }),
    });
    const invoice = (await h.api('GET', `/invoices/${created.body.invoice_id}`, { key })).body;
    t.match(invoice, { dte_type: 33, dte_folio: 2, total: '86710.00', subtotal: '72866.00', tax_total: '13844.00' });
    const dte = readDte((await dteXml(h, key, invoice.id)).raw);
    t.ok(dte.dteSignatureValid && dte.envelopeSignatureValid && dte.timbreValid);
    t.equal(dte.value('MntBruto'), '1');
    t.same([dte.value('MntNeto'), dte.value('IVA'), dte.value('MntTotal')], ['72866', '13844', '86710']);
    t.same(dte.values('MontoItem'), ['86710']);
  });

  t.test('a tax-exempt invoice is type 34 with MntExe and no VAT, to the client company with its giro and comuna', async (t) => {
    const created = await h.api('POST', '/invoices', {
      key,
      body: facturaBody({ is_tax_exempt: true, items: [{ description: 'Curso “avanzado” — 3 días €', quantity: 3, unit_price: 25000 }], send_immediately: true }),
    });
    const invoice = (await h.api('GET', `/invoices/${created.body.invoice_id}`, { key })).body;
    t.match(invoice, { dte_type: 34, dte_folio: 1, dte_status: 'pending' });
    const xml = await dteXml(h, key, invoice.id);
    t.match(xml.headers['content-disposition'], /DTE-34-1\.xml/);
    const dte = readDte(xml.raw);
    t.ok(dte.dteSignatureValid && dte.envelopeSignatureValid && dte.timbreValid);
    t.equal(dte.value('TipoDTE'), '34');
    t.equal(dte.value('MntExe'), '75000');
    t.equal(dte.value('MntTotal'), '75000');
    t.equal(dte.value('IVA'), null);
    t.equal(dte.value('MntNeto'), null);
    t.equal(dte.value('RUTRecep'), '77123456-9');
    t.equal(dte.value('GiroRecep'), 'Comercio al por mayor');
    t.equal(dte.value('DirRecep'), 'Av. Vicuña Mackenna 4860');
    t.equal(dte.value('CmnaRecep'), 'Macul');
    t.equal(dte.value('CiudadRecep'), 'Santiago');
    t.equal(dte.value('NmbItem'), 'Curso "avanzado" - 3 días EUR', 'characters ISO-8859-1 lacks, in their plain form');
  });

  t.test('a client without a Chilean RUT (a consumer) gets no factura: not_applicable, no folio; nor does the generic RUT', async (t) => {
    for (const rut of [undefined, '66.666.666-6', 'DE123456789']) {
      const body = invoiceBody({ send_immediately: true });
      if (rut) body.client.rut = rut;
      const created = await h.api('POST', '/invoices', { key, body });
      t.equal(created.status, 201);
      const invoice = (await h.api('GET', `/invoices/${created.body.invoice_id}`, { key })).body;
      t.match(invoice, { status: 'sent', dte_type: null, dte_folio: null, dte_status: 'not_applicable' }, `client RUT ${rut ?? 'none'}`);
      t.equal((await dteXml(h, key, invoice.id)).status, 404);
    }
  });

  t.test('a Chilean RUT without giro, address or comuna: the send is refused naming each, nothing created or numbered', async (t) => {
    const [before] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM invoices WHERE merchant_id = ${merchantId}`;
    const refused = await h.api('POST', '/invoices', {
      key,
      body: invoiceBody({ client: { name: 'Sin Giro Ltda', email: 'singiro@example.cl', rut: '12.345.678-5' }, send_immediately: true }),
    });
    t.equal(refused.status, 422);
    t.equal(refused.body.code, 'validation_error');
    t.same(
      refused.body.details.errors.map((f: { path: string }) => f.path),
      ['client.giro', 'client.address', 'client.comuna'],
    );
    const [after] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM invoices WHERE merchant_id = ${merchantId}`;
    t.equal(after!.n, before!.n, 'no invoice created');

    const draft = await h.api('POST', '/invoices', { key, body: invoiceBody({ client: { name: 'Sin Comuna Ltda', email: 'sincomuna@example.cl', rut: '12.345.678-5', giro: 'Minería', address: 'Calle 1' } }) });
    const send = await h.api('POST', `/invoices/${draft.body.invoice_id}/send`, { key });
    t.equal(send.status, 422);
    t.same(send.body.details.errors.map((f: { path: string }) => f.path), ['client.comuna']);
    const still = (await h.api('GET', `/invoices/${draft.body.invoice_id}`, { key })).body;
    t.match(still, { status: 'draft', invoice_number: null, dte_folio: null }, 'still a draft, not numbered');
  });

  t.test('another currency: not_applicable, no folio, no document', async (t) => {
    // The merchant's today, not the database's: they differ for three hours of every UTC night.
    await setRate(h.sql, merchantId, 'USD', dateInZone(clock.now(), 'America/Santiago'), '950');
    const created = await h.api('POST', '/invoices', { key, body: facturaBody({ currency: 'USD', send_immediately: true }) });
    t.equal(created.status, 201);
    const invoice = (await h.api('GET', `/invoices/${created.body.invoice_id}`, { key })).body;
    t.match(invoice, { dte_type: null, dte_folio: null, dte_status: 'not_applicable' });
    const xml = await dteXml(h, key, invoice.id);
    t.equal(xml.status, 404);
    t.match(xml.json, { code: 'dte_not_found' });
  });

  t.test('GET /me: DTE enabled and the folios left per type', async (t) => {
    const me = await h.api('GET', '/me', { key });
    t.same(me.body.dte, { enabled: true, folios_left: { 33: 1, 34: 4, 39: 0, 41: 0, 56: 0, 61: 0 } });
  });

  t.test('no folio left: the send is refused with merchant_misconfigured and nothing changes', async (t) => {
    const last = await h.api('POST', '/invoices', { key, body: facturaBody({ send_immediately: true }) });
    t.equal(last.status, 201, 'folio 3, the last one');
    const [before] = await h.sql`SELECT last_number FROM invoice_counters WHERE merchant_id = ${merchantId}`;
    const draft = await h.api('POST', '/invoices', { key, body: facturaBody() });
    const sent = await h.api('POST', `/invoices/${draft.body.invoice_id}/send`, { key });
    t.equal(sent.status, 400);
    t.match(sent.body, { code: 'merchant_misconfigured', details: { dte_type: 33 } });
    const still = (await h.api('GET', `/invoices/${draft.body.invoice_id}`, { key })).body;
    t.match(still, { status: 'draft', invoice_number: null, dte_folio: null, dte_status: null });
    const immediate = await h.api('POST', '/invoices', { key, body: facturaBody({ send_immediately: true }) });
    t.equal(immediate.status, 400);
    t.match(immediate.body, { code: 'merchant_misconfigured', details: { dte_type: 33 } });
    const [after] = await h.sql`SELECT last_number FROM invoice_counters WHERE merchant_id = ${merchantId}`;
    t.equal(after!.last_number, before!.last_number, 'no invoice number consumed');
    const [jobs] = await h.sql`SELECT count(*)::int AS n FROM emails WHERE invoice_id = ${draft.body.invoice_id}`;
    t.equal(jobs!.n, 0, 'no e-mail queued');
    t.equal((await h.api('GET', '/me', { key })).body.dte.folios_left[33], 0);

    // A new CAF lets the same draft go, with the next folio of the new range.
    await addCaf(h.sql, h.ctx.config, h.ctx.secrets, merchantId, cafFile(sii, { rut: DTE_PROFILE.rut, type: 33, from: 101, to: 110, authorizedOn: '2026-02-01' }));
    const retried = await h.api('POST', `/invoices/${draft.body.invoice_id}/send`, { key });
    t.equal(retried.status, 200);
    t.match((await h.api('GET', `/invoices/${draft.body.invoice_id}`, { key })).body, { dte_type: 33, dte_folio: 101 });
  });

  t.test('a merchant without DTE setup works as before: dte_* null, no document', async (t) => {
    const plain = await h.key(['*']);
    const created = await h.api('POST', '/invoices', { key: plain.key, body: facturaBody({ send_immediately: true }) });
    t.equal(created.status, 201);
    t.equal(created.body.invoice_number, 'INV-000001');
    const invoice = (await h.api('GET', `/invoices/${created.body.invoice_id}`, { key: plain.key })).body;
    t.match(invoice, { dte_type: null, dte_folio: null, dte_status: null, dte_track_id: null });
    t.equal((await dteXml(h, plain.key, invoice.id)).status, 404);
    t.same((await h.api('GET', '/me', { key: plain.key })).body.dte, { enabled: false, folios_left: { 33: 0, 34: 0, 39: 0, 41: 0, 56: 0, 61: 0 } });
    const other = await dteXml(h, plain.key, (await h.sql`SELECT id FROM invoices WHERE merchant_id = ${merchantId} AND dte_folio = 1 LIMIT 1`)[0]!.id);
    t.match(other.json, { code: 'invoice_not_found' }, "another merchant's invoice is not found");
  });
});
