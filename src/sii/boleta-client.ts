// The SII's boleta REST service (docs/decisions.md §20) as the libraries that talk to it call it
// (LibreDTE, facturacion_electronica): seed and token (the signed seed of the SOAP flow, posted
// as XML), the EnvioBOLETA upload on its own host (multipart, TOKEN cookie, a JSON answer), the
// upload's state by track id (estadistica and detalle_rep_rech) and one boleta's state by its data.
import type { Config } from '../config.js';
import type { SigningIdentity } from '../dte/certificate.js';
import { call, parse, rutParts, signedSeed, SiiError, SiiTokenError, text } from './sii-client.js';

export interface BoletaHosts {
  /** Seed, token, the upload's state, a boleta's state. */
  api: string;
  upload: string;
}

export const BOLETA_HOSTS = {
  certificacion: { api: 'https://apicert.sii.cl', upload: 'https://pangal.sii.cl' },
  produccion: { api: 'https://api.sii.cl', upload: 'https://rahue.sii.cl' },
} as const satisfies Record<string, BoletaHosts>;

// The SII answers an upload that lacks it with an error page; its manual gives this one.
const USER_AGENT = 'Mozilla/4.0 ( compatible; PROG 1.0; Windows NT)';
const RESOURCES = '/recursos/v1';

/** The merchant's environment's hosts, or those the configuration names (tests: a stand-in). */
export function boletaHosts(
  environment: keyof typeof BOLETA_HOSTS,
  config: Pick<Config, 'SII_BOLETA_API_URL' | 'SII_BOLETA_UPLOAD_URL'> = {},
): BoletaHosts {
  return {
    api: (config.SII_BOLETA_API_URL ?? BOLETA_HOSTS[environment].api).replace(/\/+$/, ''),
    upload: (config.SII_BOLETA_UPLOAD_URL ?? BOLETA_HOSTS[environment].upload).replace(/\/+$/, ''),
  };
}

/** The HTTP status of a call that SII answered with an error: the boleta service gives 401 (the token) and 404 (no such boleta) a meaning. */
function answeredStatus(err: unknown): number | null {
  return err instanceof SiiError ? err.status : null;
}

/** A call that carries the token: a 401 is the token's refusal, and SII took nothing. */
async function withToken(url: string, token: string, init: RequestInit & { headers?: Record<string, string> }): Promise<string> {
  try {
    return await call(url, { ...init, headers: { ...init.headers, cookie: `TOKEN=${token}`, accept: 'application/json', 'user-agent': USER_AGENT } });
  } catch (err) {
    if (answeredStatus(err) === 401) throw new SiiTokenError(`SII did not accept the token at ${url}`, false);
    throw err;
  }
}

function json(body: string, what: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(body);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // Not JSON: said below as for any other shape.
  }
  throw new SiiError(`SII's answer to ${what} is not the JSON object expected: ${body.slice(0, 200)}`, true);
}

/** A token of the boleta service (not the SOAP services'): a seed, signed, exchanged. */
export async function getBoletaToken(apiBase: string, identity: SigningIdentity): Promise<string> {
  const seedAnswer = parse(
    await call(`${apiBase}${RESOURCES}/boleta.electronica.semilla`, { headers: { accept: 'application/xml', 'user-agent': USER_AGENT } }),
    'boleta.electronica.semilla',
  );
  const seed = text(seedAnswer, 'SEMILLA');
  if (text(seedAnswer, 'ESTADO') !== '00' || !seed) throw new SiiError(`SII gave no seed (ESTADO ${text(seedAnswer, 'ESTADO')})`, true);
  const tokenAnswer = parse(
    await call(`${apiBase}${RESOURCES}/boleta.electronica.token`, {
      method: 'POST',
      headers: { 'content-type': 'application/xml', accept: 'application/xml', 'user-agent': USER_AGENT },
      body: signedSeed(seed, identity),
    }),
    'boleta.electronica.token',
  );
  const token = text(tokenAnswer, 'TOKEN');
  if (text(tokenAnswer, 'ESTADO') !== '00' || !token) {
    throw new SiiError(`SII refused the signed seed: ${text(tokenAnswer, 'ESTADO')} ${text(tokenAnswer, 'GLOSA') ?? ''}`.trim(), true);
  }
  return token;
}

export interface BoletaUploadReceipt {
  /** SII's track id, a number or a string in its answers, always a string here. */
  trackid: string;
  /** REC: received, to be processed. */
  estado: string;
}

/** Uploads a signed EnvioBOLETA (its ISO-8859-1 bytes). */
export async function uploadEnvioBoleta(
  uploadBase: string,
  token: string,
  o: { rutSender: string; rutCompany: string; filename: string; bytes: Buffer },
): Promise<BoletaUploadReceipt> {
  const [rutSender, dvSender] = rutParts(o.rutSender);
  const [rutCompany, dvCompany] = rutParts(o.rutCompany);
  const form = new FormData();
  form.set('rutSender', rutSender);
  form.set('dvSender', dvSender);
  form.set('rutCompany', rutCompany);
  form.set('dvCompany', dvCompany);
  form.set('archivo', new Blob([new Uint8Array(o.bytes)], { type: 'application/xml' }), o.filename);
  const answer = json(await withToken(`${uploadBase}${RESOURCES}/boleta.electronica.envio`, token, { method: 'POST', body: form }), 'boleta.electronica.envio');
  const trackid = answer.trackid;
  if ((typeof trackid === 'number' || typeof trackid === 'string') && String(trackid).trim()) {
    return { trackid: String(trackid).trim(), estado: String(answer.estado ?? '') };
  }
  // An answer without a track id is a refusal: SII keeps nothing it cannot be asked about.
  throw new SiiError(`SII refused the boleta upload: ${JSON.stringify(answer).slice(0, 300)}`, false);
}

export interface BoletaCount {
  tipo: number;
  informados: number;
  aceptados: number;
  rechazados: number;
  reparos: number;
}

export type BoletaOutcome = 'accepted' | 'accepted_with_objections' | 'rejected';

export interface BoletaDetail {
  tipo: number;
  folio: number;
  /** As SII says it: RCH rejected, RPR or RLV accepted with objections. */
  estado: string;
  outcome: BoletaOutcome;
  descripcion: string;
  /** Each of SII's errors as "codigo descripcion: detalle". */
  errors: string[];
}

export type BoletaUploadStatus =
  /** Not processed yet: REC and the like, or an EPR whose detalle_rep_rech is still null. */
  | { kind: 'processing'; estado: string }
  /** The whole envelope refused (schema, signature, carátula…): none of its boletas stands. */
  | { kind: 'envelope_rejected'; estado: string; glosa: string }
  /** Processed: each boleta's outcome is `boletaOutcome`'s. */
  | { kind: 'processed'; estado: 'EPR'; counts: BoletaCount[]; details: BoletaDetail[] };

// The envelope's states that refuse all of it (SII's boleta manual and LibreDTE's reading of it).
const ENVELOPE_REJECTIONS: Record<string, string> = {
  RCH: 'Rechazado por errores en la información',
  RCO: 'Rechazado por consistencia',
  RCT: 'Rechazado por error en carátula',
  RFR: 'Rechazado por error en firma',
  RPT: 'Repetido, rechazado',
  RSC: 'Rechazado por schema',
  VOF: 'No se encontró el archivo .xml',
};
const DETAIL_OBJECTIONS = new Set(['RPR', 'RLV']);

const count = (v: unknown) => Number(v ?? 0) || 0;

function detail(entry: Record<string, unknown>): BoletaDetail {
  const estado = String(entry.estado ?? '');
  const errors = Array.isArray(entry.error) ? (entry.error as Record<string, unknown>[]) : [];
  return {
    tipo: count(entry.tipo),
    folio: count(entry.folio),
    estado,
    // A boleta listed here has a repair or a rejection: anything but an objection (or DOK) rejects it.
    outcome: DETAIL_OBJECTIONS.has(estado) ? 'accepted_with_objections' : estado === 'DOK' ? 'accepted' : 'rejected',
    descripcion: String(entry.descripcion ?? ''),
    errors: errors.map((e) => `${e.codigo ?? ''} ${e.descripcion ?? ''}${e.detalle ? `: ${String(e.detalle)}` : ''}`.trim()),
  };
}

/** Where an upload stands, by its track id. */
export async function boletaUploadStatus(apiBase: string, token: string, rutCompany: string, trackid: string): Promise<BoletaUploadStatus> {
  const [rut, dv] = rutParts(rutCompany);
  const answer = json(
    await withToken(`${apiBase}${RESOURCES}/boleta.electronica.envio/${rut}-${dv}-${encodeURIComponent(trackid)}`, token, {}),
    'boleta.electronica.envio status',
  );
  const estado = String(answer.estado ?? '');
  if (ENVELOPE_REJECTIONS[estado]) return { kind: 'envelope_rejected', estado, glosa: ENVELOPE_REJECTIONS[estado] };
  if (estado !== 'EPR') return { kind: 'processing', estado };
  const counts = (Array.isArray(answer.estadistica) ? (answer.estadistica as Record<string, unknown>[]) : []).map((c) => ({
    tipo: count(c.tipo),
    informados: count(c.informados),
    aceptados: count(c.aceptados),
    rechazados: count(c.rechazados),
    reparos: count(c.reparos),
  }));
  const details = answer.detalle_rep_rech;
  if (Array.isArray(details)) return { kind: 'processed', estado, counts, details: (details as Record<string, unknown>[]).map(detail) };
  // null is SII's "not yet". An absent list is taken as none only when the counts need none: every
  // boleta accepted; otherwise a rejection could be taken for an acceptance.
  const allAccepted = counts.length > 0 && counts.every((c) => c.aceptados === c.informados && c.rechazados + c.reparos === 0);
  return details === undefined && allAccepted ? { kind: 'processed', estado, counts, details: [] } : { kind: 'processing', estado };
}

/** A boleta of a processed upload: rejected or objected to when SII lists it, accepted otherwise. */
export function boletaOutcome(status: Extract<BoletaUploadStatus, { kind: 'processed' }>, tipo: number, folio: number): BoletaOutcome {
  return status.details.find((d) => d.tipo === tipo && d.folio === folio)?.outcome ?? 'accepted';
}

// A boleta's states that say SII has it (received, or modified or cancelled by a note since), and
// those that say it has not (as QueryEstDte's, which this service's answers repeat).
const BOLETA_RECEIVED = new Set(['DOK', 'DNK', 'TMD', 'TMC', 'MMD', 'MMC', 'AND', 'ANC', 'FAN']);
const BOLETA_UNKNOWN = new Set(['FAU', 'FNA']);

export interface BoletaState {
  /** Whether SII has the boleta: an upload whose answer was lost took it. */
  received: boolean;
  /** SII's codigo (DOK, FAU…); null when SII answered 404, it has no such boleta. */
  codigo: string | null;
  descripcion: string;
}

/** One boleta's state at SII by its data (the final consumer as receiver), to settle a lost upload answer. */
export async function boletaStatusByFolio(
  apiBase: string,
  token: string,
  /** `fechaEmision` as the boleta's FchEmis, YYYY-MM-DD; `monto` its MntTotal. */
  b: { rutCompany: string; tipo: number; folio: number; monto: number | string; fechaEmision: string },
): Promise<BoletaState> {
  const [rut, dv] = rutParts(b.rutCompany);
  const [y, m, d] = b.fechaEmision.split('-');
  const query = new URLSearchParams({ rut_receptor: '66666666', dv_receptor: '6', monto: String(b.monto), fechaEmision: `${d}-${m}-${y}` });
  const url = `${apiBase}${RESOURCES}/boleta.electronica/${rut}-${dv}-${b.tipo}-${b.folio}/estado?${query}`;
  let body: string;
  try {
    body = await withToken(url, token, {});
  } catch (err) {
    if (answeredStatus(err) === 404) return { received: false, codigo: null, descripcion: 'SII has no such boleta' };
    throw err;
  }
  const answer = json(body, 'boleta.electronica estado');
  const codigo = String(answer.codigo ?? answer.estado ?? '');
  const descripcion = String(answer.descripcion ?? answer.glosa ?? '');
  if (BOLETA_RECEIVED.has(codigo)) return { received: true, codigo, descripcion };
  if (BOLETA_UNKNOWN.has(codigo)) return { received: false, codigo, descripcion };
  // Neither yes nor no: asked again later rather than guessed, so nothing goes up twice.
  throw new SiiError(`SII's answer about boleta ${b.tipo} ${b.folio} is neither received nor unknown: ${codigo} ${descripcion}`.trim(), true);
}
