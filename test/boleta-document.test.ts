// The boleta (39, 41) as the pure builder makes it (docs/decisions.md §20): amounts VAT included that add up
// to the peso, valid against SII's EnvioBOLETA_v11.xsd, both signatures and the timbre checked by
// a reader that is not this service's code.
import type { Element } from '@xmldom/xmldom';
import t, { type Test } from 'tap';
import { boletaDteContent, buildEnvioBoleta, issueBoleta, soleEnvioBoleta, type BoletaType } from '../src/dte/boleta.js';
import { parseCaf } from '../src/dte/caf.js';
import { readPkcs12 } from '../src/dte/certificate.js';
import type { IssuerSetup } from '../src/dte/issue.js';
import type { InvoiceWithItems } from '../src/invoices/queries.js';
import { computeTotals } from '../src/money.js';
import { cafFile, DTE_PROFILE, merchantPkcs12, readDte, siiAuthority } from './helpers/dte-fixtures.js';
import { assertValid, validateXml } from './helpers/xsd.js';

const sii = siiAuthority();
t.teardown(() => sii.cleanup());

const identity = readPkcs12(merchantPkcs12({ password: 'clave' }), 'clave');
const cafs = { 39: parseCaf(cafFile(sii, { rut: DTE_PROFILE.rut, type: 39, from: 1, to: 10 })), 41: parseCaf(cafFile(sii, { rut: DTE_PROFILE.rut, type: 41, from: 1, to: 10 })) };
const issuer: IssuerSetup = {
  rut: DTE_PROFILE.rut,
  razonSocial: DTE_PROFILE.razon_social,
  giro: DTE_PROFILE.giro,
  acteco: DTE_PROFILE.acteco,
  direccion: DTE_PROFILE.direccion,
  comuna: DTE_PROFILE.comuna,
  ciudad: DTE_PROFILE.ciudad,
  resolucionNumero: DTE_PROFILE.resolucion_numero,
  resolucionFecha: DTE_PROFILE.resolucion_fecha,
  timezone: 'America/Santiago',
};

interface Item {
  description: string;
  quantity: string;
  unit_price: string;
  exempt?: boolean;
}

/** An invoice as the API stores one: net prices, totals by computeTotals. */
function invoice(items: Item[], opts: { exempt?: boolean; name?: string; email?: string } = {}): InvoiceWithItems {
  const totals = computeTotals(items, { currency: 'CLP', taxRate: '19', taxInclusive: false, taxExempt: opts.exempt ?? false });
  return {
    client_name: opts.name ?? '',
    client_email: opts.email ?? '',
    issue_date: '2026-03-02',
    is_tax_exempt: opts.exempt ?? false,
    tax_inclusive: false,
    tax_rate: '19.00',
    taxable_amount: totals.taxableAmount.toFixed(0),
    exempt_amount: totals.exemptAmount.toFixed(0),
    discount_total: totals.discountTotal.toFixed(0),
    global_discount_percent: null,
    global_discount_amount: null,
    global_discount_description: null,
    references: [],
    tax_total: totals.taxTotal.toFixed(0),
    total: totals.total.toFixed(0),
    items: items.map((it, i) => ({
      id: String(i),
      product_id: null,
      description: it.description,
      quantity: it.quantity,
      unit_price: it.unit_price,
      discount_percent: null,
      discount_amount: '0',
      exempt: opts.exempt === true || it.exempt === true,
      line_total: totals.lines[i]!.total.toFixed(0),
    })),
  } as unknown as InvoiceWithItems;
}

function issue(inv: InvoiceWithItems, type: BoletaType, folio: number) {
  const content = boletaDteContent(inv, type, folio, issuer);
  const issued = issueBoleta({ content, issuer, caf: cafs[type], identity, now: new Date('2026-03-02T15:04:05Z') });
  return { content, issued, envio: soleEnvioBoleta({ issuer, identity, type }, issued) };
}

/** The checks every boleta passes: schema, signatures, timbre and what its DD states. */
function checkEnvio(t: Test, envio: Buffer, label: string, dd: { TD: string; F: string; MNT: string; RSR: string; IT1: string }) {
  assertValid(t, envio, 'EnvioBOLETA', label);
  const read = readDte(envio);
  t.equal(read.doc.documentElement!.localName, 'EnvioBOLETA');
  t.match(envio.toString('latin1'), /^<\?xml version="1\.0" encoding="ISO-8859-1"\?>\n<EnvioBOLETA xmlns="http:\/\/www\.sii\.cl\/SiiDte" xmlns:xsi="http:\/\/www\.w3\.org\/2001\/XMLSchema-instance" xsi:schemaLocation="http:\/\/www\.sii\.cl\/SiiDte EnvioBOLETA_v11\.xsd" version="1\.0">/);
  t.ok(read.dteSignatureValid, 'the boleta signature verifies out of its envelope');
  t.ok(read.envelopeSignatureValid, 'the SetDTE signature verifies');
  t.ok(read.timbreValid, 'the timbre verifies with the CAF key');
  t.equal(read.value('RutReceptor'), '60803000-K');
  t.equal(read.value('NroResol'), '0');
  t.equal(read.value('FchResol'), '2014-08-22');
  t.equal(read.value('TmstFirmaEnv'), '2026-03-02T12:04:05');
  t.equal(read.value('IndServicio'), '3');
  t.equal(read.value('FmaPago'), null);
  t.equal(read.value('RznSocEmisor'), DTE_PROFILE.razon_social);
  t.equal(read.value('GiroEmisor'), DTE_PROFILE.giro);
  t.equal(read.value('RUTRecep'), '66666666-6');
  t.equal(read.value('CorreoRecep'), null);
  const ddElement = read.doc.getElementsByTagName('DD')[0]!;
  const field = (name: string) => Array.from(ddElement.childNodes).find((n) => (n as Element).localName === name)?.textContent ?? null;
  t.same(
    { RE: field('RE'), TD: field('TD'), F: field('F'), FE: field('FE'), RR: field('RR'), RSR: field('RSR'), MNT: field('MNT'), IT1: field('IT1') },
    { RE: DTE_PROFILE.rut, FE: '2026-03-02', RR: '66666666-6', ...dd },
  );
  return read;
}

t.test('a 39 with two taxed lines: amounts with VAT, checked by hand', async (t) => {
  const inv = invoice(
    [
      { description: 'Consultoría', quantity: '1', unit_price: '10000' },
      { description: 'Cable HDMI', quantity: '3', unit_price: '2521' },
    ],
    { name: 'María José Núñez', email: 'mj@example.cl' },
  );
  const { envio } = issue(inv, 39, 1);
  const read = checkEnvio(t, envio, 'boleta 39', { TD: '39', F: '1', MNT: '20900', RSR: 'María José Núñez', IT1: 'Consultoría' });
  // Net 10,000 + 3 × 2,521 = 17,563; IVA round(17,563 × 0.19) = 3,337; total 20,900.
  // As the boleta states it: MntNeto round(20,900 / 1.19) = 17,563, IVA 20,900 − 17,563 = 3,337.
  t.equal(read.value('MntNeto'), '17563');
  t.equal(read.value('IVA'), '3337');
  t.equal(read.value('MntExe'), null);
  t.equal(read.value('MntTotal'), '20900');
  t.equal(read.value('TasaIVA'), null);
  // Lines with VAT: 10,000 × 1.19 = 11,900; 2,521 × 1.19 = 2,999.99 a unit, round(3 × 2,999.99) = 9,000.
  t.same(read.values('MontoItem'), ['11900', '9000']);
  t.same(read.values('PrcItem'), ['11900', '2999.99']);
  t.same(read.values('QtyItem'), ['1', '3']);
  t.same(read.values('IndExe'), []);
  t.equal(read.value('RznSocRecep'), 'María José Núñez');
  t.equal(read.value('Contacto'), 'mj@example.cl');
  t.same(read.values('TpoDTE'), ['39']);
  t.same(read.values('NroDTE'), ['1']);
  // The schema is really applied: a factura's FmaPago has no place in a boleta.
  const withFmaPago = Buffer.from(envio.toString('latin1').replace('<IndServicio>3</IndServicio>', '<IndServicio>3</IndServicio><FmaPago>1</FmaPago>'), 'latin1');
  t.match(validateXml(withFmaPago, 'EnvioBOLETA'), { valid: false, errors: [/FmaPago/] });
});

t.test('a 39 with an exempt line, for a consumer known by nothing: the last taxed line takes the rounding', async (t) => {
  const inv = invoice([
    { description: 'Repuesto A', quantity: '1', unit_price: '1002' },
    { description: 'Repuesto B', quantity: '1', unit_price: '2002' },
    { description: 'Libro', quantity: '2', unit_price: '5000', exempt: true },
  ]);
  const { envio } = issue(inv, 39, 2);
  const read = checkEnvio(t, envio, 'boleta 39 with an exempt line', { TD: '39', F: '2', MNT: '13575', RSR: 'CONSUMIDOR FINAL', IT1: 'Repuesto A' });
  // Net taxed 1,002 + 2,002 = 3,004; IVA round(3,004 × 0.19 = 570.76) = 571; exempt 10,000; total 13,575.
  // MntNeto round(3,575 / 1.19 = 3,004.2) = 3,004, IVA 3,575 − 3,004 = 571.
  t.equal(read.value('MntNeto'), '3004');
  t.equal(read.value('IVA'), '571');
  t.equal(read.value('MntExe'), '10000');
  t.equal(read.value('MntTotal'), '13575');
  // round(1,002 × 1.19 = 1,192.38) = 1,192 and round(2,002 × 1.19 = 2,382.38) = 2,382 add up to 3,574:
  // the last taxed line takes the missing peso (2,383), its price restated so that it still adds up.
  t.same(read.values('MontoItem'), ['1192', '2383', '10000']);
  t.same(read.values('PrcItem'), ['1192.38', '2383', '5000']);
  t.same(read.values('IndExe'), ['1']);
  t.equal(read.value('RznSocRecep'), null);
  t.equal(read.value('Contacto'), null);
});

t.test('a 41: exempt amount and total only', async (t) => {
  const inv = invoice(
    [
      { description: 'Curso de capacitación', quantity: '1', unit_price: '15000' },
      { description: 'Material del curso', quantity: '2', unit_price: '2500' },
    ],
    { exempt: true, name: 'Pedro Soto' },
  );
  const { envio } = issue(inv, 41, 1);
  const read = checkEnvio(t, envio, 'boleta 41', { TD: '41', F: '1', MNT: '20000', RSR: 'Pedro Soto', IT1: 'Curso de capacitación' });
  t.equal(read.value('MntNeto'), null);
  t.equal(read.value('IVA'), null);
  t.equal(read.value('MntExe'), '20000');
  t.equal(read.value('MntTotal'), '20000');
  t.same(read.values('MontoItem'), ['15000', '5000']);
  t.equal(read.value('RznSocRecep'), 'Pedro Soto');
  t.equal(read.value('Contacto'), null);
});

t.test('39 and 41 in one EnvioBOLETA', async (t) => {
  const a = issue(invoice([{ description: 'Taza', quantity: '2', unit_price: '3000' }]), 39, 3).issued;
  const b = issue(invoice([{ description: 'Libro', quantity: '1', unit_price: '8000' }], { exempt: true }), 41, 2).issued;
  const c = issue(invoice([{ description: 'Plato', quantity: '1', unit_price: '4000' }]), 39, 4).issued;
  const envio = buildEnvioBoleta(
    { rutEmisor: issuer.rut, rutEnvia: identity.subjectRut, resolucionFecha: issuer.resolucionFecha, resolucionNumero: 0, signedAt: a.signedAt },
    [
      { type: 39, xml: a.signedDte },
      { type: 41, xml: b.signedDte },
      { type: 39, xml: c.signedDte },
    ],
    identity,
  );
  assertValid(t, envio, 'EnvioBOLETA', 'an envelope of three boletas');
  const read = readDte(envio);
  t.ok(read.envelopeSignatureValid);
  t.same(read.values('TpoDTE'), ['39', '41']);
  t.same(read.values('NroDTE'), ['2', '1']);
  t.same(read.values('MntTotal'), ['7140', '8000', '4760']);
});
