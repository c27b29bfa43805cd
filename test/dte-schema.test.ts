// Every tax document this service builds is valid against SII's published XML schemas (checked by
// xmllint, test/helpers/xsd.ts): the EnvioDTE of an invoice of type 33 and 34, each signed DTE on
// its own as it is stored, and the credit note 61 of a cancel, alone and in the EnvioDTE uploaded.
import t from 'tap';
import { testApp } from './helpers/app.js';
import { dteMerchant, siiAuthority } from './helpers/dte-fixtures.js';
import { invoiceBody } from './helpers/fixtures.js';
import { startSiiStandin } from './helpers/sii-standin.js';
import { until } from './helpers/until.js';
import { assertValid, validateXml } from './helpers/xsd.js';

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

const client = {
  name: 'Ferretería Ñuñoa Ltda',
  email: 'compras@ferreteria.cl',
  rut: '12.345.678-5',
  address: 'Av. Irarrázaval 2345',
  giro: 'Ferretería',
  comuna: 'Ñuñoa',
  ciudad: 'Santiago',
};

t.test('SII schemas', async (t) => {
  const standin = await startSiiStandin(t);
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, SII_BASE_URL: standin.url });
  await h.startWorker();
  const { key, merchantId } = await h.key(['*']);
  await dteMerchant(h, merchantId, sii, [
    { type: 33, from: 1, to: 10 },
    { type: 34, from: 1, to: 10 },
    { type: 61, from: 1, to: 10 },
  ]);

  async function sentInvoice(extra: Record<string, unknown> = {}) {
    const created = await h.api('POST', '/invoices', {
      key,
      body: invoiceBody({
        client,
        items: [
          { description: 'Taladro percutor 800 W', quantity: 2, unit_price: 45990 },
          { description: 'Brocas para concreto (juego de 5)', quantity: 1.5, unit_price: 3333.33 },
        ],
        send_immediately: true,
        ...extra,
      }),
    });
    if (created.status !== 201) throw new Error(`POST /invoices: ${created.status} ${created.raw}`);
    return created.body.invoice_id as string;
  }
  const envio = async (id: string) => (await h.app.inject({ method: 'GET', url: `/api/v1/external/invoices/${id}/dte.xml`, headers: { 'x-api-key': key } })).rawPayload;
  const signedDte = async (id: string, type: number) =>
    (await h.sql<{ signed_dte: string }[]>`SELECT signed_dte FROM dte_documents WHERE invoice_id = ${id} AND dte_type = ${type}`)[0]!.signed_dte;

  t.test('the validator refuses a broken EnvioDTE, naming the element', async (t) => {
    const xml = (await envio(await sentInvoice())).toString('latin1');
    const broken = (s: string) => Buffer.from(s, 'latin1');

    const badType = validateXml(broken(xml.replace('<TipoDTE>33</TipoDTE>', '<TipoDTE>99</TipoDTE>')), 'EnvioDTE');
    t.notOk(badType.valid, 'a TipoDTE outside the enumeration is refused');
    t.ok(badType.errors.some((e) => /element TipoDTE: .*'99'/.test(e)), 'the message names TipoDTE and its value', { errors: badType.errors });

    const noReceiver = validateXml(broken(xml.replace(/<RUTRecep>[^<]*<\/RUTRecep>/, '')), 'EnvioDTE');
    t.notOk(noReceiver.valid, 'a DTE without RUTRecep is refused');
    t.ok(noReceiver.errors.some((e) => e.includes('RUTRecep')), 'the message names the missing RUTRecep', { errors: noReceiver.errors });

    const unsigned = validateXml(broken(xml.replace(/<SignatureValue>[^<]*<\/SignatureValue>/, '')), 'EnvioDTE');
    t.ok(unsigned.errors.some((e) => e.includes('xmldsig#}SignatureValue')), 'the signature is checked too: one without SignatureValue is refused', {
      errors: unsigned.errors,
    });

    t.notOk(validateXml('<DTE version="1.0"/>', 'DTE').valid, 'a DTE outside the SII namespace is refused');
  });

  t.test('an invoice: type 33, its EnvioDTE and its signed DTE', async (t) => {
    const id = await sentInvoice();
    assertValid(t, await envio(id), 'EnvioDTE', 'the EnvioDTE of GET dte.xml');
    assertValid(t, await signedDte(id, 33), 'DTE', 'the signed DTE as stored');
  });

  t.test('a tax-exempt invoice: type 34, its EnvioDTE and its signed DTE', async (t) => {
    const id = await sentInvoice({ is_tax_exempt: true });
    assertValid(t, await envio(id), 'EnvioDTE', 'the EnvioDTE of GET dte.xml');
    assertValid(t, await signedDte(id, 34), 'DTE', 'the signed DTE as stored');
  });

  t.test('the credit note of a cancel: type 61, alone and in the EnvioDTE uploaded to SII', async (t) => {
    const id = await sentInvoice();
    const cancelled = await h.api('POST', `/invoices/${id}/cancel`, { key, body: { reason: 'Pedido duplicado' } });
    t.equal(cancelled.status, 200);
    assertValid(t, await signedDte(id, 61), 'DTE', 'the signed credit note as stored');
    const uploaded = await until('the credit note uploaded', async () => {
      const [row] = await h.sql<{ envio_xml: Buffer }[]>`
        SELECT s.envio_xml FROM dte_submissions s JOIN dte_documents d ON d.submission_id = s.id
         WHERE d.invoice_id = ${id} AND d.dte_type = 61`;
      return row?.envio_xml;
    }, 60_000);
    assertValid(t, uploaded, 'EnvioDTE', 'the EnvioDTE uploaded with the credit note');
  });
});
