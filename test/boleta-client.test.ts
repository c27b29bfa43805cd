// The client of the SII's boleta REST service (docs/decisions.md §20) against its stand-in: the token from
// a signed seed, the upload, the state polled until SII says each boleta's outcome, a refused
// token, SII down, and an upload whose answer is lost, found again by the boleta's own state. The
// envelopes are written here with the project's signing, not its boleta builder, to test the
// client alone.
import t from 'tap';
import { createServer, type AddressInfo } from 'node:net';
import { create } from 'xmlbuilder2';
import { boletaHosts, boletaOutcome, boletaStatusByFolio, boletaUploadStatus, getBoletaToken, uploadEnvioBoleta, type BoletaUploadStatus } from '../src/sii/boleta-client.js';
import { readPkcs12 } from '../src/dte/certificate.js';
import { SII_NAMESPACE } from '../src/dte/document.js';
import { signElement } from '../src/dte/sign.js';
import { signedSeed, SiiError, SiiTokenError } from '../src/sii/sii-client.js';
import { merchantPkcs12 } from './helpers/dte-fixtures.js';
import { BOLETA_USER_AGENT, startSiiBoletaStandin } from './helpers/sii-boleta-standin.js';

const COMPANY = '76543210-3';
const identity = readPkcs12(merchantPkcs12({ password: 'secret', rut: '11111111-1' }), 'secret');

interface Boleta {
  tipo: 39 | 41;
  folio: number;
  total: number;
  date: string;
}

/** A signed EnvioBOLETA of just what the service reads: each DTE signed on its own, then the set. */
function envioBoleta(boletas: Boleta[], o: { rutEmisor?: string } = {}): Buffer {
  const dtes = boletas.map((b) =>
    signElement(
      create({
        DTE: {
          '@xmlns': SII_NAMESPACE,
          '@version': '1.0',
          Documento: {
            '@ID': `B${b.tipo}F${b.folio}`,
            Encabezado: {
              IdDoc: { TipoDTE: String(b.tipo), Folio: String(b.folio), FchEmis: b.date, IndServicio: '3' },
              Emisor: { RUTEmisor: o.rutEmisor ?? COMPANY },
              Receptor: { RUTRecep: '66666666-6' },
              Totales: { MntTotal: String(b.total) },
            },
          },
        },
      }).end({ headless: true }),
      'Documento',
      identity,
    ),
  );
  const envelope = create({
    EnvioBOLETA: {
      '@xmlns': SII_NAMESPACE,
      '@version': '1.0',
      SetDTE: { '@ID': 'SetDoc', Caratula: { '@version': '1.0', RutEmisor: o.rutEmisor ?? COMPANY, RutEnvia: identity.subjectRut, RutReceptor: '60803000-K' }, '!': 'DTE' },
    },
  })
    .end({ headless: true })
    .replace('<!--DTE-->', dtes.join(''));
  return Buffer.from(`<?xml version="1.0" encoding="ISO-8859-1"?>\n${signElement(envelope, 'SetDTE', identity)}`, 'latin1');
}

const upload = (url: string, token: string, bytes: Buffer) =>
  uploadEnvioBoleta(url, token, { rutSender: identity.subjectRut, rutCompany: COMPANY, filename: 'boletas.xml', bytes });

t.test('the hosts by environment, or as configured', async (t) => {
  t.same(boletaHosts('certificacion'), { api: 'https://apicert.sii.cl', upload: 'https://pangal.sii.cl' });
  t.same(boletaHosts('produccion'), { api: 'https://api.sii.cl', upload: 'https://rahue.sii.cl' });
  t.same(boletaHosts('produccion', { SII_BOLETA_API_URL: 'http://127.0.0.1:9/', SII_BOLETA_UPLOAD_URL: 'http://127.0.0.1:8' }), {
    api: 'http://127.0.0.1:9',
    upload: 'http://127.0.0.1:8',
  });
});

t.test('a token from a signed seed; a seed the service did not give is refused', async (t) => {
  const sii = await startSiiBoletaStandin(t);
  const token = await getBoletaToken(sii.url, identity);
  t.match(token, /^BT\w+$/);
  t.equal(sii.seeds, 1);
  t.equal(sii.tokens, 1);
  const forged = await fetch(`${sii.url}/recursos/v1/boleta.electronica.token`, {
    method: 'POST',
    headers: { 'content-type': 'application/xml' },
    body: signedSeed('000000000001', identity),
  });
  t.match(await forged.text(), /<ESTADO>-07<\/ESTADO>/);
  t.equal(sii.tokens, 1);
});

t.test('an upload, its state polled until each boleta has its outcome', async (t) => {
  const sii = await startSiiBoletaStandin(t);
  sii.processingPolls = 2;
  sii.rejectFolios.add(2);
  sii.objectionFolios.add(3);
  const token = await getBoletaToken(sii.url, identity);
  const boletas: Boleta[] = [
    { tipo: 39, folio: 1, total: 11900, date: '2026-03-05' },
    { tipo: 39, folio: 2, total: 5000, date: '2026-03-05' },
    { tipo: 41, folio: 3, total: 2000, date: '2026-03-05' },
  ];
  const receipt = await upload(sii.url, token, envioBoleta(boletas));
  t.same(receipt, { trackid: sii.uploads[0]!.trackid, estado: 'REC' });
  t.type(receipt.trackid, 'string', 'the number SII answers is a string');
  const recorded = sii.uploads[0]!;
  t.match(recorded, { sender: '11111111-1', company: COMPANY, filename: 'boletas.xml', fileType: 'application/xml', signaturesValid: true, estado: 'EPR' });
  t.same(
    recorded.boletas.map((b) => [b.tipo, b.folio, b.montoTotal, b.fechaEmision]),
    boletas.map((b) => [b.tipo, b.folio, String(b.total), b.date]),
  );

  t.same(await boletaUploadStatus(sii.url, token, COMPANY, receipt.trackid), { kind: 'processing', estado: 'REC' });
  t.same(await boletaUploadStatus(sii.url, token, COMPANY, receipt.trackid), { kind: 'processing', estado: 'EPR' }, 'EPR without detalle_rep_rech is not done');
  const done = await boletaUploadStatus(sii.url, token, COMPANY, receipt.trackid);
  if (done.kind !== 'processed') throw new Error(`not processed: ${JSON.stringify(done)}`);
  t.same(done.counts, [
    { tipo: 39, informados: 2, aceptados: 1, rechazados: 1, reparos: 0 },
    { tipo: 41, informados: 1, aceptados: 0, rechazados: 0, reparos: 1 },
  ]);
  t.same(
    boletas.map((b) => boletaOutcome(done, b.tipo, b.folio)),
    ['accepted', 'rejected', 'accepted_with_objections'],
  );
  t.match(done.details.find((d) => d.folio === 2), { estado: 'RCH', descripcion: 'DTE Rechazado', errors: ['100 Rechazo por prueba: folio 2'] });
  t.equal(sii.statusQueries, 3);
});

t.test('an envelope refused whole: a broken signature', async (t) => {
  const sii = await startSiiBoletaStandin(t);
  const token = await getBoletaToken(sii.url, identity);
  const bytes = Buffer.from(envioBoleta([{ tipo: 39, folio: 7, total: 1000, date: '2026-03-05' }]).toString('latin1').replace('<MntTotal>1000<', '<MntTotal>1001<'), 'latin1');
  const { trackid } = await upload(sii.url, token, bytes);
  const status: BoletaUploadStatus = await boletaUploadStatus(sii.url, token, COMPANY, trackid);
  t.match(status, { kind: 'envelope_rejected', estado: 'RFR', glosa: /firma/ });
});

t.test('a token SII no longer takes: SiiTokenError, SII took nothing; a new token works', async (t) => {
  const sii = await startSiiBoletaStandin(t);
  const token = await getBoletaToken(sii.url, identity);
  const { trackid } = await upload(sii.url, token, envioBoleta([{ tipo: 39, folio: 1, total: 1000, date: '2026-03-05' }]));
  sii.expireTokens();
  for (const attempt of [
    () => boletaUploadStatus(sii.url, token, COMPANY, trackid),
    () => upload(sii.url, token, envioBoleta([{ tipo: 39, folio: 2, total: 1000, date: '2026-03-05' }])),
    () => boletaStatusByFolio(sii.url, token, { rutCompany: COMPANY, tipo: 39, folio: 1, monto: 1000, fechaEmision: '2026-03-05' }),
  ]) {
    const err = await attempt().catch((e: unknown) => e);
    t.ok(err instanceof SiiTokenError, String(err));
    t.equal((err as SiiError).delivered, false);
  }
  t.equal(sii.uploads.length, 1, 'the refused upload was not taken');
  const renewed = await getBoletaToken(sii.url, identity);
  t.match(await boletaUploadStatus(sii.url, renewed, COMPANY, trackid), { kind: 'processed' });
});

t.test('SII down or unreachable: SiiError, not delivered', async (t) => {
  const sii = await startSiiBoletaStandin(t);
  const token = await getBoletaToken(sii.url, identity);
  sii.faults.unavailable = true;
  for (const attempt of [() => getBoletaToken(sii.url, identity), () => upload(sii.url, token, envioBoleta([{ tipo: 39, folio: 1, total: 1000, date: '2026-03-05' }]))]) {
    const err = await attempt().catch((e: unknown) => e);
    t.ok(err instanceof SiiError && !(err instanceof SiiTokenError), String(err));
    t.equal((err as SiiError).delivered, false);
  }
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as AddressInfo;
  await new Promise((resolve) => closed.close(resolve));
  const refused = await getBoletaToken(`http://127.0.0.1:${port}`, identity).catch((e: unknown) => e);
  t.ok(refused instanceof SiiError && !(refused as SiiError).delivered, String(refused));
  t.equal(sii.uploads.length, 0);
});

t.test("an upload whose answer is lost: delivered, and the boleta's state says SII has it", async (t) => {
  const sii = await startSiiBoletaStandin(t);
  const token = await getBoletaToken(sii.url, identity);
  sii.faults.loseUploadAnswer = 1;
  const err = await upload(sii.url, token, envioBoleta([{ tipo: 39, folio: 5, total: 11900, date: '2026-03-05' }])).catch((e: unknown) => e);
  t.ok(err instanceof SiiError && !(err instanceof SiiTokenError), String(err));
  t.equal((err as SiiError).delivered, true, 'SII may have it');
  t.equal(sii.uploads.length, 1, 'and it does');

  const byFolio = (folio: number, monto: number) => boletaStatusByFolio(sii.url, token, { rutCompany: COMPANY, tipo: 39, folio, monto, fechaEmision: '2026-03-05' });
  t.match(await byFolio(5, 11900), { received: true, codigo: 'DOK' });
  t.match(await byFolio(5, 100), { received: true, codigo: 'DNK' }, 'SII has it, with other data');
  t.match(await byFolio(6, 11900), { received: false, codigo: 'FAU' });
  t.equal(sii.folioQueries, 3);
});

t.test('the upload carries what SII asks of it', async (t) => {
  const sii = await startSiiBoletaStandin(t);
  const token = await getBoletaToken(sii.url, identity);
  const form = new FormData();
  form.set('rutSender', '11111111');
  form.set('dvSender', '1');
  form.set('rutCompany', '76543210');
  form.set('dvCompany', '3');
  form.set('archivo', new Blob([new Uint8Array(envioBoleta([{ tipo: 39, folio: 1, total: 1, date: '2026-03-05' }]))], { type: 'application/xml' }), 'b.xml');
  const withoutAgent = await fetch(`${sii.url}/recursos/v1/boleta.electronica.envio`, { method: 'POST', headers: { cookie: `TOKEN=${token}` }, body: form });
  t.equal(withoutAgent.status, 400, 'another User-Agent is refused');
  form.delete('dvCompany');
  const missing = await fetch(`${sii.url}/recursos/v1/boleta.electronica.envio`, { method: 'POST', headers: { cookie: `TOKEN=${token}`, 'user-agent': BOLETA_USER_AGENT }, body: form });
  t.equal(missing.status, 400, 'a missing field is refused');
  t.equal(sii.uploads.length, 0);
});
