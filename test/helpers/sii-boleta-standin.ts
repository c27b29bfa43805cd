// A stand-in for the SII's boleta REST service on 127.0.0.1 (docs/decisions.md §20), one server for both
// of its hosts (SII_BOLETA_API_URL and SII_BOLETA_UPLOAD_URL): seed and token (the signed seed's
// XMLDSig checked, the seed one it gave), the EnvioBOLETA upload (multipart fields, TOKEN cookie
// and the User-Agent SII asks for; the envelope read and its signatures checked), the upload's
// state as SII's JSON (REC, then EPR with estadistica and detalle_rep_rech) and one boleta's state
// by its data. Faults as scripted: an outage, a lost upload answer, refused tokens.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DOMParser, XMLSerializer, type Element, type Node } from '@xmldom/xmldom';
import { SignedXml } from 'xml-crypto';
import { readBytes, sendJson } from './standin-http.js';

export const BOLETA_USER_AGENT = 'Mozilla/4.0 ( compatible; PROG 1.0; Windows NT)';

export interface StandinBoleta {
  tipo: number;
  folio: number;
  /** MntTotal, as written. */
  montoTotal: string;
  /** FchEmis, YYYY-MM-DD. */
  fechaEmision: string;
}

export interface BoletaUpload {
  trackid: string;
  /** rutSender-dvSender and rutCompany-dvCompany as the form gave them. */
  sender: string;
  company: string;
  filename: string;
  /** The archivo part's content type. */
  fileType: string;
  /** The envelope as uploaded (ISO-8859-1 read). */
  xml: string;
  /** RutEmisor of the Carátula. */
  rutEmisor: string;
  boletas: StandinBoleta[];
  /** Each DTE's signature held out of the envelope, and the envelope's. */
  signaturesValid: boolean;
  /** The envelope's state once processed: EPR, or the rejection decided at upload (RSC, RFR, RCT). */
  estado: string;
  /** Per boleta "tipo-folio": its detalle_rep_rech estado (RCH, RPR) when it has one. */
  repRech: Map<string, { estado: string; descripcion: string }>;
  polls: number;
}

export interface SiiBoletaStandin {
  url: string;
  uploads: BoletaUpload[];
  seeds: number;
  tokens: number;
  statusQueries: number;
  folioQueries: number;
  /**
   * Status queries of an upload answered before its outcome: the first REC, the next ones EPR with
   * estadistica but detalle_rep_rech null (SII's "still processing").
   */
  processingPolls: number;
  /** Folios rejected (RCH in detalle_rep_rech) in uploads received from now on, any tipo. */
  rejectFolios: Set<number>;
  /** Folios accepted with objections (RPR) in uploads received from now on. */
  objectionFolios: Set<number>;
  faults: {
    /** Every call answered 503. */
    unavailable: boolean;
    /** The next this-many uploads are recorded, and their answer lost (the connection dropped). */
    loseUploadAnswer: number;
  };
  /** Tokens issued so far stop being valid: the next call with one is answered 401. */
  expireTokens(): void;
  /** Stops listening (connection refused) until `start`. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

const SII_NS = 'http://www.sii.cl/SiiDte';
const RESPUESTA = (hdr: string, body: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><SII:RESPUESTA xmlns:SII="http://www.sii.cl/XMLSchema"><SII:RESP_BODY>${body}</SII:RESP_BODY><SII:RESP_HDR>${hdr}</SII:RESP_HDR></SII:RESPUESTA>`;

const parser = () => new DOMParser({ onError: () => {} });
const children = (el: Element) => Array.from(el.childNodes).filter((n): n is Element => n.nodeType === 1);
const childNamed = (el: Element | undefined, name: string) => (el ? children(el).find((c) => c.localName === name) : undefined);
const textAt = (el: Element | undefined, ...names: string[]) =>
  names.reduce<Element | undefined>((e, name) => childNamed(e, name), el)?.textContent?.trim() ?? '';

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

const ddmmyyyy = (iso: string) => iso.split('-').reverse().join('-');

export async function startSiiBoletaStandin(t: { teardown(fn: () => unknown): void }): Promise<SiiBoletaStandin> {
  const seeds = new Set<string>();
  let validTokens = new Set<string>();
  let nextTrack = 9_000_000;
  let server: Server | null = null;
  let port = 0;

  const s: SiiBoletaStandin = {
    url: '',
    uploads: [],
    seeds: 0,
    tokens: 0,
    statusQueries: 0,
    folioQueries: 0,
    processingPolls: 0,
    rejectFolios: new Set(),
    objectionFolios: new Set(),
    faults: { unavailable: false, loseUploadAnswer: 0 },
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

  const tokenOf = (req: IncomingMessage) => /(?:^|;\s*)TOKEN=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
  const authorised = (req: IncomingMessage) => validTokens.has(tokenOf(req) ?? '');
  const unauthorised = (res: ServerResponse) => sendJson(res, 401, { codigo: 401, descripcion: 'No autorizado' });

  function seedAnswer(): string {
    const seed = String(Math.floor(Math.random() * 1e12)).padStart(12, '0');
    seeds.add(seed);
    s.seeds++;
    return RESPUESTA('<ESTADO>00</ESTADO>', `<SEMILLA>${seed}</SEMILLA>`);
  }

  function tokenAnswer(xml: string): string {
    const root = parser().parseFromString(xml, 'text/xml').documentElement;
    const seed = root?.getElementsByTagName('Semilla')[0]?.textContent ?? '';
    const valid = root?.localName === 'getToken' && seeds.has(seed) && signatureValid(xml, childNamed(root, 'Signature'));
    if (!valid) return RESPUESTA('<ESTADO>-07</ESTADO><GLOSA>Firma invalida</GLOSA>', '');
    seeds.delete(seed);
    const token = `BT${Math.random().toString(36).slice(2, 14).toUpperCase()}`;
    validTokens.add(token);
    s.tokens++;
    return RESPUESTA('<ESTADO>00</ESTADO><GLOSA>Token Creado</GLOSA>', `<TOKEN>${token}</TOKEN>`);
  }

  /** The envelope read as SII reads it; its state once processed when it is refused whole. */
  function readEnvelope(xml: string, company: string, sender: string): Pick<BoletaUpload, 'rutEmisor' | 'boletas' | 'signaturesValid' | 'estado'> {
    const root = parser().parseFromString(xml, 'text/xml').documentElement ?? undefined;
    const set = childNamed(root, 'SetDTE');
    if (root?.localName !== 'EnvioBOLETA' || root.namespaceURI !== SII_NS || !set) {
      return { rutEmisor: '', boletas: [], signaturesValid: false, estado: 'RSC' };
    }
    const dtes = children(set).filter((c) => c.localName === 'DTE');
    const boletas = dtes.map((dte) => {
      const encabezado = childNamed(childNamed(dte, 'Documento'), 'Encabezado');
      return {
        tipo: Number(textAt(encabezado, 'IdDoc', 'TipoDTE')),
        folio: Number(textAt(encabezado, 'IdDoc', 'Folio')),
        montoTotal: textAt(encabezado, 'Totales', 'MntTotal'),
        fechaEmision: textAt(encabezado, 'IdDoc', 'FchEmis'),
      };
    });
    // SII checks each DTE on its own, out of the envelope (docs/decisions.md §15).
    const dtesValid = dtes.every((dte) => {
      const standalone = new XMLSerializer().serializeToString(dte);
      return signatureValid(standalone, childNamed(parser().parseFromString(standalone, 'text/xml').documentElement ?? undefined, 'Signature'));
    });
    const signaturesValid = dtesValid && signatureValid(xml, childNamed(root, 'Signature'));
    const rutEmisor = textAt(set, 'Caratula', 'RutEmisor');
    const caratulaMatches = rutEmisor === company && textAt(set, 'Caratula', 'RutEnvia') === sender;
    const badTypes = boletas.some((b) => b.tipo !== 39 && b.tipo !== 41);
    return { rutEmisor, boletas, signaturesValid, estado: !signaturesValid ? 'RFR' : !caratulaMatches ? 'RCT' : badTypes ? 'RSC' : 'EPR' };
  }

  async function upload(req: IncomingMessage, res: ServerResponse, raw: Buffer): Promise<void> {
    if (!authorised(req)) return unauthorised(res);
    if (req.headers['user-agent'] !== BOLETA_USER_AGENT) return sendJson(res, 400, { descripcion: `User-Agent ${req.headers['user-agent']} refused` });
    const form = await new Response(new Uint8Array(raw), { headers: { 'content-type': req.headers['content-type'] ?? '' } }).formData().catch(() => null);
    const file = form?.get('archivo');
    const fields = ['rutSender', 'dvSender', 'rutCompany', 'dvCompany'].map((name) => form?.get(name));
    if (!form || !(file instanceof File) || fields.some((f) => typeof f !== 'string' || !f)) {
      return sendJson(res, 400, { descripcion: 'rutSender, dvSender, rutCompany, dvCompany and archivo are required' });
    }
    const [rutSender, dvSender, rutCompany, dvCompany] = fields as string[];
    const xml = Buffer.from(await file.arrayBuffer()).toString('latin1');
    const sender = `${rutSender}-${dvSender}`;
    const company = `${rutCompany}-${dvCompany}`;
    const read = readEnvelope(xml, company, sender);
    const repRech = new Map<string, { estado: string; descripcion: string }>();
    for (const b of read.boletas) {
      if (s.rejectFolios.has(b.folio)) repRech.set(`${b.tipo}-${b.folio}`, { estado: 'RCH', descripcion: 'DTE Rechazado' });
      else if (s.objectionFolios.has(b.folio)) repRech.set(`${b.tipo}-${b.folio}`, { estado: 'RPR', descripcion: 'DTE Aceptado con Reparos' });
    }
    const recorded: BoletaUpload = { trackid: String(nextTrack++), sender, company, filename: file.name, fileType: file.type, xml, ...read, repRech, polls: 0 };
    s.uploads.push(recorded);
    if (s.faults.loseUploadAnswer > 0) {
      s.faults.loseUploadAnswer--;
      req.socket.destroy();
      return;
    }
    sendJson(res, 200, {
      rut_emisor: company,
      rut_envia: sender,
      // SII's answers give it as a number.
      trackid: Number(recorded.trackid),
      fecha_recepcion: '2026-01-01 10:00:00',
      estado: 'REC',
      file: recorded.filename,
    });
  }

  function status(req: IncomingMessage, res: ServerResponse, rut: string, trackid: string): void {
    s.statusQueries++;
    if (!authorised(req)) return unauthorised(res);
    const u = s.uploads.find((x) => x.trackid === trackid && x.company === rut);
    if (!u) return sendJson(res, 404, { codigo: 404, descripcion: 'Envio no encontrado' });
    u.polls++;
    const base = { rut_emisor: u.company, rut_envia: u.sender, trackid: Number(u.trackid), fecha_recepcion: '2026-01-01 10:00:00' };
    const types = [...new Set(u.boletas.map((b) => b.tipo))];
    const estadistica = (processed: boolean) =>
      types.map((tipo) => {
        const of = u.boletas.filter((b) => b.tipo === tipo);
        const estado = (b: StandinBoleta) => u.repRech.get(`${b.tipo}-${b.folio}`)?.estado;
        const rechazados = processed ? of.filter((b) => estado(b) === 'RCH').length : 0;
        const reparos = processed ? of.filter((b) => estado(b) === 'RPR').length : 0;
        return { tipo, informados: of.length, aceptados: processed ? of.length - rechazados - reparos : 0, rechazados, reparos };
      });
    if (u.polls === 1 && s.processingPolls > 0) return sendJson(res, 200, { ...base, estado: 'REC', estadistica: [], detalle_rep_rech: null });
    if (u.polls <= s.processingPolls) return sendJson(res, 200, { ...base, estado: 'EPR', estadistica: estadistica(false), detalle_rep_rech: null });
    if (u.estado !== 'EPR') return sendJson(res, 200, { ...base, estado: u.estado, estadistica: [], detalle_rep_rech: null });
    const detalle = u.boletas.flatMap((b) => {
      const r = u.repRech.get(`${b.tipo}-${b.folio}`);
      const error = [{ seccion: 'DET', linea: 1, nivel: 3, codigo: 100, descripcion: 'Rechazo por prueba', detalle: `folio ${b.folio}` }];
      return r ? [{ tipo: b.tipo, folio: b.folio, estado: r.estado, descripcion: r.descripcion, error }] : [];
    });
    sendJson(res, 200, { ...base, estado: 'EPR', estadistica: estadistica(true), detalle_rep_rech: detalle });
  }

  function byFolio(req: IncomingMessage, res: ServerResponse, rut: string, tipo: number, folio: number, query: URLSearchParams): void {
    s.folioQueries++;
    if (!authorised(req)) return unauthorised(res);
    if (query.get('rut_receptor') !== '66666666' || query.get('dv_receptor') !== '6') {
      return sendJson(res, 400, { descripcion: 'rut_receptor and dv_receptor must be the final consumer, 66666666-6' });
    }
    const held = s.uploads
      .filter((u) => u.company === rut && u.estado === 'EPR' && u.repRech.get(`${tipo}-${folio}`)?.estado !== 'RCH')
      .flatMap((u) => u.boletas)
      .find((b) => b.tipo === tipo && b.folio === folio);
    if (!held) return sendJson(res, 200, { codigo: 'FAU', descripcion: 'Documento No Recibido por el SII' });
    const matches = held.montoTotal === query.get('monto') && ddmmyyyy(held.fechaEmision) === query.get('fechaEmision');
    sendJson(
      res,
      200,
      matches
        ? { codigo: 'DOK', descripcion: 'Documento Recibido por el SII. Datos Coinciden con los Registrados' }
        : { codigo: 'DNK', descripcion: 'Documento Recibido por el SII pero Datos NO Coinciden con los registrados' },
    );
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBytes(req);
    if (s.faults.unavailable) {
      res.writeHead(503, { 'content-type': 'text/html' });
      res.end('<html>Servicio no disponible</html>');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname.replace(/^\/recursos\/v1\//, '');
    if (path === 'boleta.electronica.semilla' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/xml' });
      res.end(seedAnswer());
      return;
    }
    if (path === 'boleta.electronica.token' && req.method === 'POST') {
      res.writeHead(200, { 'content-type': 'application/xml' });
      res.end(tokenAnswer(raw.toString('utf8')));
      return;
    }
    if (path === 'boleta.electronica.envio' && req.method === 'POST') return upload(req, res, raw);
    const envio = /^boleta\.electronica\.envio\/(\d+-[\dkK])-(\d+)$/.exec(path);
    if (envio && req.method === 'GET') return status(req, res, envio[1]!, envio[2]!);
    const boleta = /^boleta\.electronica\/(\d+-[\dkK])-(\d+)-(\d+)\/estado$/.exec(path);
    if (boleta && req.method === 'GET') return byFolio(req, res, boleta[1]!, Number(boleta[2]), Number(boleta[3]), url.searchParams);
    sendJson(res, 404, { descripcion: 'not found' });
  }

  await s.start();
  t.teardown(() => s.close());
  return s;
}
