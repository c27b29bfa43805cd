// Setting a merchant up for DTEs (docs/decisions.md §15) through the CLI and the admin router: the
// certificate is checked and never shown back, a CAF is checked (RUT, SII's signature, type,
// environment, overlap) before it is loaded, and a profile that lacks DTE fields is named.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TRPCError } from '@trpc/server';
import { createCaller } from '../src/admin/router.js';
import { addCaf } from '../src/dte/service.js';
import { setTaxProfile } from '../src/merchants/service.js';
import { testApp, TEST_ENV } from './helpers/app.js';
import { runCli } from './helpers/cli.js';
import { cafFile, DTE_PROFILE, merchantPkcs12, readDte, siiAuthority } from './helpers/dte-fixtures.js';
import { facturaBody } from './helpers/fixtures.js';

const TOKEN = 'adm_test_0123456789abcdefghijklmnopqrstuvwxyz';
const sii = siiAuthority();
const dir = mkdtempSync(path.join(os.tmpdir(), 'dte-setup-'));
t.teardown(() => {
  sii.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

function file(name: string, content: Buffer): string {
  const p = path.join(dir, name);
  writeFileSync(p, content);
  return p;
}

/** The tRPC error's catalogue error. */
async function refusal(call: Promise<unknown>): Promise<{ code: string; message: string; details: any }> {
  const err = await call.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof TRPCError)) throw new Error('expected the call to be refused');
  return err.cause as never;
}

const PROFILE_ARGS = [
  '--rut', '76.086.428-5', '--razon-social', DTE_PROFILE.razon_social, '--giro', DTE_PROFILE.giro, '--direccion', DTE_PROFILE.direccion,
  '--comuna', DTE_PROFILE.comuna, '--ciudad', DTE_PROFILE.ciudad,
];

t.test('the CLI sets a merchant up end to end; it then sends an invoice with a folio and a signed XML that verifies', async (t) => {
  // The CLI reads its configuration from the environment, as support staff run it.
  process.env.ENCRYPTION_KEY = TEST_ENV.ENCRYPTION_KEY;
  process.env.SII_CERT_FILE = sii.certFile;
  process.env.DTE_TEST_PASSWORD = 'clave secreta ñ';
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile });
  const { key, merchantId } = await h.key(['*']);
  const p12 = file('firma.p12', merchantPkcs12({ password: 'clave secreta ñ', rut: '9876543-3', rutIn: 'serialNumber' }));
  const caf = file('caf33.xml', cafFile(sii, { rut: DTE_PROFILE.rut, type: 33, from: 1, to: 10 }));

  await runCli(h.dbUrl, 'merchants', 'set-tax-profile', '--merchant', merchantId, ...PROFILE_ARGS);
  const early = await runCli(h.dbUrl, 'dte', 'certificate', 'add', '--merchant', merchantId, '--file', p12, '--password-env', 'DTE_TEST_PASSWORD');
  t.equal(early.code, 1, 'refused while the profile lacks the DTE fields');
  t.match(early.out.error, { code: 'validation_error' });
  t.same(
    early.out.error.details.errors.map((e: any) => e.path),
    ['tax_profile.acteco', 'tax_profile.resolucion_numero', 'tax_profile.resolucion_fecha', 'tax_profile.sii_env'],
    'every missing field named',
  );

  const profile = await runCli(h.dbUrl, 'merchants', 'set-tax-profile', '--merchant', merchantId, ...PROFILE_ARGS, '--acteco', '620200', '--resolucion-numero', '0', '--resolucion-fecha', '2014-08-22', '--sii-env', 'certificacion');
  t.equal(profile.code, 0);

  const wrong = await runCli(h.dbUrl, 'dte', 'certificate', 'add', '--merchant', merchantId, '--file', p12, '--password-env', 'HOME');
  t.equal(wrong.code, 1);
  t.match(wrong.out.error, { code: 'validation_error', details: { errors: [{ path: 'password', message: /password does not open/ }] } });

  const cert = await runCli(h.dbUrl, 'dte', 'certificate', 'add', '--merchant', merchantId, '--file', p12, '--password-env', 'DTE_TEST_PASSWORD');
  t.equal(cert.code, 0);
  t.same(Object.keys(cert.out).sort(), ['added_at', 'merchant_id', 'not_after', 'subject_name', 'subject_rut']);
  t.match(cert.out, { merchant_id: merchantId, subject_rut: '9876543-3', subject_name: 'Juana Pérez Soto' });

  const loaded = await runCli(h.dbUrl, 'dte', 'caf', 'add', '--merchant', merchantId, '--file', caf);
  t.equal(loaded.code, 0);
  t.match(loaded.out, { dte_type: 33, folio_from: 1, folio_to: 10, folios_left: 10 });

  const sent = await h.api('POST', '/invoices', { key, body: facturaBody({ send_immediately: true }) });
  t.equal(sent.status, 201);
  const invoice = (await h.api('GET', `/invoices/${sent.body.invoice_id}`, { key })).body;
  t.match(invoice, { dte_type: 33, dte_folio: 1, dte_status: 'pending' });
  const xml = await h.app.inject({ method: 'GET', url: `/api/v1/external/invoices/${invoice.id}/dte.xml`, headers: { 'x-api-key': key } });
  const dte = readDte(xml.rawPayload);
  t.ok(dte.dteSignatureValid && dte.envelopeSignatureValid && dte.timbreValid, 'both signatures and the timbre verify');
  t.equal(dte.value('RutEnvia'), '9876543-3');

  // The password and the file are stored sealed: neither appears in the row.
  const [row] = await h.sql`SELECT sealed_pkcs12 FROM dte_certificates WHERE merchant_id = ${merchantId}`;
  t.notOk((row!.sealed_pkcs12 as Buffer).includes(Buffer.from('clave secreta')), 'no password in the clear');
});

t.test('the admin router: certificate never returned, CAFs checked, status with folios left', async (t) => {
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, ADMIN_TOKEN: TOKEN });
  const admin = createCaller({ app: h.ctx, authorization: `Bearer ${TOKEN}` });
  const m = await h.merchant();
  await admin.merchants.setTaxProfile({ merchant_id: m.id, tax_profile: DTE_PROFILE });
  const b64 = (b: Buffer) => b.toString('base64');
  const impostor = siiAuthority();
  t.teardown(() => impostor.cleanup());

  const bad = await refusal(admin.dte.addCertificate({ merchant_id: m.id, file_base64: b64(merchantPkcs12({ password: 'a' })), password: 'b' }));
  t.match(bad, { code: 'validation_error', details: { errors: [{ path: 'password' }] } });
  const notP12 = await refusal(admin.dte.addCertificate({ merchant_id: m.id, file_base64: b64(Buffer.from('no soy un p12')), password: 'b' }));
  t.match(notP12, { details: { errors: [{ path: 'file', message: /not a PKCS#12/ }] } });

  const cert = await admin.dte.addCertificate({ merchant_id: m.id, file_base64: b64(merchantPkcs12({ password: 'pw' })), password: 'pw' });
  t.same(Object.keys(cert).sort(), ['added_at', 'merchant_id', 'not_after', 'subject_name', 'subject_rut'], 'only who and until when');

  const caf = (o: Partial<Parameters<typeof cafFile>[1]>) =>
    admin.dte.addCaf({ merchant_id: m.id, file_base64: b64(cafFile(sii, { rut: DTE_PROFILE.rut, type: 33, from: 1, to: 50, ...o })) });
  t.match(await caf({}), { dte_type: 33, folio_from: 1, folio_to: 50, folios_left: 50 });

  const wrongRut = await refusal(caf({ rut: '11111111-1', from: 51, to: 60 }));
  t.match(wrongRut, { code: 'validation_error', details: { errors: [{ path: 'file', message: /RUT 11111111-1, not the merchant's 76086428-5/ }] } });
  const forged = await refusal(caf({ from: 51, to: 60, signWith: impostor.privateKeyPem }));
  t.match(forged, { details: { errors: [{ path: 'file', message: /SII signature \(FRMA\) does not verify/ }] } });
  const overlap = await refusal(caf({ from: 40, to: 80 }));
  t.match(overlap, { details: { errors: [{ path: 'file', message: /overlap the loaded CAF 1\.\.50/ }] } });
  const guia = await refusal(caf({ type: 52, from: 1, to: 10 }));
  t.match(guia, { details: { errors: [{ message: /type 52; only 33, 34, 39, 41, 56, 61 are issued/ }] } });
  const production = await refusal(caf({ from: 51, to: 60, idk: 300 }));
  t.match(production, { details: { errors: [{ message: /key 300, not by the key of the certificacion environment \(100\)/ }] } });
  const notXml = await refusal(admin.dte.addCaf({ merchant_id: m.id, file_base64: b64(Buffer.from('<AUTORIZACION>')) }));
  t.match(notXml, { code: 'validation_error' });
  t.match(await caf({ type: 34, from: 40, to: 80 }), { dte_type: 34 }, 'the same range of another type is no overlap');

  const status = await admin.dte.status({ merchant_id: m.id });
  t.match(status, { enabled: true, missing: [], folios_left: { 33: 50, 34: 41, 39: 0, 41: 0, 56: 0, 61: 0 } });
  t.same(Object.keys(status.certificate!).sort(), ['added_at', 'merchant_id', 'not_after', 'subject_name', 'subject_rut']);
  t.equal(status.cafs.length, 2);
  t.notOk(JSON.stringify(status).includes('PRIVATE KEY'), 'no key shown');
  t.same(await admin.dte.foliosLeft(), [{ merchant_id: m.id, folios_left: { 33: 50, 34: 41, 39: 0, 41: 0, 56: 0, 61: 0 } }]);

  const other = await h.merchant();
  t.match(await admin.dte.status({ merchant_id: other.id }), {
    enabled: false,
    missing: ['tax_profile.rut', 'tax_profile.razon_social', 'tax_profile.giro', 'tax_profile.acteco', 'tax_profile.direccion', 'tax_profile.comuna', 'tax_profile.ciudad', 'tax_profile.resolucion_numero', 'tax_profile.resolucion_fecha', 'tax_profile.sii_env', 'certificate', 'caf'],
  });
});

t.test('without SII_CERT_FILE a CAF is checked against SII\'s published certificate, which a test SII key cannot pass', async (t) => {
  const h = await testApp(t);
  const m = await h.merchant();
  await setTaxProfile(h.sql, m.id, DTE_PROFILE);
  const err = await addCaf(h.sql, h.ctx.config, h.ctx.secrets, m.id, cafFile(sii, { rut: DTE_PROFILE.rut, type: 33, from: 1, to: 5 })).catch((e: unknown) => e);
  t.match(err, { code: 'validation_error', details: { errors: [{ path: 'file', message: /does not verify with the SII certificate/ }] } });
});
