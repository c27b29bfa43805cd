// A CAF (Código de Autorización de Folios): the XML SII issues authorising a range of folios of
// one document type, signed by SII, with the key pair that stamps those documents' timbres.
import { createPrivateKey, verify, X509Certificate } from 'node:crypto';
import { flat, latin1Bytes, parseFlat } from './xml.js';

export const DTE_TYPES = [33, 34, 39, 41, 56, 61] as const;
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

/** At most this many bytes: a CAF SII issues is about 2 KB. */
export const MAX_CAF_BYTES = 64 * 1024;
/** At most this many elements deep: a CAF is 4 (AUTORIZACION, CAF, DA, RNG/RSAPK, D/H/M/E). */
export const MAX_CAF_DEPTH = 32;
/** A CAF has 17 elements and an XML declaration; the layout allows each element once. */
const MAX_CAF_NODES = 64;
/** A CAF has 2 attributes (CAF's version, FRMA's algoritmo). */
const MAX_CAF_ATTRIBUTES = 16;

/**
 * The CAF's layout as SII writes it, each element with the one element it stands in; every one
 * at most once. `required` ones must be there.
 */
const LAYOUT: Record<string, { in: string | null; required: boolean }> = {
  AUTORIZACION: { in: null, required: true },
  CAF: { in: 'AUTORIZACION', required: true },
  DA: { in: 'CAF', required: true },
  RE: { in: 'DA', required: true },
  RS: { in: 'DA', required: false },
  TD: { in: 'DA', required: true },
  RNG: { in: 'DA', required: true },
  D: { in: 'RNG', required: true },
  H: { in: 'RNG', required: true },
  FA: { in: 'DA', required: true },
  RSAPK: { in: 'DA', required: true },
  M: { in: 'RSAPK', required: true },
  E: { in: 'RSAPK', required: true },
  IDK: { in: 'DA', required: true },
  FRMA: { in: 'CAF', required: true },
  RSASK: { in: 'AUTORIZACION', required: true },
  RSAPUBK: { in: 'AUTORIZACION', required: false },
};
/** The DA's fields, wherever they nest inside it: none may appear anywhere else. */
const DA_FIELDS = ['RE', 'RS', 'TD', 'RNG', 'D', 'H', 'FA', 'RSAPK', 'M', 'E', 'IDK'];
/** Elements whose content is text alone. */
const LEAVES = new Set(['RE', 'RS', 'TD', 'D', 'H', 'FA', 'M', 'E', 'IDK', 'FRMA', 'RSASK', 'RSAPUBK']);

/**
 * The file's markup, bounded by one linear scan of its tags before any parse: elements nest at
 * most MAX_CAF_DEPTH deep, and there are at most MAX_CAF_NODES elements, comments, CDATA sections
 * and processing instructions, and MAX_CAF_ATTRIBUTES attributes (the parser spends seconds on
 * thousands of nested elements, and close to that on thousands of siblings or attributes). A
 * DOCTYPE, which no CAF has, is refused. For any prefix the parser would accept the counts are
 * exact; anything else the parser refuses anyway.
 */
function checkMarkup(xml: string): void {
  const notXml = () => new CafError('the file is not XML');
  let depth = 0;
  let nodes = 0;
  let attributes = 0;
  let i = 0;
  const skipTo = (terminator: string, from: number) => {
    const end = xml.indexOf(terminator, from);
    if (end < 0) throw notXml();
    return end + terminator.length;
  };
  while ((i = xml.indexOf('<', i)) !== -1) {
    if (xml[i + 1] !== '/' && ++nodes > MAX_CAF_NODES) {
      throw new CafError(`the file has more than ${MAX_CAF_NODES} elements, comments and processing instructions; a CAF has 17 elements`);
    }
    if (xml.startsWith('<!--', i)) i = skipTo('-->', i + 4);
    else if (xml.startsWith('<![CDATA[', i)) i = skipTo(']]>', i + 9);
    else if (xml.startsWith('<?', i)) i = skipTo('?>', i + 2);
    else if (xml.startsWith('<!', i)) throw new CafError('the file declares a DOCTYPE; a CAF has none');
    else if (xml[i + 1] === '/') {
      if (--depth < 0) throw notXml();
      i = skipTo('>', i + 2);
    } else {
      // A start tag: it ends at the first '>' outside quoted attribute values; an attribute is an '='.
      let j = i + 1;
      let quote = '';
      for (; j < xml.length; j++) {
        const c = xml[j];
        if (quote) {
          if (c === quote) quote = '';
        } else if (c === '"' || c === "'") quote = c;
        else if (c === '=') {
          if (++attributes > MAX_CAF_ATTRIBUTES) throw new CafError(`the file has more than ${MAX_CAF_ATTRIBUTES} attributes; a CAF has 2`);
        } else if (c === '>') break;
      }
      if (j >= xml.length) throw notXml();
      if (xml[j - 1] !== '/' && ++depth > MAX_CAF_DEPTH) throw new CafError(`the file's elements nest more than ${MAX_CAF_DEPTH} deep; a CAF nests 5`);
      i = j + 1;
    }
  }
}

type Node = ReturnType<typeof parseFlat>;

const ELEMENT = 1;
const elementsOf = (el: Node): Node[] => el.toArray(false, false).filter((c) => c.node.nodeType === ELEMENT);

/**
 * The CAF's elements by name, each checked to stand where SII puts it and be there once: one CAF,
 * one DA, and the DA's fields inside that DA only.
 */
function layout(doc: Node): Map<string, Node> {
  const root = doc.root();
  const all: { el: Node; name: string; parent: string | null }[] = [];
  const walk = (el: Node, parent: string | null) => {
    const name = el.node.nodeName;
    all.push({ el, name, parent });
    for (const child of elementsOf(el)) walk(child, name);
  };
  walk(root, null);
  const count = (name: string) => all.filter((e) => e.name === name).length;

  if (root.node.nodeName !== 'AUTORIZACION') throw new CafError(`the file is not a CAF (its root is ${root.node.nodeName}, not AUTORIZACION)`);
  for (const name of ['CAF', 'DA']) {
    const n = count(name);
    if (n !== 1) throw new CafError(n ? `the file has ${n} ${name} elements; a CAF file has exactly one` : `the file is not a CAF (no ${name} element)`);
  }
  for (const e of all) {
    if (e.name !== 'CAF' && e.name !== 'DA' && !DA_FIELDS.includes(e.name)) continue;
    if (e.parent !== LAYOUT[e.name]!.in) {
      const what = DA_FIELDS.includes(e.name) ? `the DA's field ${e.name}` : e.name;
      throw new CafError(`${what} stands inside ${e.parent}, not inside ${LAYOUT[e.name]!.in} as SII signs it; only the signed DA is read`);
    }
  }
  const found = new Map<string, Node>();
  for (const e of all) {
    if (e.name === 'DSAPK') throw new CafError('the CAF has no RSA key (RSAPK); only RSA CAFs are supported');
    const place = LAYOUT[e.name];
    if (!place) throw new CafError(`the file has an element ${e.name} (inside ${e.parent}) that a CAF has not`);
    if (e.parent !== place.in) throw new CafError(`${e.name} stands inside ${e.parent}, not inside ${place.in} as SII lays a CAF out`);
    if (found.has(e.name)) throw new CafError(`the file has more than one ${e.name}; a CAF has one`);
    if (LEAVES.has(e.name) && elementsOf(e.el).length) throw new CafError(`the CAF's ${e.name} holds elements; it holds text only`);
    found.set(e.name, e.el);
  }
  if (!found.has('RSAPK')) throw new CafError('the CAF has no RSA key (RSAPK); only RSA CAFs are supported');
  for (const [name, place] of Object.entries(LAYOUT)) {
    if (place.required && !found.has(name)) throw new CafError(`the CAF has no ${name}`);
  }
  return found;
}

function text(fields: Map<string, Node>, name: string): string {
  const value = fields.get(name)?.node.textContent?.trim();
  if (!value) throw new CafError(`the CAF has no ${name}`);
  return value;
}

function integer(fields: Map<string, Node>, name: string): number {
  const value = text(fields, name);
  if (!/^\d{1,10}$/.test(value)) throw new CafError(`the CAF's ${name} is not a number`);
  return Number(value);
}

/**
 * The CAF of a file, every field read from its one DA, the one SII signed (docs/decisions.md §19). The file
 * is refused before any parse past 64 KiB, 32 elements deep or 64 elements, and after it when it
 * has a second CAF or DA, a DA field outside the DA, or anything that is not where SII puts it.
 */
export function parseCaf(file: Buffer): Caf {
  if (file.length > MAX_CAF_BYTES) throw new CafError(`the file is ${file.length} bytes; a CAF is at most ${MAX_CAF_BYTES} (64 KiB)`);
  const xml = decode(file);
  checkMarkup(xml);
  let doc: Node;
  try {
    doc = parseFlat(xml);
  } catch {
    throw new CafError('the file is not XML');
  }
  const fields = layout(doc);
  const dteType = integer(fields, 'TD');
  if (!(DTE_TYPES as readonly number[]).includes(dteType)) throw new CafError(`the CAF is for document type ${dteType}; only ${DTE_TYPES.join(', ')} are issued`);
  const from = integer(fields, 'D');
  const to = integer(fields, 'H');
  if (from < 1 || to < from) throw new CafError(`the CAF's range ${from}..${to} is not a range of folios`);
  const authorizedOn = text(fields, 'FA');
  if (!/^\d{4}-\d{2}-\d{2}$/.test(authorizedOn)) throw new CafError("the CAF's FA is not a date");
  return {
    rut: text(fields, 'RE').replace(/\./g, '').toUpperCase(),
    dteType: dteType as DteType,
    from,
    to,
    authorizedOn,
    idk: integer(fields, 'IDK'),
    cafXml: flat(fields.get('CAF')!),
    signedData: flat(fields.get('DA')!),
    signature: text(fields, 'FRMA'),
    modulus: text(fields, 'M'),
    privateKeyPem: text(fields, 'RSASK'),
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
