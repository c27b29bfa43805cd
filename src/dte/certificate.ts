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

/**
 * The key and certificate of a PKCS#12 file. A wrong password, a file that is not PKCS#12, or
 * one without an RSA key and its certificate is a CertificateError saying which.
 */
export function readPkcs12(file: Buffer, password: string): SigningIdentity {
  let p12: forge.pkcs12.Pkcs12Pfx;
  try {
    p12 = forge.pkcs12.pkcs12FromAsn1(forge.asn1.fromDer(file.toString('binary')), false, password);
  } catch (err) {
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
