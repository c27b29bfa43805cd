// XMLDSig as SII checks it (docs/decisions.md §15): enveloped, RSA-SHA1 over inclusive C14N, the
// reference by the element's ID, KeyInfo carrying the RSA key value and the certificate.
import { SignedXml } from 'xml-crypto';
import type { SigningIdentity } from './certificate.js';

const RSA_SHA1 = 'http://www.w3.org/2000/09/xmldsig#rsa-sha1';
const SHA1 = 'http://www.w3.org/2000/09/xmldsig#sha1';
const C14N = 'http://www.w3.org/TR/2001/REC-xml-c14n-20010315';
const ENVELOPED = 'http://www.w3.org/2000/09/xmldsig#enveloped-signature';

function signer(identity: SigningIdentity): SignedXml {
  const keyInfo =
    `<KeyValue><RSAKeyValue><Modulus>${identity.modulus}</Modulus><Exponent>${identity.exponent}</Exponent></RSAKeyValue></KeyValue>` +
    `<X509Data><X509Certificate>${identity.certificateBase64}</X509Certificate></X509Data>`;
  return new SignedXml({
    privateKey: identity.privateKeyPem,
    signatureAlgorithm: RSA_SHA1,
    canonicalizationAlgorithm: C14N,
    getKeyInfoContent: () => keyInfo,
  });
}

/**
 * The document with a Signature appended to its root, over the root's child `element` (which
 * carries its own ID attribute, the reference's URI). The input is the whole document the
 * signature belongs to: what namespaces the signed element inherits is part of what is signed.
 */
export function signElement(xml: string, element: string, identity: SigningIdentity): string {
  const sig = signer(identity);
  sig.addReference({ xpath: `/*/*[local-name(.)='${element}']`, transforms: [ENVELOPED], digestAlgorithm: SHA1 });
  sig.computeSignature(xml, { location: { reference: '/*', action: 'append' } });
  return sig.getSignedXml();
}

/** The document with a Signature appended to its root, over the whole document (URI ""): how SII's authentication signs its seed. */
export function signDocument(xml: string, identity: SigningIdentity): string {
  const sig = signer(identity);
  sig.addReference({ xpath: '/*', isEmptyUri: true, transforms: [ENVELOPED], digestAlgorithm: SHA1 });
  sig.computeSignature(xml, { location: { reference: '/*', action: 'append' } });
  return sig.getSignedXml();
}
