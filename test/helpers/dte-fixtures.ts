// Everything SII and a certificate authority would hand a merchant, made fresh by each test with
// its own keys: an "SII" certificate (SII_CERT_FILE), a merchant's PKCS#12 with its password,
// and CAFs signed by that SII key. No private key of anyone real is ever involved.
import { createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DOMParser, XMLSerializer, type Document, type Element, type Node } from '@xmldom/xmldom';
import forge from 'node-forge';
import { SignedXml } from 'xml-crypto';
import { create } from 'xmlbuilder2';
import type { Config } from '../../src/config.js';
import type { Sql } from '../../src/db/client.js';
import { addCaf, addCertificate } from '../../src/dte/service.js';
import { setTaxProfile } from '../../src/merchants/service.js';
import type { SecretBox } from '../../src/secret-box.js';

const { asn1, pki } = forge;

function rsaKeys(bits: number) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: bits });
  return {
    privatePem: privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
    jwk: publicKey.export({ format: 'jwk' }) as { n: string; e: string },
  };
}

function selfSigned(commonName: string, keyPem: string, opts: { serialNumber?: string; rut?: string; notAfter?: Date } = {}) {
  const key = pki.privateKeyFromPem(keyPem) as forge.pki.rsa.PrivateKey;
  const cert = pki.createCertificate();
  cert.publicKey = pki.setRsaPublicKey(key.n, key.e);
  cert.serialNumber = '0a';
  cert.validity.notBefore = new Date(Date.now() - 86_400_000);
  cert.validity.notAfter = opts.notAfter ?? new Date(Date.now() + 365 * 86_400_000);
  const subject = [{ name: 'commonName', value: commonName }, { name: 'countryName', value: 'CL' }];
  if (opts.serialNumber) subject.push({ name: 'serialNumber', value: opts.serialNumber });
  cert.setSubject(subject);
  cert.setIssuer(subject);
  if (opts.rut) {
    // The holder's RUT as Chilean certificates carry it: subjectAltName otherName 1.3.6.1.4.1.8321.1.
    const otherName = asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, [
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer('1.3.6.1.4.1.8321.1').getBytes()),
      asn1.create(asn1.Class.CONTEXT_SPECIFIC, 0, true, [asn1.create(asn1.Class.UNIVERSAL, asn1.Type.IA5STRING, false, opts.rut)]),
    ]);
    cert.setExtensions([{ id: '2.5.29.17', value: asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [otherName]) }]);
  }
  cert.sign(key, forge.md.sha256.create());
  return { cert, pem: pki.certificateToPem(cert), key };
}

/** The test's "SII": the key that signs CAFs, its certificate in a file for SII_CERT_FILE. */
export interface SiiAuthority {
  certFile: string;
  certPem: string;
  privateKeyPem: string;
  cleanup(): void;
}

export function siiAuthority(): SiiAuthority {
  const keys = rsaKeys(1024);
  const { pem } = selfSigned('Servicio de Impuestos Internos (test)', keys.privatePem);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'sii-'));
  const certFile = path.join(dir, 'sii.pem');
  writeFileSync(certFile, pem);
  return { certFile, certPem: pem, privateKeyPem: keys.privatePem, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A merchant's signing certificate as a PKCS#12 file, its holder named by RUT. */
export function merchantPkcs12(opts: { password: string; rut?: string; name?: string; notAfter?: Date; rutIn?: 'altName' | 'serialNumber' }): Buffer {
  const keys = rsaKeys(2048);
  const rut = opts.rut ?? '11111111-1';
  const { cert, key } = selfSigned(opts.name ?? 'Juana Pérez Soto', keys.privatePem, {
    notAfter: opts.notAfter,
    ...(opts.rutIn === 'serialNumber' ? { serialNumber: rut } : { rut }),
  });
  const p12 = forge.pkcs12.toPkcs12Asn1(key, [cert], opts.password, { algorithm: '3des' });
  return Buffer.from(asn1.toDer(p12).getBytes(), 'binary');
}

export interface CafOptions {
  rut: string;
  razonSocial?: string;
  type: number;
  from: number;
  to: number;
  authorizedOn?: string;
  idk?: number;
  /** Signs with this key instead of the SII's (a forged CAF). */
  signWith?: string;
}

/**
 * A CAF file as SII hands them out: ISO-8859-1, one element a line, DA signed by the SII key
 * (SHA1withRSA over DA with no whitespace between tags), and the folios' own 512-bit key pair.
 */
export function cafFile(sii: SiiAuthority, o: CafOptions): Buffer {
  const keys = rsaKeys(512);
  const da = {
    RE: o.rut,
    RS: o.razonSocial ?? 'COMERCIAL PEÑALOLÉN SPA',
    TD: String(o.type),
    RNG: { D: String(o.from), H: String(o.to) },
    FA: o.authorizedOn ?? '2026-01-15',
    RSAPK: { M: Buffer.from(keys.jwk.n, 'base64url').toString('base64'), E: Buffer.from(keys.jwk.e, 'base64url').toString('base64') },
    IDK: String(o.idk ?? 100),
  };
  const frma = sign('sha1', Buffer.from(create({ DA: da }).end({ headless: true }), 'latin1'), o.signWith ?? sii.privateKeyPem).toString('base64');
  const body = create({
    AUTORIZACION: { CAF: { '@version': '1.0', DA: da, FRMA: { '@algoritmo': 'SHA1withRSA', '#': frma } }, RSASK: keys.privatePem, RSAPUBK: 'not used' },
  }).end({ headless: true, prettyPrint: true });
  return Buffer.from(`<?xml version="1.0"?>\n${body}\n`, 'latin1');
}

/** A merchant's tax profile complete for DTEs, as `merchants set-tax-profile` takes it. */
export const DTE_PROFILE = {
  rut: '76086428-5',
  razon_social: 'Comercial Peñalolén SpA',
  giro: 'Servicios de consultoría informática',
  acteco: '620200',
  direccion: 'Av. Grecia 1234',
  comuna: 'Peñalolén',
  ciudad: 'Santiago',
  resolucion_numero: 0,
  resolucion_fecha: '2014-08-22',
  sii_env: 'certificacion' as const,
};

/**
 * A merchant fully set up for DTEs through the same services the CLI and the admin router call:
 * the tax profile, a certificate and, per entry of `cafs`, a CAF signed by `sii`.
 */
export async function dteMerchant(
  h: { sql: Sql; ctx: { secrets: SecretBox; config: Pick<Config, 'SII_CERT_FILE'> } },
  merchantId: string,
  sii: SiiAuthority,
  cafs: Omit<CafOptions, 'rut'>[],
): Promise<void> {
  await setTaxProfile(h.sql, merchantId, DTE_PROFILE);
  await addCertificate(h.sql, h.ctx.secrets, merchantId, merchantPkcs12({ password: 'clave-de-prueba' }), 'clave-de-prueba');
  for (const c of cafs) await addCaf(h.sql, h.ctx.config, h.ctx.secrets, merchantId, cafFile(sii, { rut: DTE_PROFILE.rut, ...c }));
}

/** One signature checked by an independent verifier: xml-crypto with the certificate of its own KeyInfo. */
function checkSignature(xml: string, signature: Node): boolean {
  const verifier = new SignedXml({ getCertFromKeyInfo: SignedXml.getCertFromKeyInfo });
  verifier.loadSignature(new XMLSerializer().serializeToString(signature));
  return verifier.checkSignature(xml);
}

const childNamed = (parent: Element, name: string) => Array.from(parent.childNodes).find((n): n is Element => (n as Element).localName === name);

export interface ReadDte {
  /** The document parsed, to read values from. */
  doc: Document;
  /** The Documento signature, checked on the DTE taken out of its envelope. */
  dteSignatureValid: boolean;
  /** The EnvioDTE's signature over SetDTE. */
  envelopeSignatureValid: boolean;
  /** FRMT checked with the CAF's own public key (RSAPK M and E) over DD's ISO-8859-1 bytes. */
  timbreValid: boolean;
  /** The TED element as it stands in the file. */
  ted: string;
  /** Text of the first element of that name. */
  value(name: string): string | null;
  values(name: string): string[];
}

/**
 * A signed EnvioDTE read as SII and a receiver read it, with nothing of this service's code: its
 * declared encoding, both XMLDSig signatures, and the timbre.
 */
export function readDte(envio: Buffer): ReadDte {
  const xml = envio.toString('latin1');
  const doc = new DOMParser().parseFromString(xml, 'text/xml');
  const root = doc.documentElement!;
  const dte = childNamed(childNamed(root, 'SetDTE')!, 'DTE')!;
  // SII checks the DTE on its own, out of the envelope (docs/decisions.md §15).
  const standalone = new XMLSerializer().serializeToString(dte);
  const standaloneDoc = new DOMParser().parseFromString(standalone, 'text/xml');
  const ted = /<TED version="1\.0">.*?<\/TED>/s.exec(xml)?.[0] ?? '';
  const dd = /<DD>.*<\/DD>/s.exec(ted)?.[0] ?? '';
  const frmt = /<FRMT algoritmo="SHA1withRSA">([^<]+)<\/FRMT>/.exec(ted)?.[1] ?? '';
  const jwk = (tag: string) => Buffer.from(/<RSAPK><M>([^<]+)<\/M><E>([^<]+)<\/E><\/RSAPK>/.exec(dd)?.[tag === 'n' ? 1 : 2] ?? '', 'base64').toString('base64url');
  const cafKey = createPublicKey({ key: { kty: 'RSA', n: jwk('n'), e: jwk('e') }, format: 'jwk' });
  const byName = (name: string) => Array.from(doc.getElementsByTagName(name)).map((e) => e.textContent ?? '');
  return {
    doc,
    dteSignatureValid: checkSignature(standalone, childNamed(standaloneDoc.documentElement!, 'Signature')!),
    envelopeSignatureValid: checkSignature(xml, childNamed(root, 'Signature')!),
    timbreValid: verify('sha1', Buffer.from(dd, 'latin1'), cafKey, Buffer.from(frmt, 'base64')),
    ted,
    value: (name) => byName(name)[0] ?? null,
    values: byName,
  };
}
