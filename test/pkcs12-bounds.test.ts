// A PKCS#12 file is opened within bounds (docs/decisions.md §19): an iteration count over 200,000, in the
// MAC, an EncryptedData content or a shrouded key bag (one inside an EncryptedData too), is refused
// before any key derivation of that size runs: a CertificateError naming the count, 400 naming
// `file` through the admin router, a JSON error and exit 1 through the CLI. A normal file (2048)
// still opens.
//
// forge takes ~80 s to write a file with count 2,000,000, so the files here are written with 2048
// and their counts then rewritten in the ASN.1 (MACs recomputed where the check must get past
// them): what is tested is what the file says, which is all an attacker controls.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import forge from 'node-forge';
import { TRPCError } from '@trpc/server';
import { createCaller } from '../src/admin/router.js';
import { CertificateError, readPkcs12 } from '../src/dte/certificate.js';
import { testApp, TEST_ENV } from './helpers/app.js';
import { runCli } from './helpers/cli.js';
import { DTE_PROFILE, merchantPkcs12, siiAuthority } from './helpers/dte-fixtures.js';

const { asn1, pki } = forge;
const { Class, Type } = asn1;
const PASSWORD = 'clave-de-prueba';
const HUGE = 2_000_000;
const NORMAL = 2048;

// The key and certificate of a fixture, to write other PFXs of.
const fixture = merchantPkcs12({ password: PASSWORD });
const opened = forge.pkcs12.pkcs12FromAsn1(asn1.fromDer(fixture.toString('binary')), PASSWORD);
const KEY = opened.getBags({ bagType: pki.oids.pkcs8ShroudedKeyBag! })[pki.oids.pkcs8ShroudedKeyBag!]![0]!.key!;
const CERT = opened.getBags({ bagType: pki.oids.certBag! })[pki.oids.certBag!]![0]!.cert!;

const seq = (items: forge.asn1.Asn1[]) => asn1.create(Class.UNIVERSAL, Type.SEQUENCE, true, items);
const oid = (o: string) => asn1.create(Class.UNIVERSAL, Type.OID, false, asn1.oidToDer(o).getBytes());
const octets = (bytes: string) => asn1.create(Class.UNIVERSAL, Type.OCTETSTRING, false, bytes);
const integer = (n: number) => asn1.create(Class.UNIVERSAL, Type.INTEGER, false, asn1.integerToDer(n).getBytes());
const explicit0 = (item: forge.asn1.Asn1) => asn1.create(Class.CONTEXT_SPECIFIC, 0, true, [item]);
const der = (node: forge.asn1.Asn1) => asn1.toDer(node).getBytes();
const setCount = (node: forge.asn1.Asn1, n: number | bigint) => {
  let hex = BigInt(n).toString(16);
  if (hex.length % 2 || /^[89a-f]/.test(hex)) hex = `0${hex}`;
  node.value = Buffer.from(hex, 'hex').toString('binary');
};

interface Counts {
  mac?: number;
  key?: number | bigint;
  /** The key bag's scheme: PKCS#12 PBE 3DES, or PBES2 (PBKDF2, AES-256). */
  keyScheme?: '3des' | 'aes256';
  /** The key bag inside an EncryptedData content of this count, instead of a Data one. */
  nestedIn?: number;
}

/** A PFX as forge reads it, with the counts asked for written into it. */
function pfx(c: Counts = {}): Buffer {
  const scheme = c.keyScheme ?? '3des';
  const encryptedKey = pki.encryptPrivateKeyInfo(pki.wrapRsaPrivateKey(pki.privateKeyToAsn1(KEY)), PASSWORD, { algorithm: scheme, count: NORMAL });
  const algorithm = (encryptedKey.value as forge.asn1.Asn1[])[0]!;
  const params = (algorithm.value as forge.asn1.Asn1[])[1]!;
  // pkcs-12PbeParams { salt, iterations }; PBES2-params { kdf { oid, { salt, iterationCount, … } }, enc }
  const countNode =
    scheme === '3des' ? (params.value as forge.asn1.Asn1[])[1]! : (((params.value as forge.asn1.Asn1[])[0]!.value as forge.asn1.Asn1[])[1]!.value as forge.asn1.Asn1[])[1]!;
  setCount(countNode, c.key ?? NORMAL);
  const keyBag = seq([oid(pki.oids.pkcs8ShroudedKeyBag!), explicit0(encryptedKey)]);
  const certBag = seq([
    oid(pki.oids.certBag!),
    explicit0(seq([oid(pki.oids.x509Certificate!), explicit0(octets(der(pki.certificateToAsn1(CERT))))])),
  ]);
  const dataContent = (bags: forge.asn1.Asn1[]) => seq([oid(pki.oids.data!), explicit0(octets(der(seq(bags))))]);

  let keyContent = dataContent([keyBag]);
  if (c.nestedIn !== undefined) {
    // EncryptedData { version 0, EncryptedContentInfo { data, pbeWithSHAAnd3-KeyTripleDES-CBC { salt, count }, [0] ciphertext } }
    const salt = forge.random.getBytesSync(8);
    // @types/node-forge leaves forge.des out; it is the 3DES forge's own PKCS#12 PBE uses.
    const des = (forge as unknown as { des: { createEncryptionCipher(key: forge.util.ByteStringBuffer): forge.cipher.BlockCipher } }).des;
    const cipher = des.createEncryptionCipher(forge.pkcs12.generateKey(PASSWORD, forge.util.createBuffer(salt), 1, NORMAL, 24));
    cipher.start(forge.pkcs12.generateKey(PASSWORD, forge.util.createBuffer(salt), 2, NORMAL, 8) as never);
    cipher.update(forge.util.createBuffer(der(seq([keyBag]))));
    cipher.finish();
    const pbeParams = seq([octets(salt), integer(NORMAL)]);
    setCount((pbeParams.value as forge.asn1.Asn1[])[1]!, c.nestedIn);
    keyContent = seq([
      oid(pki.oids.encryptedData!),
      explicit0(
        seq([
          integer(0),
          seq([
            oid(pki.oids.data!),
            seq([oid(pki.oids['pbeWithSHAAnd3-KeyTripleDES-CBC']!), pbeParams]),
            asn1.create(Class.CONTEXT_SPECIFIC, 0, false, cipher.output.getBytes()),
          ]),
        ]),
      ),
    ]);
  }
  const authSafe = der(seq([dataContent([certBag]), keyContent]));
  const macSalt = forge.random.getBytesSync(8);
  const hmac = forge.hmac.create();
  hmac.start('sha1', forge.pkcs12.generateKey(PASSWORD, forge.util.createBuffer(macSalt), 3, NORMAL, 20));
  hmac.update(authSafe);
  const macCount = integer(NORMAL);
  setCount(macCount, c.mac ?? NORMAL);
  const macData = seq([seq([seq([oid(pki.oids.sha1!), asn1.create(Class.UNIVERSAL, Type.NULL, false, '')]), octets(hmac.digest().getBytes())]), octets(macSalt), macCount]);
  return Buffer.from(der(seq([integer(3), seq([oid(pki.oids.data!), explicit0(octets(authSafe))]), macData])), 'binary');
}

/** readPkcs12's refusal and how long it took. */
function refused(file: Buffer): { error: unknown; ms: number } {
  const started = performance.now();
  try {
    readPkcs12(file, PASSWORD);
    return { error: null, ms: performance.now() - started };
  } catch (error) {
    return { error, ms: performance.now() - started };
  }
}

t.test('readPkcs12: every count forge would derive with is bounded', async (t) => {
  t.equal(readPkcs12(pfx(), PASSWORD).subjectRut, '11111111-1', 'the builder writes files forge opens (counts 2048)');
  t.equal(readPkcs12(pfx({ nestedIn: NORMAL }), PASSWORD).subjectRut, '11111111-1', 'a key bag inside an EncryptedData opens');
  t.equal(readPkcs12(pfx({ keyScheme: 'aes256' }), PASSWORD).subjectRut, '11111111-1', 'a PBES2 key bag opens');

  for (const [what, counts, where] of [
    ['the MAC', { mac: HUGE }, /MAC/],
    ['the MAC, one over', { mac: 200_001 }, /MAC/],
    ['a shrouded key bag (PKCS#12 PBE)', { key: HUGE }, /shrouded key bag/],
    ['a shrouded key bag (PBES2)', { key: HUGE, keyScheme: 'aes256' }, /shrouded key bag/],
    ['an EncryptedData content', { nestedIn: HUGE }, /encrypted content/],
    ['a shrouded key bag inside an EncryptedData of 2048', { nestedIn: NORMAL, key: HUGE }, /shrouded key bag/],
    ['a count wider than 64 bits', { key: 10n ** 30n }, /shrouded key bag/],
  ] as const) {
    const { error, ms } = refused(pfx(counts));
    t.type(error, CertificateError, what);
    t.match((error as Error).message, where, `${what}: where`);
    const n = [...Object.values(counts)].find((v) => typeof v === 'bigint' || (typeof v === 'number' && v > 200_000))!;
    t.match((error as Error).message, typeof n === 'bigint' ? 'a 100-bit number' : n.toLocaleString('en-US'), `${what}: the count named`);
    t.ok(ms < 500, `${what}: refused in ${ms.toFixed(0)} ms`);
  }
});

t.test('through the admin router: 400 naming file, fast; a normal certificate is still added', async (t) => {
  const sii = siiAuthority();
  t.teardown(() => sii.cleanup());
  const TOKEN = 'adm_test_0123456789abcdefghijklmnopqrstuvwxyz';
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile, ADMIN_TOKEN: TOKEN });
  const admin = createCaller({ app: h.ctx, authorization: `Bearer ${TOKEN}` });
  const m = await h.merchant();
  await admin.merchants.setTaxProfile({ merchant_id: m.id, tax_profile: DTE_PROFILE });

  const started = performance.now();
  const err = await admin.dte.addCertificate({ merchant_id: m.id, file_base64: pfx({ mac: HUGE, key: HUGE }).toString('base64'), password: PASSWORD }).then(
    () => null,
    (e: unknown) => e,
  );
  const ms = performance.now() - started;
  t.type(err, TRPCError);
  t.equal((err as TRPCError).code, 'BAD_REQUEST');
  t.match((err as TRPCError).cause, { code: 'validation_error', details: { errors: [{ path: 'file', message: /2,000,000 key-derivation iterations/ }] } });
  t.ok(ms < 1000, `refused in ${ms.toFixed(0)} ms`);
  const [row] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM dte_certificates WHERE merchant_id = ${m.id}`;
  t.equal(row!.n, 0, 'nothing stored');

  const added = await admin.dte.addCertificate({ merchant_id: m.id, file_base64: merchantPkcs12({ password: PASSWORD }).toString('base64'), password: PASSWORD });
  t.match(added, { merchant_id: m.id, subject_rut: '11111111-1' }, 'a normal file (2048) is added');
});

t.test('through the CLI: exit 1 and a JSON error naming file', async (t) => {
  const sii = siiAuthority();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pkcs12-bounds-'));
  t.teardown(() => {
    sii.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });
  process.env.ENCRYPTION_KEY = TEST_ENV.ENCRYPTION_KEY;
  process.env.SII_CERT_FILE = sii.certFile;
  process.env.PKCS12_BOUNDS_PASSWORD = PASSWORD;
  const h = await testApp(t, { SII_CERT_FILE: sii.certFile });
  const m = await h.merchant();
  await runCli(h.dbUrl, 'merchants', 'set-tax-profile', '--merchant', m.id,
    '--rut', '76.086.428-5', '--razon-social', DTE_PROFILE.razon_social, '--giro', DTE_PROFILE.giro, '--direccion', DTE_PROFILE.direccion,
    '--comuna', DTE_PROFILE.comuna, '--ciudad', DTE_PROFILE.ciudad, '--acteco', '620200', '--resolucion-numero', '0', '--resolucion-fecha', '2014-08-22', '--sii-env', 'certificacion');
  const huge = path.join(dir, 'huge.p12');
  writeFileSync(huge, pfx({ mac: HUGE, key: HUGE }));
  const refusedByCli = await runCli(h.dbUrl, 'dte', 'certificate', 'add', '--merchant', m.id, '--file', huge, '--password-env', 'PKCS12_BOUNDS_PASSWORD');
  t.equal(refusedByCli.code, 1);
  t.match(refusedByCli.out.error, { code: 'validation_error', details: { errors: [{ path: 'file', message: /2,000,000 key-derivation iterations/ }] } });

  const normal = path.join(dir, 'normal.p12');
  writeFileSync(normal, merchantPkcs12({ password: PASSWORD }));
  const added = await runCli(h.dbUrl, 'dte', 'certificate', 'add', '--merchant', m.id, '--file', normal, '--password-env', 'PKCS12_BOUNDS_PASSWORD');
  t.equal(added.code, 0);
  t.match(added.out, { merchant_id: m.id, subject_rut: '11111111-1' });
});
