// A stand-in for the SII's DTE web services on 127.0.0.1, speaking their exchanges as SII's
// WSDLs and its libraries do: CrSeed and GetTokenFromSeed (SOAP rpc, the answer an escaped
// SII:RESPUESTA), DTEUpload (multipart, TOKEN cookie, RECEPCIONDTE), QueryEstUp and QueryEstDte.
// It checks what SII checks of our side (the signed seed's XMLDSig, the token, the EnvioDTE's
// signature and each DTE's on its own) and answers as scripted, faults included.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DOMParser, XMLSerializer, type Element, type Node } from '@xmldom/xmldom';
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
    faults: { unavailable: false, garbage: 0, loseUploadAnswer: 0, delayMs: 0 },
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
    const form = await new Response(new Uint8Array(raw), { headers: { 'content-type': req.headers['content-type'] ?? '' } }).formData();
    const file = form.get('archivo');
    if (!(file instanceof Blob)) return { answer: recepcion('2') };
    const xml = Buffer.from(await file.arrayBuffer()).toString('latin1');
    const doc = parser().parseFromString(xml, 'text/xml');
    const root = doc.documentElement!;
    const set = childNamed(root, 'SetDTE');
    if (!set) return { answer: recepcion('7') };
    const dtes = children(set).filter((c) => c.localName === 'DTE');
    // SII checks each DTE on its own, out of the envelope (decisions §15).
    const dtesValid = dtes.every((dte) => {
      const standalone = new XMLSerializer().serializeToString(dte);
      return signatureValid(standalone, childNamed(parser().parseFromString(standalone, 'text/xml').documentElement!, 'Signature'));
    });
    const signaturesValid = dtesValid && signatureValid(xml, childNamed(root, 'Signature'));
    if (!signaturesValid) return { answer: recepcion('8') };
    const upload: Upload = {
      trackId: String(nextTrack++),
      sender: `${form.get('rutSender')}-${form.get('dvSender')}`,
      company: `${form.get('rutCompany')}-${form.get('dvCompany')}`,
      filename: (file as File).name,
      documents: dtes.map((dte) => ({
        type: Number(dte.getElementsByTagName('TipoDTE')[0]?.textContent),
        folio: Number(dte.getElementsByTagName('Folio')[0]?.textContent),
      })),
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
        const n = upload.documents.filter((d) => d.type === type).length;
        const [a, r, rep] = o.kind === 'accepted' ? [n, 0, 0] : o.kind === 'rejected' ? [0, n, 0] : [0, 0, n];
        return `<TIPO_DOCTO>${type}</TIPO_DOCTO><INFORMADOS>${n}</INFORMADOS><ACEPTADOS>${a}</ACEPTADOS><RECHAZADOS>${r}</RECHAZADOS><REPAROS>${rep}</REPAROS>`;
      })
      .join('');
    return SOAP('getEstUp', RESPUESTA(hdr('EPR', 'Envio Procesado'), counts));
  }

  function documentAnswer(p: Record<string, string>): string {
    s.documentQueries++;
    if (!validTokens.has(p.Token ?? '')) return SOAP('getEstDte', RESPUESTA('<ESTADO>001</ESTADO><GLOSA>Token Inactivo</GLOSA>'));
    const found = s.uploads.find(
      (u) => u.company === `${p.RutCompania}-${p.DvCompania}` && u.outcome.kind !== 'rejected' && u.outcome.kind !== 'envelope_rejected' &&
        u.documents.some((d) => d.type === Number(p.TipoDte) && d.folio === Number(p.FolioDte)),
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
