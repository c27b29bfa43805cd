// The EnvioDTE: signed DTEs in a SetDTE with its Carátula, the whole set signed again; what is
// uploaded to SII (one or several documents of a merchant) and kept as an invoice's tax document.
import { create } from 'xmlbuilder2';
import type { SigningIdentity } from './certificate.js';
import { SII_NAMESPACE } from './document.js';
import { signElement } from './sign.js';
import { latin1Bytes } from './xml.js';

// SII's own RUT: the receiver of every EnvioDTE uploaded to it.
export const SII_RUT = '60803000-K';
const SET_ID = 'SetDoc';
// A comment marks where the signed DTEs go: each is placed as the text it was signed as.
const DTE_PLACE = '<!--DTE-->';

export interface Caratula {
  rutEmisor: string;
  /** The RUT of the person whose certificate signs. */
  rutEnvia: string;
  resolucionFecha: string;
  resolucionNumero: number;
  signedAt: string;
}

export interface SignedDte {
  type: number;
  /** The DTE element as it was signed. */
  xml: string;
}

/** The signed EnvioDTE of signed DTEs, as its ISO-8859-1 bytes with their declaration. */
export function buildEnvioDte(c: Caratula, dtes: SignedDte[], identity: SigningIdentity): Buffer {
  return buildEnvelope({ root: 'EnvioDTE', schema: 'EnvioDTE_v10.xsd' }, c, dtes, identity);
}

/**
 * An envelope of signed documents with its Carátula, the whole set signed again: the EnvioDTE of
 * facturas and notes, and the EnvioBOLETA of boletas, which differ only in their root and schema.
 */
export function buildEnvelope(kind: { root: 'EnvioDTE' | 'EnvioBOLETA'; schema: string }, c: Caratula, dtes: SignedDte[], identity: SigningIdentity): Buffer {
  const types = [...new Set(dtes.map((d) => d.type))].sort((a, b) => a - b);
  const envelope = create({
    [kind.root]: {
      '@xmlns': SII_NAMESPACE,
      '@xmlns:xsi': 'http://www.w3.org/2001/XMLSchema-instance',
      '@xsi:schemaLocation': `${SII_NAMESPACE} ${kind.schema}`,
      '@version': '1.0',
      SetDTE: {
        '@ID': SET_ID,
        Caratula: {
          '@version': '1.0',
          RutEmisor: c.rutEmisor,
          RutEnvia: c.rutEnvia,
          RutReceptor: SII_RUT,
          FchResol: c.resolucionFecha,
          NroResol: String(c.resolucionNumero),
          TmstFirmaEnv: c.signedAt,
          SubTotDTE: types.map((t) => ({ TpoDTE: String(t), NroDTE: String(dtes.filter((d) => d.type === t).length) })),
        },
        '!': 'DTE',
      },
    },
  }).end({ headless: true });
  if (!envelope.includes(DTE_PLACE)) throw new Error(`the ${kind.root} lost the place of its documents`);
  const signed = signElement(envelope.replace(DTE_PLACE, dtes.map((d) => d.xml).join('')), 'SetDTE', identity);
  return latin1Bytes(`<?xml version="1.0" encoding="ISO-8859-1"?>\n${signed}`);
}
