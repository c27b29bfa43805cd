// A CAF (Código de Autorización de Folios): the XML SII issues authorising a range of folios of
// one document type, signed by SII, with the key pair that stamps those documents' timbres.
import { createPrivateKey, verify, X509Certificate } from 'node:crypto';
import { findElement, flat, latin1Bytes, parseFlat } from './xml.js';

export const DTE_TYPES = [33, 34, 56, 61] as const;
export type DteType = (typeof DTE_TYPES)[number];

export interface Caf {
  rut: string;
  dteType: DteType;
  from: number;
  to: number;
  /** FA, YYYY-MM-DD. */
  authorizedOn: string;
  /** The serial of the SII key that signed it: 100 certificación, 300 producción. */
  idk: number;
  /** The CAF element as the timbre copies it. */
  cafXml: string;
  /** DA as SII signed it. */
  signedData: string;
  /** FRMA, base64. */
  signature: string;
  /** RSAPK's modulus, base64. */
  modulus: string;
  /** RSASK: the key that stamps the timbres of these folios. */
  privateKeyPem: string;
}

export class CafError extends Error {}

/** SII writes CAFs in ISO-8859-1 whatever the declaration says; a UTF-8 file is read as such. */
function decode(file: Buffer): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(file);
  } catch {
    return file.toString('latin1');
  }
}

function text(doc: ReturnType<typeof parseFlat>, name: string): string {
  const el = findElement(doc, name);
  const value = el?.node.textContent?.trim();
  if (!value) throw new CafError(`the CAF has no ${name}`);
  return value;
}

function integer(doc: ReturnType<typeof parseFlat>, name: string): number {
  const value = text(doc, name);
  if (!/^\d{1,10}$/.test(value)) throw new CafError(`the CAF's ${name} is not a number`);
  return Number(value);
}

export function parseCaf(file: Buffer): Caf {
  let doc: ReturnType<typeof parseFlat>;
  try {
    doc = parseFlat(decode(file));
  } catch {
    throw new CafError('the file is not XML');
  }
  const caf = findElement(doc, 'CAF');
  const da = findElement(doc, 'DA');
  if (!caf || !da) throw new CafError('the file is not a CAF (no CAF and DA elements)');
  if (!findElement(doc, 'RSAPK')) throw new CafError('the CAF has no RSA key (RSAPK); only RSA CAFs are supported');
  const dteType = integer(doc, 'TD');
  if (!(DTE_TYPES as readonly number[]).includes(dteType)) throw new CafError(`the CAF is for document type ${dteType}; only ${DTE_TYPES.join(', ')} are issued`);
  const from = integer(doc, 'D');
  const to = integer(doc, 'H');
  if (from < 1 || to < from) throw new CafError(`the CAF's range ${from}..${to} is not a range of folios`);
  const authorizedOn = text(doc, 'FA');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(authorizedOn)) throw new CafError("the CAF's FA is not a date");
  return {
    rut: text(doc, 'RE').replace(/\./g, '').toUpperCase(),
    dteType: dteType as DteType,
    from,
    to,
    authorizedOn,
    idk: integer(doc, 'IDK'),
    cafXml: flat(caf),
    signedData: flat(da),
    signature: text(doc, 'FRMA'),
    modulus: text(doc, 'M'),
    privateKeyPem: text(doc, 'RSASK'),
  };
}

const unsigned = (base64: string) => Buffer.from(base64, 'base64').toString('hex').replace(/^0+/, '');

/**
 * SII signed this CAF (FRMA, SHA1withRSA over DA as ISO-8859-1 bytes, with the key of the
 * certificate given), and its private key is the one whose public half DA publishes.
 */
export function verifyCaf(caf: Caf, siiCertificatePem: string): void {
  const siiKey = new X509Certificate(siiCertificatePem).publicKey;
  if (!verify('sha1', latin1Bytes(caf.signedData), siiKey, Buffer.from(caf.signature, 'base64'))) {
    throw new CafError("the CAF's SII signature (FRMA) does not verify with the SII certificate");
  }
  let jwk: { n?: string };
  try {
    jwk = createPrivateKey(caf.privateKeyPem).export({ format: 'jwk' });
  } catch {
    throw new CafError("the CAF's private key (RSASK) cannot be read");
  }
  if (!jwk.n || unsigned(Buffer.from(jwk.n, 'base64url').toString('base64')) !== unsigned(caf.modulus)) {
    throw new CafError("the CAF's private key (RSASK) is not the pair of its public key (RSAPK)");
  }
}
