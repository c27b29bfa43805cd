// A stand-in for the SII's DTE web services on 127.0.0.1, speaking their exchanges as SII's
// WSDLs and its libraries do: CrSeed and GetTokenFromSeed (SOAP rpc, the answer an escaped
// SII:RESPUESTA), DTEUpload (multipart, TOKEN cookie, RECEPCIONDTE), QueryEstUp and QueryEstDte.
// It checks what SII checks of our side (the signed seed's XMLDSig, the token, the EnvioDTE's
// signature and each DTE's on its own), refuses each DTE that SII would refuse (docs/decisions.md §17:
// the receiver, amounts to the peso, a note's references, the timbre's data) and otherwise
// answers as scripted, faults included.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DOMParser, XMLSerializer, type Element, type Node } from '@xmldom/xmldom';
import BigNumber from 'bignumber.js';
import { SignedXml } from 'xml-crypto';
import { readBytes } from './standin-http.js';

export type Outcome =
  | { kind: 'accepted' }
  | { kind: 'objections' }
  /** The upload's documents rejected in the counts of a processed envelope (EPR). */
  | { kind: 'rejected' }
  /** The whole envelope rejected with this state, e.g. RCT "Rechazado por Error en Carátula". */
  | { kind: 'envelope_rejected'; code: string; glosa: string };

export interface Upload {
  trackId: string;
  sender: string;
  company: string;
  filename: string;
  documents: { type: number; folio: number }[];
  /**
   * Parallel to `documents`: what SII refuses of each (docs/decisions.md §17), in words naming the element
   * and the figures; empty when it passes. A document with problems is rejected whatever `outcome`.
   */
  rejections: { type: number; folio: number; problems: string[] }[];
  /** Each DTE's signature held out of the envelope, and the envelope's. */
  signaturesValid: boolean;
  outcome: Outcome;
  polls: number;
}

export interface SiiStandin {
  url: string;
  uploads: Upload[];
  seeds: number;
  tokens: number;
  statusQueries: number;
  documentQueries: number;
  /** The outcome given to uploads received from now on. */
  outcome: Outcome;
  /** How many status queries of an upload answer "under way" (PDR) before its outcome. */
  underWayPolls: number;
  faults: {
    /** Every call answered 503. */
    unavailable: boolean;
    /** The next this-many calls answered with 200 and text that is not XML. */
    garbage: number;
    /** The next this-many uploads are received, and their answer lost (the connection dropped). */
    loseUploadAnswer: number;
    /** Every upload refused with this STATUS (7 schema, 8 signature…) while set. */
    refuseUploads: string | null;
    /** Every answer waits this long first. */
    delayMs: number;
  };
  /** Tokens issued so far stop being valid (SII's tokens expire). */
  expireTokens(): void;
  /** Stops listening (connection refused) until `start`. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

const SOAP = (op: string, inner: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">` +
  `<soapenv:Body><ns1:${op}Response soapenv:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/" xmlns:ns1="http://DefaultNamespace">` +
  `<ns1:${op}Return xsi:type="xsd:string">${escape(`<?xml version="1.0" encoding="UTF-8"?>${inner}`)}</ns1:${op}Return></ns1:${op}Response></soapenv:Body></soapenv:Envelope>`;
const RESPUESTA = (hdr: string, body = '') =>
  `<SII:RESPUESTA xmlns:SII="http://www.sii.cl/XMLSchema"><SII:RESP_HDR>${hdr}</SII:RESP_HDR>${body ? `<SII:RESP_BODY>${body}</SII:RESP_BODY>` : ''}</SII:RESPUESTA>`;

function escape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

const parser = () => new DOMParser({ onError: () => {} });
const children = (el: Element) => Array.from(el.childNodes).filter((n): n is Element => (n as Element).localName !== undefined && n.nodeType === 1);
const childNamed = (el: Element, name: string) => children(el).find((c) => c.localName === name);
const childrenNamed = (el: Element, name: string) => children(el).filter((c) => c.localName === name);

/** The element down that path of child names, if every step is there. */
function at(el: Element | undefined, ...names: string[]): Element | undefined {
  return names.reduce<Element | undefined>((e, name) => (e ? childNamed(e, name) : undefined), el);
}

/** The trimmed text down that path; undefined when absent or empty, as SII reads an empty element. */
function textAt(el: Element | undefined, ...names: string[]): string | undefined {
  return at(el, ...names)?.textContent?.trim() || undefined;
}

// SII's arithmetic: exact decimals, whole pesos rounded half up.
const Pesos = BigNumber.clone({ ROUNDING_MODE: BigNumber.ROUND_HALF_UP });
type Pesos = BigNumber;

const DTE_TYPES = [33, 34, 39, 41, 56, 61];
// Documents to a taxpayer, who must be named in full; 39 and 41 are boletas.
const NAMED_RECEIVER_TYPES = [33, 34, 56, 61];
const NOTE_TYPES = [56, 61];
const RECEIVER_FIELDS = ['RUTRecep', 'RznSocRecep', 'GiroRecep', 'DirRecep', 'CmnaRecep'];
const FINAL_CONSUMER_RUT = '66666666-6';

/**
 * A stated figure against SII's: a mismatch is a problem. An absent figure reads as 0 unless
 * `required`, as SII omits zero totals.
 */
function compare(problems: string[], name: string, stated: string | undefined, computed: Pesos, required = false): void {
  if (stated === undefined) {
    if (required || !computed.isZero()) problems.push(`${name} missing, ${computed.toFixed()} computed`);
  } else if (!new Pesos(stated).isEqualTo(computed)) {
    problems.push(`${name} ${stated} != ${computed.toFixed()} computed`);
  }
}

function receiverProblems(doc: Element, type: number): string[] {
  if (!NAMED_RECEIVER_TYPES.includes(type)) return [];
  const receptor = at(doc, 'Encabezado', 'Receptor');
  const missing = RECEIVER_FIELDS.filter((name) => textAt(receptor, name) === undefined).map((name) => `Receptor has no ${name}`);
  const generic = textAt(receptor, 'RUTRecep') === FINAL_CONSUMER_RUT ? [`RUTRecep ${FINAL_CONSUMER_RUT} is the final consumer's, for boletas (39, 41) only, not type ${type}`] : [];
  return [...missing, ...generic];
}

/** A Detalle's MontoItem and line discount against its quantity and price. */
function lineProblems(line: Element, index: number): string[] {
  const label = `Detalle ${textAt(line, 'NroLinDet') ?? index + 1}`;
  const quantity = textAt(line, 'QtyItem');
  const price = textAt(line, 'PrcItem');
  if ((quantity === undefined) !== (price === undefined)) return [`${label} has ${quantity === undefined ? 'PrcItem without QtyItem' : 'QtyItem without PrcItem'}`];
  // A line with neither (a note correcting text) amounts to nothing.
  const gross = quantity && price ? new Pesos(quantity).times(price).integerValue() : new Pesos(0);
  const problems: string[] = [];
  const percent = textAt(line, 'DescuentoPct');
  const discount = textAt(line, 'DescuentoMonto');
  if (percent !== undefined) compare(problems, `${label} DescuentoMonto`, discount, gross.times(percent).shiftedBy(-2).integerValue());
  compare(problems, `${label} MontoItem`, textAt(line, 'MontoItem'), gross.minus(discount ?? 0), true);
  return problems;
}

interface Sums {
  taxable: Pesos;
  exempt: Pesos;
}

/** The sums of the lines' MontoItem as stated (a wrong line is its own problem, not every total's). */
function lineSums(doc: Element, type: number): Sums {
  const exempt = (line: Element) => type === 34 || textAt(line, 'IndExe') === '1';
  const sum = (lines: Element[]) => lines.reduce((total, line) => total.plus(textAt(line, 'MontoItem') ?? 0), new Pesos(0));
  const lines = childrenNamed(doc, 'Detalle');
  return { taxable: sum(lines.filter((l) => !exempt(l))), exempt: sum(lines.filter(exempt)) };
}

/** The sums after DscRcgGlobal: a percentage of its sum of lines, D taken off and R added. */
function afterGlobal(doc: Element, type: number, lines: Sums): Sums {
  return childrenNamed(doc, 'DscRcgGlobal').reduce((sums, dr) => {
    const exempt = type === 34 || textAt(dr, 'IndExeDR') === '1';
    const value = textAt(dr, 'ValorDR') ?? '0';
    const base = exempt ? lines.exempt : lines.taxable;
    const amount = textAt(dr, 'TpoValor') === '%' ? base.times(value).shiftedBy(-2).integerValue() : new Pesos(value);
    const signed = textAt(dr, 'TpoMov') === 'R' ? amount : amount.negated();
    return exempt ? { ...sums, exempt: sums.exempt.plus(signed) } : { ...sums, taxable: sums.taxable.plus(signed) };
  }, lines);
}

/** A credit note that corrects text only (CodRef 2) moves no money. */
function correctsText(doc: Element, type: number): boolean {
  return type === 61 && childrenNamed(doc, 'Referencia').some((ref) => textAt(ref, 'CodRef') === '2');
}

/** Totales against the lines: each figure against the stated ones it derives from, so one wrong figure is one problem. */
function totalsProblems(doc: Element, type: number): string[] {
  const totales = at(doc, 'Encabezado', 'Totales');
  if (!totales) return ['no Totales'];
  const stated = (name: string) => textAt(totales, name);
  const figure = (name: string) => new Pesos(stated(name) ?? 0);
  const sums = afterGlobal(doc, type, lineSums(doc, type));
  const problems: string[] = [];
  const rate = stated('TasaIVA');
  if (rate === undefined && !sums.taxable.isZero()) problems.push('TasaIVA missing');
  if (type === 34) {
    compare(problems, 'MntNeto', stated('MntNeto'), new Pesos(0));
    compare(problems, 'IVA', stated('IVA'), new Pesos(0));
  } else if (textAt(doc, 'Encabezado', 'IdDoc', 'MntBruto') === '1') {
    // Lines with VAT included: the taxable sum is gross, its net part rounded and VAT the rest.
    compare(problems, 'MntNeto', stated('MntNeto'), sums.taxable.times(100).div(new Pesos(rate ?? 0).plus(100)).integerValue());
    compare(problems, 'IVA', stated('IVA'), sums.taxable.minus(figure('MntNeto')));
  } else {
    compare(problems, 'MntNeto', stated('MntNeto'), sums.taxable);
    compare(problems, 'IVA', stated('IVA'), figure('MntNeto').times(rate ?? 0).shiftedBy(-2).integerValue());
  }
  compare(problems, 'MntExe', stated('MntExe'), sums.exempt);
  compare(problems, 'MntTotal', stated('MntTotal'), figure('MntNeto').plus(figure('MntExe')).plus(figure('IVA')), true);
  if (correctsText(doc, type) && !figure('MntTotal').isZero()) problems.push(`MntTotal ${stated('MntTotal')} in a note correcting text (CodRef 2), 0 expected`);
  return problems;
}

function amountProblems(doc: Element, type: number): string[] {
  return [...childrenNamed(doc, 'Detalle').flatMap(lineProblems), ...totalsProblems(doc, type)];
}

function referenceProblems(doc: Element, type: number): string[] {
  if (!NOTE_TYPES.includes(type)) return [];
  const refs = childrenNamed(doc, 'Referencia').filter((ref) => DTE_TYPES.includes(Number(textAt(ref, 'TpoDocRef'))));
  if (!refs.length) return [`no Referencia to a DTE (TpoDocRef ${DTE_TYPES.join(', ')}) in a type ${type} note`];
  return refs.flatMap((ref, index) => {
    const label = `Referencia ${textAt(ref, 'NroLinRef') ?? index + 1} (${textAt(ref, 'TpoDocRef')} folio ${textAt(ref, 'FolioRef') ?? '?'})`;
    const missing = ['FolioRef', 'FchRef', 'CodRef'].filter((name) => textAt(ref, name) === undefined).map((name) => `${label} has no ${name}`);
    const code = textAt(ref, 'CodRef');
    return code === undefined || ['1', '2', '3'].includes(code) ? missing : [...missing, `${label} CodRef ${code} is not 1, 2 or 3`];
  });
}

// What the timbre states of the document, which must be what the document says.
const TIMBRE_FIELDS: [string, string[]][] = [
  ['TD', ['Encabezado', 'IdDoc', 'TipoDTE']],
  ['F', ['Encabezado', 'IdDoc', 'Folio']],
  ['MNT', ['Encabezado', 'Totales', 'MntTotal']],
];

function timbreProblems(doc: Element): string[] {
  const dd = at(doc, 'TED', 'DD');
  if (!dd) return ['no TED DD'];
  return TIMBRE_FIELDS.flatMap(([field, path]) => {
    const [timbre, document] = [textAt(dd, field), textAt(doc, ...path)];
    return timbre === document ? [] : [`TED DD/${field} ${timbre} != ${path.at(-1)} ${document}`];
  });
}

/** Why SII refuses this DTE (docs/decisions.md §17); none when it passes. */
function dteProblems(dte: Element): string[] {
  const doc = childNamed(dte, 'Documento');
  if (!doc) return ['no Documento'];
  const type = Number(textAt(doc, 'Encabezado', 'IdDoc', 'TipoDTE'));
  return [...receiverProblems(doc, type), ...amountProblems(doc, type), ...referenceProblems(doc, type), ...timbreProblems(doc)];
}

/** XMLDSig checked as SII does: the certificate of its own KeyInfo, over the document given. */
function signatureValid(xml: string, signature: Node | undefined): boolean {
  if (!signature) return false;
  try {
    const verifier = new SignedXml({ getCertFromKeyInfo: SignedXml.getCertFromKeyInfo });
    verifier.loadSignature(new XMLSerializer().serializeToString(signature));
    return verifier.checkSignature(xml);
  } catch {
    return false;
  }
}

/** The parameters of an rpc SOAP request: the operation's child elements by name. */
function soapParams(xml: string): { op: string; params: Record<string, string> } {
  const doc = parser().parseFromString(xml, 'text/xml');
  const bodyEl = Array.from(doc.getElementsByTagNameNS('http://schemas.xmlsoap.org/soap/envelope/', 'Body'))[0]!;
  const op = children(bodyEl)[0]!;
  return { op: op.localName!, params: Object.fromEntries(children(op).map((c) => [c.localName!, c.textContent ?? ''])) };
}

export async function startSiiStandin(t: { teardown(fn: () => unknown): void }): Promise<SiiStandin> {
  const seeds = new Set<string>();
  let validTokens = new Set<string>();
  let nextTrack = 4_000_000_000;
  let server: Server | null = null;
  let port = 0;

  const s: SiiStandin = {
    url: '',
    uploads: [],
    seeds: 0,
    tokens: 0,
    statusQueries: 0,
    documentQueries: 0,
    outcome: { kind: 'accepted' },
    underWayPolls: 0,
    faults: { unavailable: false, garbage: 0, loseUploadAnswer: 0, refuseUploads: null, delayMs: 0 },
    expireTokens: () => {
      validTokens = new Set();
    },
    stop: async () => {
      const running = server;
      server = null;
      if (!running) return;
      running.closeAllConnections();
      await new Promise<void>((resolve) => running.close(() => resolve()));
    },
    start: async () => {
      if (server) return;
      server = createServer((req, res) => {
        handle(req, res).catch((err) => {
          res.statusCode = 500;
          res.end(String(err));
        });
      });
      await new Promise<void>((resolve) => server!.listen(port, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
      s.url = `http://127.0.0.1:${port}`;
    },
    close: () => s.stop(),
  };

  function seedAnswer(): string {
    const seed = String(Math.floor(Math.random() * 1e12)).padStart(12, '0');
    seeds.add(seed);
    s.seeds++;
    return SOAP('getSeed', RESPUESTA('<ESTADO>00</ESTADO>', `<SEMILLA>${seed}</SEMILLA>`));
  }

  function tokenAnswer(pszXml: string): string {
    const doc = parser().parseFromString(pszXml, 'text/xml');
    const root = doc.documentElement!;
    const seed = root.getElementsByTagName('Semilla')[0]?.textContent ?? '';
    const valid = root.localName === 'getToken' && seeds.has(seed) && signatureValid(pszXml, childNamed(root, 'Signature'));
    if (!valid) return SOAP('getToken', RESPUESTA('<ESTADO>-07</ESTADO><GLOSA>Firma invalida</GLOSA>'));
    seeds.delete(seed);
    const token = `TK${Math.random().toString(36).slice(2, 14).toUpperCase()}`;
    validTokens.add(token);
    s.tokens++;
    return SOAP('getToken', RESPUESTA('<ESTADO>00</ESTADO><GLOSA>Token Creado</GLOSA>', `<TOKEN>${token}</TOKEN>`));
  }

  function recepcion(status: string, trackId?: string): string {
    return `<?xml version="1.0" encoding="UTF-8"?>\n<RECEPCIONDTE>\n<RUTSENDER>x</RUTSENDER>\n<RUTCOMPANY>x</RUTCOMPANY>\n<FILE>x</FILE>\n<TIMESTAMP>2026-01-01 10:00:00</TIMESTAMP>\n<STATUS>${status}</STATUS>\n${trackId ? `<TRACKID>${trackId}</TRACKID>\n` : ''}</RECEPCIONDTE>`;
  }

  async function uploadAnswer(req: IncomingMessage, raw: Buffer): Promise<{ answer: string; upload?: Upload }> {
    const token = /(?:^|;\s*)TOKEN=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    if (!token || !validTokens.has(token)) return { answer: recepcion('5') };
    if (s.faults.refuseUploads) return { answer: recepcion(s.faults.refuseUploads) };
    const form = await new Response(new Uint8Array(raw), { headers: { 'content-type': req.headers['content-type'] ?? '' } }).formData();
    const file = form.get('archivo');
    if (!(file instanceof Blob)) return { answer: recepcion('2') };
    const xml = Buffer.from(await file.arrayBuffer()).toString('latin1');
    const doc = parser().parseFromString(xml, 'text/xml');
    const root = doc.documentElement!;
    const set = childNamed(root, 'SetDTE');
    if (!set) return { answer: recepcion('7') };
    const dtes = children(set).filter((c) => c.localName === 'DTE');
    // SII checks each DTE on its own, out of the envelope (docs/decisions.md §15).
    const dtesValid = dtes.every((dte) => {
      const standalone = new XMLSerializer().serializeToString(dte);
      return signatureValid(standalone, childNamed(parser().parseFromString(standalone, 'text/xml').documentElement!, 'Signature'));
    });
    const signaturesValid = dtesValid && signatureValid(xml, childNamed(root, 'Signature'));
    if (!signaturesValid) return { answer: recepcion('8') };
    const rejections = dtes.map((dte) => ({
      type: Number(dte.getElementsByTagName('TipoDTE')[0]?.textContent),
      folio: Number(dte.getElementsByTagName('Folio')[0]?.textContent),
      problems: dteProblems(dte),
    }));
    const upload: Upload = {
      trackId: String(nextTrack++),
      sender: `${form.get('rutSender')}-${form.get('dvSender')}`,
      company: `${form.get('rutCompany')}-${form.get('dvCompany')}`,
      filename: (file as File).name,
      documents: rejections.map(({ type, folio }) => ({ type, folio })),
      rejections,
      signaturesValid,
      outcome: s.outcome,
      polls: 0,
    };
    s.uploads.push(upload);
    return { answer: recepcion('0', upload.trackId), upload };
  }

  function statusAnswer(p: Record<string, string>): string {
    s.statusQueries++;
    if (!validTokens.has(p.Token ?? '')) return SOAP('getEstUp', RESPUESTA('<ESTADO>001</ESTADO><GLOSA>Token Inactivo</GLOSA>'));
    const upload = s.uploads.find((u) => u.trackId === p.TrackId && u.company === `${p.RutCompania}-${p.DvCompania}`);
    if (!upload) return SOAP('getEstUp', RESPUESTA('<ESTADO>-11</ESTADO><GLOSA>No existe</GLOSA>'));
    upload.polls++;
    const hdr = (code: string, glosa: string) => `<RUTCOMPANIA>${p.RutCompania}</RUTCOMPANIA><DVCOMPANIA>${p.DvCompania}</DVCOMPANIA><TRACKID>${upload.trackId}</TRACKID><ESTADO>${code}</ESTADO><GLOSA>${glosa}</GLOSA><NUM_ATENCION>123 (2026/01/01 10:00:00)</NUM_ATENCION>`;
    if (upload.polls <= s.underWayPolls) return SOAP('getEstUp', RESPUESTA(hdr('PDR', 'Envio en Proceso')));
    const o = upload.outcome;
    if (o.kind === 'envelope_rejected') return SOAP('getEstUp', RESPUESTA(hdr(o.code, o.glosa)));
    const types = [...new Set(upload.documents.map((d) => d.type))];
    const counts = types
      .map((type) => {
        const ofType = upload.rejections.filter((d) => d.type === type);
        const refused = ofType.filter((d) => d.problems.length).length;
        // The documents that pass are counted as the script says.
        const passed = ofType.length - refused;
        const a = o.kind === 'accepted' ? passed : 0;
        const r = refused + (o.kind === 'rejected' ? passed : 0);
        const rep = o.kind === 'objections' ? passed : 0;
        return `<TIPO_DOCTO>${type}</TIPO_DOCTO><INFORMADOS>${ofType.length}</INFORMADOS><ACEPTADOS>${a}</ACEPTADOS><RECHAZADOS>${r}</RECHAZADOS><REPAROS>${rep}</REPAROS>`;
      })
      .join('');
    return SOAP('getEstUp', RESPUESTA(hdr('EPR', 'Envio Procesado'), counts));
  }

  function documentAnswer(p: Record<string, string>): string {
    s.documentQueries++;
    if (!validTokens.has(p.Token ?? '')) return SOAP('getEstDte', RESPUESTA('<ESTADO>001</ESTADO><GLOSA>Token Inactivo</GLOSA>'));
    const found = s.uploads.find(
      (u) => u.company === `${p.RutCompania}-${p.DvCompania}` && u.outcome.kind !== 'rejected' && u.outcome.kind !== 'envelope_rejected' &&
        u.rejections.some((d) => d.type === Number(p.TipoDte) && d.folio === Number(p.FolioDte) && !d.problems.length),
    );
    return SOAP(
      'getEstDte',
      RESPUESTA(found ? '<ESTADO>DOK</ESTADO><GLOSA_ESTADO>Documento Recibido por el SII. Datos Coinciden con los Registrados</GLOSA_ESTADO>' : '<ESTADO>FAU</ESTADO><GLOSA_ESTADO>Documento No Recibido por el SII</GLOSA_ESTADO>'),
    );
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBytes(req);
    if (s.faults.delayMs) await new Promise((r) => setTimeout(r, s.faults.delayMs));
    const send = (text: string, type = 'text/xml; charset=utf-8') => {
      res.writeHead(200, { 'content-type': type });
      res.end(text);
    };
    if (s.faults.unavailable) {
      res.writeHead(503, { 'content-type': 'text/html' });
      res.end('<html>Servicio no disponible</html>');
      return;
    }
    if (s.faults.garbage > 0) {
      s.faults.garbage--;
      return send('<html><body>Error interno <b>', 'text/html');
    }
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/cgi_dte/UPL/DTEUpload' && req.method === 'POST') {
      const { answer, upload } = await uploadAnswer(req, raw);
      if (upload && s.faults.loseUploadAnswer > 0) {
        s.faults.loseUploadAnswer--;
        req.socket.destroy();
        return;
      }
      return send(answer);
    }
    const service = /^\/DTEWS\/(\w+)\.jws$/.exec(path)?.[1];
    if (!service || req.method !== 'POST') {
      res.writeHead(404);
      res.end();
      return;
    }
    const { op, params } = soapParams(raw.toString('utf8'));
    if (service === 'CrSeed' && op === 'getSeed') return send(seedAnswer());
    if (service === 'GetTokenFromSeed' && op === 'getToken') return send(tokenAnswer(params.pszXml ?? ''));
    if (service === 'QueryEstUp' && op === 'getEstUp') return send(statusAnswer(params));
    if (service === 'QueryEstDte' && op === 'getEstDte') return send(documentAnswer(params));
    res.writeHead(500);
    res.end('unknown operation');
  }

  await s.start();
  t.teardown(() => s.close());
  return s;
}
