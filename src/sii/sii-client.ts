// The SII's web services as its DTE libraries call them (LibreDTE's WSDLs and clients): CrSeed
// and GetTokenFromSeed (SOAP rpc, the answer an escaped SII:RESPUESTA), the EnvioDTE upload
// (multipart with the TOKEN cookie, answered by RECEPCIONDTE), QueryEstUp (the state of an upload
// by track id) and QueryEstDte (the state of one document by its data).
import { DOMParser, type Element } from '@xmldom/xmldom';
import { create } from 'xmlbuilder2';
import type { SigningIdentity } from '../dte/certificate.js';
import { signDocument } from '../dte/sign.js';

export const SII_HOSTS = { certificacion: 'https://maullin.sii.cl', produccion: 'https://palena.sii.cl' } as const;

// Each call is answered within this or counts as lost; SII is slow at times, never this slow.
const CALL_TIMEOUT_MS = 30_000;
const SOAP_ENV = 'http://schemas.xmlsoap.org/soap/envelope/';

/**
 * A call that failed. `delivered` says whether SII may have received the request: false when the
 * connection was refused or SII answered it was unavailable (nothing was taken), true when the
 * request went out and its answer was lost, cut, late or unreadable.
 */
export class SiiError extends Error {
  constructor(
    message: string,
    readonly delivered: boolean,
    /** The HTTP status SII answered with, when it answered at all. */
    readonly status: number | null = null,
  ) {
    super(message);
  }
}

/** SII refused the token (expired or unknown): a new one is needed. */
export class SiiTokenError extends SiiError {}

/**
 * SII refused the file itself, its schema (STATUS 7) or a signature (8): the same documents would
 * be refused again, whatever envelope carried them.
 */
export class SiiFileRefused extends SiiError {
  constructor(
    message: string,
    readonly uploadStatus: string,
  ) {
    super(message, false);
  }
}

const REFUSED = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ENETUNREACH|EHOSTUNREACH/;

export async function call(url: string, init: RequestInit): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
    throw new SiiError(`SII unreachable at ${url}: ${cause}`, !REFUSED.test(String(cause)));
  }
  let body: string;
  try {
    body = await res.text();
  } catch (err) {
    throw new SiiError(`SII's answer from ${url} was cut: ${(err as Error).message}`, true);
  }
  // 502/503/504 come from SII's front servers before the service took anything.
  if ([502, 503, 504].includes(res.status)) throw new SiiError(`SII answered ${res.status} at ${url}`, false, res.status);
  if (!res.ok) throw new SiiError(`SII answered ${res.status} at ${url}`, true, res.status);
  return body;
}

export function parse(xml: string, what: string): Element {
  let root: Element | null = null;
  try {
    root = new DOMParser({ onError: () => {} }).parseFromString(xml, 'text/xml').documentElement;
  } catch {
    root = null;
  }
  if (!root) throw new SiiError(`SII's answer to ${what} is not XML`, true);
  return root;
}

export function text(root: Element, localName: string): string | null {
  const el = Array.from(root.getElementsByTagNameNS('*', localName))[0] ?? Array.from(root.getElementsByTagName(localName))[0];
  return el?.textContent?.trim() ?? null;
}

/** An rpc SOAP call: its parameters as text, the SII:RESPUESTA its `<op>Return` carries, parsed. */
async function soap(base: string, service: string, op: string, params: Record<string, string>): Promise<Element> {
  const envelope = create({
    'soapenv:Envelope': {
      '@xmlns:soapenv': SOAP_ENV,
      'soapenv:Body': { [`def:${op}`]: { '@xmlns:def': `${base}/DTEWS/${service}.jws`, ...params } },
    },
  }).end({ headless: false });
  const body = await call(`${base}/DTEWS/${service}.jws`, {
    method: 'POST',
    headers: { 'content-type': 'text/xml; charset=utf-8', soapaction: '' },
    body: envelope,
  });
  const returned = text(parse(body, op), `${op}Return`);
  if (!returned) throw new SiiError(`SII's answer to ${op} has no ${op}Return`, true);
  return parse(returned, op);
}

function estado(answer: Element, op: string): string {
  const value = text(answer, 'ESTADO');
  if (value === null) throw new SiiError(`SII's answer to ${op} has no ESTADO`, true);
  return value;
}

/** The seed signed as SII's authentication asks: getToken/item/Semilla, enveloped signature over the whole (URI ""). */
export function signedSeed(seed: string, identity: SigningIdentity): string {
  return signDocument(create({ getToken: { item: { Semilla: seed } } }).end({ headless: true }), identity);
}

/** A token: a seed from CrSeed, signed, exchanged at GetTokenFromSeed. */
export async function fetchToken(base: string, identity: SigningIdentity): Promise<string> {
  const seedAnswer = await soap(base, 'CrSeed', 'getSeed', {});
  const seed = text(seedAnswer, 'SEMILLA');
  if (estado(seedAnswer, 'getSeed') !== '00' || !seed) throw new SiiError(`SII gave no seed (ESTADO ${text(seedAnswer, 'ESTADO')})`, true);
  const tokenAnswer = await soap(base, 'GetTokenFromSeed', 'getToken', { pszXml: signedSeed(seed, identity) });
  const token = text(tokenAnswer, 'TOKEN');
  if (estado(tokenAnswer, 'getToken') !== '00' || !token) {
    throw new SiiError(`SII refused the signed seed: ${text(tokenAnswer, 'ESTADO')} ${text(tokenAnswer, 'GLOSA') ?? ''}`.trim(), true);
  }
  return token;
}

/** A RUT as SII's forms take it: number and check digit apart. */
export function rutParts(rut: string): [string, string] {
  const [n, dv] = rut.split('-');
  return [n!, dv!];
}

// RECEPCIONDTE's STATUS: 0 received; 5 not authenticated (the token); the rest refusals.
const UPLOAD_REFUSALS: Record<string, string> = {
  '1': 'the sender is not allowed to upload for the company',
  '2': 'the file size is wrong',
  '3': 'the file was cut',
  '6': 'the company is not authorised to send DTEs',
  '7': 'the schema is invalid',
  '8': 'the signature is invalid',
  '9': 'SII has an internal problem',
  '99': 'the envelope was already received',
};

/** Uploads a signed EnvioDTE; its track id. */
export async function uploadEnvio(base: string, token: string, o: { sender: string; company: string; envio: Buffer; filename: string }): Promise<string> {
  const [rutSender, dvSender] = rutParts(o.sender);
  const [rutCompany, dvCompany] = rutParts(o.company);
  const form = new FormData();
  form.set('rutSender', rutSender);
  form.set('dvSender', dvSender);
  form.set('rutCompany', rutCompany);
  form.set('dvCompany', dvCompany);
  form.set('archivo', new Blob([new Uint8Array(o.envio)], { type: 'text/xml' }), o.filename);
  const body = await call(`${base}/cgi_dte/UPL/DTEUpload`, {
    method: 'POST',
    headers: { cookie: `TOKEN=${token}`, 'user-agent': 'Mozilla/4.0 (compatible; PROG 1.0; invoicing)' },
    body: form,
  });
  const answer = parse(body, 'DTEUpload');
  const status = text(answer, 'STATUS');
  if (status === null) throw new SiiError("SII's upload answer has no STATUS", true);
  if (status === '5') throw new SiiTokenError('SII did not accept the token for the upload', false);
  const trackId = text(answer, 'TRACKID');
  if (status === '0' && trackId) return trackId;
  // A refusal is an answer: SII took nothing.
  const refusal = `SII refused the upload: STATUS ${status} (${UPLOAD_REFUSALS[status] ?? 'unknown'})`;
  if (status === '7' || status === '8') throw new SiiFileRefused(refusal, status);
  throw new SiiError(refusal, false);
}

export interface UploadState {
  /** QueryEstUp's ESTADO: EPR processed, REC/SOK/FOK/PDR/CRT… under way, RSC/RFR/RCT/… rejected. */
  code: string;
  glosa: string;
  /** Per document type, RESP_BODY's counts (after EPR). */
  counts: { type: number; informed: number; accepted: number; rejected: number; objections: number }[];
}

/** QueryEstUp.getEstUp: where an upload stands. */
export async function uploadState(base: string, token: string, company: string, trackId: string): Promise<UploadState> {
  const [rut, dv] = rutParts(company);
  const answer = await soap(base, 'QueryEstUp', 'getEstUp', { RutCompania: rut, DvCompania: dv, TrackId: trackId, Token: token });
  const code = estado(answer, 'getEstUp');
  if (['001', '002', '003'].includes(code)) throw new SiiTokenError(`SII refused the token for the status query (${code})`, false);
  const types = Array.from(answer.getElementsByTagName('TIPO_DOCTO'));
  const counts = types.map((t) => {
    // RESP_BODY repeats TIPO_DOCTO, INFORMADOS, ACEPTADOS, RECHAZADOS, REPAROS per type, as siblings.
    const siblings: Element[] = [];
    for (let s = t.nextSibling; s && (s as Element).localName !== 'TIPO_DOCTO'; s = s.nextSibling) if ((s as Element).localName) siblings.push(s as Element);
    const get = (name: string) => Number(siblings.find((e) => e.localName === name)?.textContent ?? 0);
    return { type: Number(t.textContent), informed: get('INFORMADOS'), accepted: get('ACEPTADOS'), rejected: get('RECHAZADOS'), objections: get('REPAROS') };
  });
  return { code, glosa: text(answer, 'GLOSA') ?? '', counts };
}

/** QueryEstDte.getEstDte's ESTADO for one document: DOK received, FAU not received, …. */
export async function documentState(
  base: string,
  token: string,
  d: { querier: string; company: string; receiver: string; type: number; folio: number; issueDate: string; total: string },
): Promise<{ code: string; glosa: string }> {
  const [rq, dq] = rutParts(d.querier);
  const [rc, dc] = rutParts(d.company);
  const [rr, dr] = rutParts(d.receiver);
  const [y, m, day] = d.issueDate.split('-');
  const answer = await soap(base, 'QueryEstDte', 'getEstDte', {
    RutConsultante: rq,
    DvConsultante: dq,
    RutCompania: rc,
    DvCompania: dc,
    RutReceptor: rr,
    DvReceptor: dr,
    TipoDte: String(d.type),
    FolioDte: String(d.folio),
    FechaEmisionDte: `${day}${m}${y}`,
    MontoDte: d.total,
    Token: token,
  });
  const code = estado(answer, 'getEstDte');
  if (['001', '002', '003'].includes(code)) throw new SiiTokenError(`SII refused the token for the document query (${code})`, false);
  return { code, glosa: text(answer, 'GLOSA_ESTADO') ?? text(answer, 'GLOSA') ?? '' };
}
