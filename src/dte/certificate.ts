// The merchant's signing certificate: a PKCS#12 file and its password, read with node-forge.
import forge from 'node-forge';

/** What signing a document needs of the certificate, and what support staff are shown of it. */
export interface SigningIdentity {
  privateKeyPem: string;
  /** The certificate's DER as base64: KeyInfo's X509Certificate. */
  certificateBase64: string;
  /** The public key's modulus and exponent as base64: KeyInfo's RSAKeyValue. */
  modulus: string;
  exponent: string;
  /** The holder's RUT: the person who signs, the Carátula's RutEnvia. */
  subjectRut: string;
  subjectName: string;
  notAfter: Date;
}

export class CertificateError extends Error {}

// Chilean certificates carry the holder's RUT as an otherName of subjectAltName (Ley 19.799).
const RUT_OTHER_NAME = '1.3.6.1.4.1.8321.1';

function bigIntegerBase64(n: forge.jsbn.BigInteger): string {
  let hex = n.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  return Buffer.from(hex, 'hex').toString('base64');
}

function normalisedRut(value: string): string | null {
  const m = /^0*(\d{1,8})-?([\dkK])$/.exec(value.replace(/\./g, '').trim());
  return m ? `${m[1]}-${m[2]!.toUpperCase()}` : null;
}

/** The RUT in subjectAltName's otherName, else in the subject's serialNumber. */
function holderRut(cert: forge.pki.Certificate): string | null {
  const san = cert.getExtension('subjectAltName') as { altNames?: { type: number; value: unknown }[] } | null;
  for (const alt of san?.altNames ?? []) {
    if (alt.type !== 0 || !Array.isArray(alt.value)) continue;
    const [oid, wrapped] = alt.value as forge.asn1.Asn1[];
    if (!oid || forge.asn1.derToOid(oid.value as string) !== RUT_OTHER_NAME) continue;
    const inner = Array.isArray(wrapped?.value) ? (wrapped.value[0] as forge.asn1.Asn1 | undefined) : undefined;
    if (typeof inner?.value === 'string') return normalisedRut(inner.value);
  }
  const serial = cert.subject.getField({ name: 'serialNumber' }) as { value?: string } | null;
  return serial?.value ? normalisedRut(serial.value) : null;
}

// Real Chilean certificates use a few thousand; the count is the file's own, and forge's key
// derivation runs on the event loop (2,000,000 held it for seconds), so it is bounded first.
export const MAX_PKCS12_ITERATIONS = 200_000;

const { Class, Type } = forge.asn1;

// What @types/node-forge leaves out of the parts of forge this reads: asn1.validate with pkcs7's
// EncryptedData schema, and pbe.getCipher (the cipher forge itself decrypts a PBE block with).
interface EncryptedDataCapture {
  encAlgorithm?: string;
  encParameter?: forge.asn1.Asn1;
  encryptedContentAsn1?: forge.asn1.Asn1;
}
const forgeAsn1 = forge.asn1 as typeof forge.asn1 & { validate(obj: forge.asn1.Asn1, schema: unknown, capture: object, errors: unknown[]): boolean };
const encryptedDataSchema = (forge.pkcs7 as unknown as { asn1: { encryptedDataValidator: unknown } }).asn1.encryptedDataValidator;
const pbeCipher = (forge.pki as unknown as { pbe: { getCipher(oid: string, params: forge.asn1.Asn1, password: string): forge.cipher.BlockCipher } }).pbe.getCipher;

/** An INTEGER's value, unsigned as forge reads iteration counts; null when it is not an INTEGER. */
function integerValue(node: forge.asn1.Asn1 | undefined): bigint | null {
  if (!node || node.tagClass !== Class.UNIVERSAL || node.type !== Type.INTEGER || typeof node.value !== 'string') return null;
  const hex = Buffer.from(node.value, 'binary').toString('hex');
  return hex ? BigInt(`0x${hex}`) : 0n;
}

function boundedCount(node: forge.asn1.Asn1 | undefined, where: string): void {
  const count = integerValue(node);
  if (count === null || count <= BigInt(MAX_PKCS12_ITERATIONS)) return;
  const shown = count.toString().length > 24 ? `a ${count.toString(2).length}-bit number` : count.toLocaleString('en-US');
  throw new CertificateError(
    `the PKCS#12 file asks for ${shown} key-derivation iterations (${where}); at most ${MAX_PKCS12_ITERATIONS.toLocaleString('en-US')} are accepted`,
  );
}

const children = (node: forge.asn1.Asn1 | undefined): forge.asn1.Asn1[] => (node && Array.isArray(node.value) ? node.value : []);

/** An OCTET STRING's bytes, its BER chunks joined as forge's _decodePkcs7Data does. */
function octets(node: forge.asn1.Asn1 | undefined): string | null {
  if (!node) return null;
  if (typeof node.value === 'string') return node.value;
  return children(node)
    .map((c) => (typeof c.value === 'string' ? c.value : ''))
    .join('');
}

const oidOf = (node: forge.asn1.Asn1 | undefined): string | null =>
  node && node.tagClass === Class.UNIVERSAL && node.type === Type.OID && typeof node.value === 'string' ? forge.asn1.derToOid(node.value) : null;

/**
 * The iteration counts of a PBE AlgorithmIdentifier's parameters, where forge's pbe reads them:
 * PBES2's PBKDF2-params (salt, iterationCount, keyLength?) and pkcs-12PbeParams (salt, iterations).
 */
function boundedPbe(oid: string | null, params: forge.asn1.Asn1 | undefined, where: string): void {
  if (oid === forge.pki.oids.pkcs5PBES2) {
    const kdfParams = children(children(params)[0])[1];
    for (const c of children(kdfParams)) boundedCount(c, where);
  } else {
    // pkcs-12PbeParams, and any other scheme's parameters that carry a count where these do.
    for (const c of children(params)) boundedCount(c, where);
  }
}

/** Every count in a SafeContents (a SEQUENCE OF SafeBag): each shrouded key bag's. */
function boundedSafeContents(ber: string): void {
  let safeContents: forge.asn1.Asn1;
  try {
    safeContents = forge.asn1.fromDer(ber, false);
  } catch {
    return; // forge refuses it in its turn
  }
  for (const bag of children(safeContents)) {
    const [bagId, bagValue] = children(bag);
    if (oidOf(bagId) !== forge.pki.oids.pkcs8ShroudedKeyBag) continue;
    // EncryptedPrivateKeyInfo: SEQUENCE { AlgorithmIdentifier { oid, params }, OCTET STRING }
    const [algorithm] = children(children(bagValue)[0]);
    const [oid, params] = children(algorithm);
    boundedPbe(oidOf(oid), params, 'shrouded key bag');
  }
}

/**
 * Refuses a PFX that asks for more than MAX_PKCS12_ITERATIONS in any key derivation forge would
 * run on it: the MacData's, each EncryptedData content's, each shrouded key bag's (those inside an
 * EncryptedData too, read once its own, bounded, count has decrypted it). Anything not shaped as
 * forge expects is left for forge to refuse.
 */
function assertIterationsBounded(pfx: forge.asn1.Asn1, password: string): void {
  const [, authSafe, ...rest] = children(pfx);
  for (const macData of rest) {
    // MacData: SEQUENCE { DigestInfo, macSalt OCTET STRING, iterations INTEGER DEFAULT 1 }
    for (const c of children(macData)) boundedCount(c, 'MAC');
  }
  const [contentType, content] = children(authSafe);
  if (oidOf(contentType) !== forge.pki.oids.data) return;
  const authSafeBer = octets(children(content)[0]);
  if (authSafeBer === null) return;
  let contentInfos: forge.asn1.Asn1;
  try {
    contentInfos = forge.asn1.fromDer(authSafeBer, false);
  } catch {
    return;
  }
  for (const contentInfo of children(contentInfos)) {
    const [type, wrapped] = children(contentInfo);
    const data = children(wrapped)[0];
    const oid = oidOf(type);
    if (oid === forge.pki.oids.data) {
      const ber = octets(data);
      if (ber !== null) boundedSafeContents(ber);
    } else if (oid === forge.pki.oids.encryptedData) {
      const capture: EncryptedDataCapture = {};
      if (!data || !forgeAsn1.validate(data, encryptedDataSchema, capture, []) || !capture.encAlgorithm || !capture.encParameter) continue;
      const encOid = forge.asn1.derToOid(capture.encAlgorithm);
      boundedPbe(encOid, capture.encParameter, 'encrypted content');
      // Its count is bounded now; decrypting shows the bags inside, whose counts forge reads next.
      try {
        const cipher = pbeCipher(encOid, capture.encParameter, password);
        cipher.update(forge.util.createBuffer(octets(capture.encryptedContentAsn1) ?? ''));
        if (cipher.finish()) boundedSafeContents(cipher.output.getBytes());
      } catch (err) {
        if (err instanceof CertificateError) throw err;
        // a wrong password or an unsupported scheme: forge says which in its turn
      }
    }
  }
}

/**
 * The key and certificate of a PKCS#12 file. A wrong password, a file that is not PKCS#12, one
 * asking for more than MAX_PKCS12_ITERATIONS in a key derivation (docs/decisions.md §19), or one without
 * an RSA key and its certificate is a CertificateError saying which.
 */
export function readPkcs12(file: Buffer, password: string): SigningIdentity {
  let p12: forge.pkcs12.Pkcs12Pfx;
  try {
    const pfx = forge.asn1.fromDer(file.toString('binary'));
    assertIterationsBounded(pfx, password);
    p12 = forge.pkcs12.pkcs12FromAsn1(pfx, false, password);
  } catch (err) {
    if (err instanceof CertificateError) throw err;
    const message = err instanceof Error ? err.message : '';
    // forge names a wrong password only by what it does to the MAC or the decrypted structure.
    if (/mac|password|decrypt|invalid/i.test(message)) throw new CertificateError('the password does not open this PKCS#12 file');
    throw new CertificateError('the file is not a PKCS#12 (.p12 / .pfx) certificate');
  }
  const keyBag =
    p12.getBags({ bagType: forge.pki.oids.pkcs8ShroudedKeyBag! })[forge.pki.oids.pkcs8ShroudedKeyBag!]?.[0] ??
    p12.getBags({ bagType: forge.pki.oids.keyBag! })[forge.pki.oids.keyBag!]?.[0];
  const key = keyBag?.key as forge.pki.rsa.PrivateKey | undefined;
  if (!key?.n) throw new CertificateError('the PKCS#12 file holds no RSA private key');
  const certs = (p12.getBags({ bagType: forge.pki.oids.certBag! })[forge.pki.oids.certBag!] ?? []).flatMap((b) => (b.cert ? [b.cert] : []));
  // The holder's certificate is the one of this key; a file may carry its CA chain too.
  const cert = certs.find((c) => (c.publicKey as forge.pki.rsa.PublicKey).n?.equals(key.n));
  if (!cert) throw new CertificateError('the PKCS#12 file holds no certificate for its private key');
  const subjectRut = holderRut(cert);
  if (!subjectRut) throw new CertificateError("the certificate names no holder's RUT (subjectAltName 1.3.6.1.4.1.8321.1 or serialNumber)");
  const publicKey = cert.publicKey as forge.pki.rsa.PublicKey;
  const der = forge.asn1.toDer(forge.pki.certificateToAsn1(cert)).getBytes();
  return {
    privateKeyPem: forge.pki.privateKeyToPem(key),
    certificateBase64: Buffer.from(der, 'binary').toString('base64'),
    modulus: bigIntegerBase64(publicKey.n),
    exponent: bigIntegerBase64(publicKey.e),
    subjectRut,
    subjectName: String(cert.subject.getField('CN')?.value ?? cert.subject.attributes.map((a) => a.value).join(', ')),
    notAfter: cert.validity.notAfter,
  };
}
