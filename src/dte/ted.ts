// The timbre electrónico (TED): the document's key data (DD) signed with the CAF's private key,
// which the PDF prints as a PDF417 barcode and anyone can check offline with the CAF's public key.
import { sign } from 'node:crypto';
import { create } from 'xmlbuilder2';
import { latin1Bytes, parseFlat } from './xml.js';

export interface TimbreData {
  /** Issuer's RUT. */
  RE: string;
  TD: number;
  F: number;
  /** Issue date, YYYY-MM-DD. */
  FE: string;
  /** Receiver's RUT. */
  RR: string;
  /** Receiver's name, at most 40 characters. */
  RSR: string;
  MNT: string;
  /** First item's name, at most 40 characters. */
  IT1: string;
  /** The CAF element, as loaded. */
  CAF: string;
  /** Stamping time, YYYY-MM-DDTHH:MM:SS. */
  TSTED: string;
}

export interface Timbre {
  /** The TED element as signed: its text is the barcode's content. */
  text: string;
  /** The same element for xmlbuilder2, to place in the document. */
  element: Record<string, unknown>;
  /** The DD element whose ISO-8859-1 bytes FRMT signs. */
  signedData: string;
}

/** DD signed with SHA1withRSA over its ISO-8859-1 bytes, written with no namespace and no whitespace between tags. */
export function stampTimbre(data: TimbreData, cafPrivateKeyPem: string): Timbre {
  const caf = (parseFlat(data.CAF).end({ format: 'object' }) as { CAF: unknown }).CAF;
  // In the schema's order, whatever order the caller's object has.
  const dd = {
    RE: data.RE,
    TD: String(data.TD),
    F: String(data.F),
    FE: data.FE,
    RR: data.RR,
    RSR: data.RSR,
    MNT: data.MNT,
    IT1: data.IT1,
    CAF: caf,
    TSTED: data.TSTED,
  };
  const signedData = create({ DD: dd }).end({ headless: true });
  const frmt = sign('sha1', latin1Bytes(signedData), cafPrivateKeyPem).toString('base64');
  const element = { '@version': '1.0', DD: dd, FRMT: { '@algoritmo': 'SHA1withRSA', '#': frmt } };
  return { text: create({ TED: element }).end({ headless: true }), element, signedData };
}
