// The issuer's legal profile (docs/decisions.md §15) and payment instructions (docs/decisions.md §11), set by
// support staff through the CLI and the admin router; both check the same fields.
import t from 'tap';
import { TRPCError } from '@trpc/server';
import { createCaller } from '../src/admin/router.js';
import { formatRut } from '../src/clients/rut.js';
import { testApp } from './helpers/app.js';
import { runCli as cli } from './helpers/cli.js';

const TOKEN = 'adm_test_0123456789abcdefghijklmnopqrstuvwxyz';

const PROFILE = ['--rut', '76.086.428-5', '--razon-social', 'Comercial Los Andes SpA', '--giro', 'Servicios de consultoría', '--direccion', 'Av. Providencia 1234, of. 56', '--comuna', 'Ñuñoa', '--ciudad', 'Santiago'];

t.test('formatRut prints RUTs with their dots', async (t) => {
  t.equal(formatRut('76086428-5'), '76.086.428-5');
  t.equal(formatRut('1234567-K'), '1.234.567-K');
  t.equal(formatRut('999-3'), '999-3');
  t.equal(formatRut('ES-B12345678'), 'ES-B12345678', 'a foreign tax id as given');
});

t.test('the CLI sets, checks and clears the legal profile and the payment instructions', async (t) => {
  const h = await testApp(t);
  const m = await h.merchant();

  const set = await cli(h.dbUrl, 'merchants', 'set-tax-profile', '--merchant', m.id, ...PROFILE, '--acteco', '620200', '--resolucion-numero', '80', '--resolucion-fecha', '2014-08-22', '--sii-env', 'certificacion');
  t.equal(set.code, 0);
  t.same(set.out.tax_profile, {
    rut: '76086428-5',
    razon_social: 'Comercial Los Andes SpA',
    giro: 'Servicios de consultoría',
    acteco: '620200',
    direccion: 'Av. Providencia 1234, of. 56',
    comuna: 'Ñuñoa',
    ciudad: 'Santiago',
    resolucion_numero: 80,
    resolucion_fecha: '2014-08-22',
    sii_env: 'certificacion',
  });

  const badRut = await cli(h.dbUrl, 'merchants', 'set-tax-profile', '--merchant', m.id, ...PROFILE.map((v) => (v === '76.086.428-5' ? '76.086.428-4' : v)));
  t.equal(badRut.code, 1);
  t.match(badRut.out.error, { code: 'validation_error', details: { errors: [{ path: 'rut', message: /check digit/ }] } });

  const missing = await cli(h.dbUrl, 'merchants', 'set-tax-profile', '--merchant', m.id, '--rut', '76086428-5');
  t.match(missing.out.error, { code: 'validation_error', details: { errors: [{ path: '--razon-social', message: 'is required' }] } });

  const badNumber = await cli(h.dbUrl, 'merchants', 'set-tax-profile', '--merchant', m.id, ...PROFILE, '--resolucion-numero', 'ochenta');
  t.match(badNumber.out.error.details.errors, [{ path: 'resolucion_numero' }]);
  const [kept] = await h.sql`SELECT razon_social, resolucion_numero FROM merchants WHERE id = ${m.id}`;
  t.same(kept, { razon_social: 'Comercial Los Andes SpA', resolucion_numero: 80 }, 'a refused change leaves the profile as it was');

  const instructions = await cli(h.dbUrl, 'merchants', 'set-payment-instructions', '--merchant', m.id, '--text', 'Transferencia a Banco Estado, cuenta 123456789');
  t.equal(instructions.out.payment_instructions, 'Transferencia a Banco Estado, cuenta 123456789');

  const cleared = await cli(h.dbUrl, 'merchants', 'set-tax-profile', '--merchant', m.id, '--clear');
  t.equal(cleared.out.tax_profile, null);
  const noText = await cli(h.dbUrl, 'merchants', 'set-payment-instructions', '--merchant', m.id, '--clear');
  t.equal(noText.out.payment_instructions, null);
  const listed = await cli(h.dbUrl, 'merchants', 'list');
  t.match(listed.out[0], { id: m.id, tax_profile: null, payment_instructions: null });
});

t.test('the admin router sets the same profile and refuses the same mistakes, by field', async (t) => {
  const h = await testApp(t, { ADMIN_TOKEN: TOKEN });
  const m = await h.merchant();
  const admin = createCaller({ app: h.ctx, authorization: `Bearer ${TOKEN}` });
  const profile = { rut: '76086428-5', razon_social: 'Andes SpA', giro: 'Comercio', direccion: 'Calle 1', comuna: 'Providencia', ciudad: 'Santiago' };

  const set = await admin.merchants.setTaxProfile({ merchant_id: m.id, tax_profile: profile });
  t.same(set.tax_profile, { ...profile, acteco: null, resolucion_numero: null, resolucion_fecha: null, sii_env: null });

  const err = await admin.merchants.setTaxProfile({ merchant_id: m.id, tax_profile: { ...profile, rut: 'no es rut', giro: '' } }).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(err instanceof TRPCError && err.code === 'BAD_REQUEST', 'a bad profile is a BAD_REQUEST');
  const paths = ((err as TRPCError).cause as { details?: { errors: { path: string }[] } } | undefined)?.details?.errors.map((e) => e.path);
  t.same(paths?.sort(), ['tax_profile.giro', 'tax_profile.rut']);

  const unknownMerchant = await admin.merchants.setPaymentInstructions({ merchant_id: '0196b0c4-0000-7000-8000-000000000000', payment_instructions: 'x' }).then(
    () => null,
    (e: unknown) => e,
  );
  t.ok(unknownMerchant instanceof TRPCError, 'no such merchant');

  const text = await admin.merchants.setPaymentInstructions({ merchant_id: m.id, payment_instructions: '  Pague por transferencia.  ' });
  t.equal(text.payment_instructions, 'Pague por transferencia.');
  const listed = await admin.merchants.list();
  t.match(listed.find((x) => x.id === m.id), { tax_profile: { rut: '76086428-5' }, payment_instructions: 'Pague por transferencia.' });
});
