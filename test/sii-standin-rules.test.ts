// The SII stand-in refuses, one document at a time, what SII refuses (docs/decisions.md §17): a receiver
// not named in full, amounts that do not add up to the peso, a note without the reference to what
// it modifies, a timbre that says otherwise than its document. The documents are written here by
// hand, so that each breaks one rule and nothing else, then stamped, signed and enveloped by the
// project's own code and uploaded with its SII client, as the submission job does.
import t, { type Test } from 'tap';
import { create } from 'xmlbuilder2';
import { parseCaf } from '../src/dte/caf.js';
import { readPkcs12 } from '../src/dte/certificate.js';
import { SII_NAMESPACE } from '../src/dte/document.js';
import { buildEnvioDte } from '../src/dte/envelope.js';
import { signElement } from '../src/dte/sign.js';
import { documentState, fetchToken, uploadEnvio, uploadState } from '../src/sii/sii-client.js';
import { stampTimbre } from '../src/dte/ted.js';
import { cafFile, DTE_PROFILE, merchantPkcs12, siiAuthority } from './helpers/dte-fixtures.js';
import { startSiiStandin } from './helpers/sii-standin.js';

type Fields = Record<string, string>;

interface Spec {
  type: 33 | 34 | 61;
  grossLines?: boolean;
  receptor?: Fields;
  lines: Fields[];
  globals?: Fields[];
  totals: Fields;
  references?: Fields[];
  /** The timbre's data where it says otherwise than the document. */
  timbre?: { TD?: number; F?: number; MNT?: string };
}

const sii = siiAuthority();
t.teardown(() => sii.cleanup());
const identity = readPkcs12(merchantPkcs12({ password: 'clave' }), 'clave');
const cafs = Object.fromEntries([33, 34, 61].map((type) => [type, parseCaf(cafFile(sii, { rut: DTE_PROFILE.rut, type, from: 1, to: 1000 }))]));
const standin = await startSiiStandin(t);
const token = await fetchToken(standin.url, identity);

const ISSUED = '2026-03-02';
const SIGNED_AT = '2026-03-02T10:00:00';
const EMISOR = {
  RUTEmisor: DTE_PROFILE.rut,
  RznSoc: DTE_PROFILE.razon_social,
  GiroEmis: DTE_PROFILE.giro,
  Acteco: DTE_PROFILE.acteco,
  DirOrigen: DTE_PROFILE.direccion,
  CmnaOrigen: DTE_PROFILE.comuna,
  CiudadOrigen: DTE_PROFILE.ciudad,
};
const RECEPTOR: Fields = {
  RUTRecep: '77123456-9',
  RznSocRecep: 'Distribuidora Los Aromos Ltda',
  GiroRecep: 'Comercio al por mayor',
  DirRecep: 'Av. Vicuña Mackenna 4860',
  CmnaRecep: 'Macul',
};

// Net lines: 3 × 1000 less 10 %; 2.3 × 1285 = 2955.5, which half up is 2956 (2955 in floating
// point), less 56; an exempt line. 10 % off the taxable 5600, 500 off the exempt 2500.
// Net 5040, VAT 957.6 → 958, exempt 2000, total 7998.
const FACTURA: Spec = {
  type: 33,
  lines: [
    { NroLinDet: '1', NmbItem: 'Consultoría', QtyItem: '3', PrcItem: '1000', DescuentoPct: '10', DescuentoMonto: '300', MontoItem: '2700' },
    { NroLinDet: '2', NmbItem: 'Soporte remoto', QtyItem: '2.3', PrcItem: '1285', DescuentoMonto: '56', MontoItem: '2900' },
    { NroLinDet: '3', IndExe: '1', NmbItem: 'Curso', QtyItem: '2', PrcItem: '1250', MontoItem: '2500' },
  ],
  globals: [
    { NroLinDR: '1', TpoMov: 'D', GlosaDR: 'Cliente frecuente', TpoValor: '%', ValorDR: '10' },
    { NroLinDR: '2', TpoMov: 'D', GlosaDR: 'Beca', TpoValor: '$', ValorDR: '500', IndExeDR: '1' },
  ],
  totals: { MntNeto: '5040', MntExe: '2000', TasaIVA: '19', IVA: '958', MntTotal: '7998' },
};

// Lines with VAT: 2 × 5950 less 5 % is 11305, less 305 is 11000 gross; its net 9243.7 → 9244.
const FACTURA_BRUTA: Spec = {
  type: 33,
  grossLines: true,
  lines: [{ NroLinDet: '1', NmbItem: 'Plan mensual', QtyItem: '2', PrcItem: '5950', DescuentoPct: '5', DescuentoMonto: '595', MontoItem: '11305' }],
  globals: [{ NroLinDR: '1', TpoMov: 'D', TpoValor: '$', ValorDR: '305' }],
  totals: { MntNeto: '9244', TasaIVA: '19', IVA: '1756', MntTotal: '11000' },
};

// Every line of a factura exenta is exempt, IndExe written or not; 10 % off 15000.
const EXENTA: Spec = {
  type: 34,
  lines: [
    { NroLinDet: '1', NmbItem: 'Curso de capacitación', QtyItem: '1', PrcItem: '10000', MontoItem: '10000' },
    { NroLinDet: '2', IndExe: '1', NmbItem: 'Material', QtyItem: '4', PrcItem: '1250', MontoItem: '5000' },
  ],
  globals: [{ NroLinDR: '1', TpoMov: 'D', TpoValor: '%', ValorDR: '10' }],
  totals: { MntExe: '13500', MntTotal: '13500' },
};

const CANCELS = { NroLinRef: '1', TpoDocRef: '33', FolioRef: '10', FchRef: '2026-02-27', CodRef: '1', RazonRef: 'Anula documento' };
const NOTA_ANULA: Spec = {
  type: 61,
  lines: [{ NroLinDet: '1', NmbItem: 'Consultoría', QtyItem: '2', PrcItem: '5000', MontoItem: '10000' }],
  totals: { MntNeto: '10000', TasaIVA: '19', IVA: '1900', MntTotal: '11900' },
  references: [CANCELS],
};

const NOTA_TEXTO: Spec = {
  type: 61,
  lines: [{ NroLinDet: '1', NmbItem: 'Corrige giro del receptor', MontoItem: '0' }],
  totals: { MntTotal: '0' },
  references: [{ ...CANCELS, CodRef: '2', RazonRef: 'Corrige giro' }],
};

let nextFolio = 1;

function signedDte(spec: Spec, folio: number): string {
  const receptor = spec.receptor ?? RECEPTOR;
  const caf = cafs[spec.type]!;
  const timbre = stampTimbre(
    {
      RE: DTE_PROFILE.rut,
      TD: spec.timbre?.TD ?? spec.type,
      F: spec.timbre?.F ?? folio,
      FE: ISSUED,
      RR: receptor.RUTRecep ?? '',
      RSR: (receptor.RznSocRecep ?? '').slice(0, 40),
      MNT: spec.timbre?.MNT ?? spec.totals.MntTotal ?? '0',
      IT1: spec.lines[0]!.NmbItem!,
      CAF: caf.cafXml,
      TSTED: SIGNED_AT,
    },
    caf.privateKeyPem,
  );
  const documento = {
    '@ID': `F${folio}T${spec.type}`,
    Encabezado: {
      IdDoc: { TipoDTE: String(spec.type), Folio: String(folio), FchEmis: ISSUED, ...(spec.grossLines ? { MntBruto: '1' } : {}) },
      Emisor: EMISOR,
      Receptor: receptor,
      Totales: spec.totals,
    },
    Detalle: spec.lines,
    ...(spec.globals?.length ? { DscRcgGlobal: spec.globals } : {}),
    ...(spec.references?.length ? { Referencia: spec.references } : {}),
    TED: timbre.element,
    TmstFirma: SIGNED_AT,
  };
  const xml = create({ DTE: { '@xmlns': SII_NAMESPACE, '@version': '1.0', Documento: documento } }).end({ headless: true });
  return signElement(xml, 'Documento', identity);
}

/** The documents in one signed EnvioDTE, uploaded; what the stand-in recorded and what QueryEstUp answers. */
async function submit(specs: Spec[]) {
  const folios = specs.map(() => nextFolio++);
  const envio = buildEnvioDte(
    { rutEmisor: DTE_PROFILE.rut, rutEnvia: identity.subjectRut, resolucionFecha: DTE_PROFILE.resolucion_fecha, resolucionNumero: 0, signedAt: SIGNED_AT },
    specs.map((spec, i) => ({ type: spec.type, xml: signedDte(spec, folios[i]!) })),
    identity,
  );
  const trackId = await uploadEnvio(standin.url, token, { sender: identity.subjectRut, company: DTE_PROFILE.rut, envio, filename: 'envio.xml' });
  const upload = standin.uploads.find((u) => u.trackId === trackId)!;
  const state = await uploadState(standin.url, token, DTE_PROFILE.rut, trackId);
  return { upload, state, folios, counts: [...state.counts].sort((a, b) => a.type - b.type) };
}

/** QueryEstDte's ESTADO for a document uploaded here. */
async function documentCode(type: number, folio: number): Promise<string> {
  const d = { querier: identity.subjectRut, company: DTE_PROFILE.rut, receiver: RECEPTOR.RUTRecep!, type, folio, issueDate: ISSUED, total: '0' };
  return (await documentState(standin.url, token, d)).code;
}

/** The document alone in an upload is rejected in the counts, not accepted by QueryEstDte, for exactly these reasons. */
async function refused(t: Test, spec: Spec, problems: string[] | ((folio: number) => string[])): Promise<void> {
  const { upload, state, folios } = await submit([spec]);
  const folio = folios[0]!;
  t.same(upload.rejections, [{ type: spec.type, folio, problems: typeof problems === 'function' ? problems(folio) : problems }], 'the reasons');
  t.same(upload.documents, [{ type: spec.type, folio }], 'documents keeps its shape');
  t.equal(state.code, 'EPR', 'the upload itself is processed');
  t.same(state.counts, [{ type: spec.type, informed: 1, accepted: 0, rejected: 1, objections: 0 }], 'the document counted as rejected');
  t.equal(await documentCode(spec.type, folio), 'FAU', 'QueryEstDte does not have it');
}

const line = (spec: Spec, index: number, fields: Fields): Fields[] => spec.lines.map((l, i) => (i === index ? { ...l, ...fields } : l));
const without = (fields: Fields, name: string): Fields => Object.fromEntries(Object.entries(fields).filter(([key]) => key !== name));

t.test('correct documents pass: line discounts, exempt lines, global discounts, gross lines, notes', async (t) => {
  const specs = [FACTURA, FACTURA_BRUTA, EXENTA, NOTA_ANULA, NOTA_TEXTO];
  const { upload, state, folios, counts } = await submit(specs);
  t.same(
    upload.rejections.map((r) => r.problems),
    specs.map(() => []),
    'no problems',
  );
  t.equal(state.code, 'EPR');
  t.same(counts, [
    { type: 33, informed: 2, accepted: 2, rejected: 0, objections: 0 },
    { type: 34, informed: 1, accepted: 1, rejected: 0, objections: 0 },
    { type: 61, informed: 2, accepted: 2, rejected: 0, objections: 0 },
  ]);
  for (const [i, spec] of specs.entries()) t.equal(await documentCode(spec.type, folios[i]!), 'DOK', `QueryEstDte has the type ${spec.type}`);
});

t.test('a factura, an exenta or a note names its receiver in full, and not as a final consumer', async (t) => {
  await refused(t, { ...FACTURA, receptor: without(RECEPTOR, 'GiroRecep') }, ['Receptor has no GiroRecep']);
  await refused(t, { ...EXENTA, receptor: without(without(RECEPTOR, 'DirRecep'), 'CmnaRecep') }, ['Receptor has no DirRecep', 'Receptor has no CmnaRecep']);
  await refused(t, { ...NOTA_ANULA, receptor: { ...RECEPTOR, RUTRecep: '66666666-6' } }, ["RUTRecep 66666666-6 is the final consumer's, for boletas (39, 41) only, not type 61"]);
});

t.test('each line adds up to the peso', async (t) => {
  // Totals follow the lines as stated, so the line is the one problem.
  await refused(
    t,
    { ...FACTURA, lines: line(FACTURA, 0, { MontoItem: '3000' }), totals: { MntNeto: '5310', MntExe: '2000', TasaIVA: '19', IVA: '1009', MntTotal: '8319' } },
    ['Detalle 1 MontoItem 3000 != 2700 computed'],
  );
  await refused(
    t,
    { ...FACTURA, lines: line(FACTURA, 0, { DescuentoMonto: '200', MontoItem: '2800' }), totals: { MntNeto: '5130', MntExe: '2000', TasaIVA: '19', IVA: '975', MntTotal: '8105' } },
    ['Detalle 1 DescuentoMonto 200 != 300 computed'],
  );
  // 2.3 × 1285 rounded in floating point.
  await refused(
    t,
    { ...FACTURA, lines: line(FACTURA, 1, { MontoItem: '2899' }), totals: { MntNeto: '5039', MntExe: '2000', TasaIVA: '19', IVA: '957', MntTotal: '7996' } },
    ['Detalle 2 MontoItem 2899 != 2900 computed'],
  );
});

t.test('the totals add up to the peso', async (t) => {
  await refused(t, { ...FACTURA, totals: { ...FACTURA.totals, MntNeto: '5600', IVA: '1064', MntTotal: '8664' } }, ['MntNeto 5600 != 5040 computed']);
  await refused(t, { ...FACTURA, totals: { ...FACTURA.totals, IVA: '957', MntTotal: '7997' } }, ['IVA 957 != 958 computed']);
  await refused(t, { ...FACTURA, totals: { ...FACTURA.totals, MntTotal: '7999' } }, ['MntTotal 7999 != 7998 computed']);
  await refused(t, { ...FACTURA, totals: { ...without(FACTURA.totals, 'MntExe'), MntTotal: '5998' } }, ['MntExe missing, 2000 computed']);
  await refused(t, { ...FACTURA_BRUTA, totals: { ...FACTURA_BRUTA.totals, MntNeto: '9243', IVA: '1757' } }, ['MntNeto 9243 != 9244 computed']);
  await refused(t, { ...EXENTA, totals: { MntExe: '13500', TasaIVA: '19', IVA: '2565', MntTotal: '16065' } }, ['IVA 2565 != 0 computed']);
  await refused(t, { ...EXENTA, totals: { MntExe: '15000', MntTotal: '15000' } }, ['MntExe 15000 != 13500 computed']);
  await refused(
    t,
    {
      ...NOTA_TEXTO,
      lines: [{ NroLinDet: '1', NmbItem: 'Corrige giro del receptor', QtyItem: '1', PrcItem: '1000', MontoItem: '1000' }],
      totals: { MntNeto: '1000', TasaIVA: '19', IVA: '190', MntTotal: '1190' },
    },
    ['MntTotal 1190 in a note correcting text (CodRef 2), 0 expected'],
  );
});

t.test('a note refers to the DTE it modifies, with how', async (t) => {
  const noReference = 'no Referencia to a DTE (TpoDocRef 33, 34, 39, 41, 56, 61) in a type 61 note';
  await refused(t, { ...NOTA_ANULA, references: [] }, [noReference]);
  await refused(t, { ...NOTA_ANULA, references: [{ NroLinRef: '1', TpoDocRef: '801', FolioRef: '4500012', FchRef: '2026-02-20' }] }, [noReference]);
  await refused(t, { ...NOTA_ANULA, references: [without(CANCELS, 'CodRef')] }, ['Referencia 1 (33 folio 10) has no CodRef']);
  await refused(t, { ...NOTA_ANULA, references: [{ ...CANCELS, CodRef: '4' }] }, ['Referencia 1 (33 folio 10) CodRef 4 is not 1, 2 or 3']);
});

t.test("the timbre states the document's type, folio and total", async (t) => {
  await refused(t, { ...FACTURA, timbre: { MNT: '8000' } }, ['TED DD/MNT 8000 != MntTotal 7998']);
  await refused(t, { ...FACTURA, timbre: { TD: 34 } }, ['TED DD/TD 34 != TipoDTE 33']);
  await refused(t, { ...FACTURA, timbre: { F: 999_999 } }, (folio) => [`TED DD/F 999999 != Folio ${folio}`]);
});

t.test('a refused document leaves the others of its upload to the scripted outcome', async (t) => {
  t.teardown(() => {
    standin.outcome = { kind: 'accepted' };
  });
  const wrongVat = { ...FACTURA, totals: { ...FACTURA.totals, IVA: '957', MntTotal: '7997' } };
  const accepted = await submit([FACTURA, wrongVat, EXENTA]);
  t.same(accepted.counts, [
    { type: 33, informed: 2, accepted: 1, rejected: 1, objections: 0 },
    { type: 34, informed: 1, accepted: 1, rejected: 0, objections: 0 },
  ]);
  t.same(
    accepted.upload.rejections.map((r) => r.problems),
    [[], ['IVA 957 != 958 computed'], []],
  );
  t.equal(await documentCode(33, accepted.folios[0]!), 'DOK', 'the good factura is in');
  t.equal(await documentCode(33, accepted.folios[1]!), 'FAU', 'the wrong one is not');

  standin.outcome = { kind: 'objections' };
  const objected = await submit([FACTURA, wrongVat]);
  t.same(objected.counts, [{ type: 33, informed: 2, accepted: 0, rejected: 1, objections: 1 }]);

  standin.outcome = { kind: 'rejected' };
  const rejected = await submit([FACTURA]);
  t.same(rejected.counts, [{ type: 33, informed: 1, accepted: 0, rejected: 1, objections: 0 }], 'a scripted rejection still rejects');
  t.same(rejected.upload.rejections[0]!.problems, [], 'with no problem of its own');
});
