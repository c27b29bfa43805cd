// The SII's two ways in (docs/decisions.md §15, §20): the SOAP services for facturas and notes, the
// boleta REST service for boletas. Each has its envelope, its upload, its tokens and its way of
// saying whether it holds a document; the merchant's identity and hosts are the sender's.
import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import { buildEnvioBoleta } from '../dte/boleta.js';
import type { SigningIdentity } from '../dte/certificate.js';
import { buildEnvioDte, type Caratula, type SignedDte } from '../dte/envelope.js';
import { signingSetup, type DocumentRow } from '../dte/queries.js';
import { openIdentity } from '../dte/service.js';
import { getMerchant } from '../merchants/queries.js';
import type { SecretBox } from '../secret-box.js';
import { boletaHosts, boletaStatusByFolio, getBoletaToken, uploadEnvioBoleta, type BoletaHosts } from './boleta-client.js';
import type * as q from './queries.js';
import { documentState, fetchToken, SII_HOSTS, SiiError, SiiTokenError, uploadEnvio } from './sii-client.js';

/** What finding a merchant's sender takes. */
export interface SenderDeps {
  sql: Sql;
  secrets: SecretBox;
  config: Pick<Config, 'SII_BASE_URL' | 'SII_BOLETA_API_URL' | 'SII_BOLETA_UPLOAD_URL'>;
}

// SII's tokens live for a while with use; a token older than this is not reused.
const TOKEN_TTL_MS = 30 * 60_000;

// QueryEstDte's states that say SII has the document (received, or modified or cancelled by a
// note since), and those that say it has not.
export const DOCUMENT_RECEIVED = new Set(['DOK', 'DNK', 'TMD', 'TMC', 'MMD', 'MMC', 'AND', 'ANC', 'FAN']);
const DOCUMENT_UNKNOWN = new Set(['FAU', 'FNA']);

export interface Sender {
  merchantId: string;
  /** The SOAP services'. */
  base: string;
  boleta: BoletaHosts;
  rut: string;
  identity: SigningIdentity;
  resolucionNumero: number;
  resolucionFecha: string;
  timezone: string;
}

export async function sender(deps: SenderDeps, merchantId: string): Promise<Sender> {
  const merchant = await getMerchant(deps.sql, merchantId);
  const setup = await signingSetup(deps.sql, merchantId);
  if (!merchant?.rut || !merchant.sii_env || merchant.resolucion_numero === null || !merchant.resolucion_fecha || !setup) {
    throw new Error(`merchant ${merchantId} has documents to submit but no longer the DTE setup to sign them`);
  }
  return {
    merchantId,
    base: (deps.config.SII_BASE_URL ?? SII_HOSTS[merchant.sii_env]).replace(/\/+$/, ''),
    boleta: boletaHosts(merchant.sii_env, deps.config),
    rut: merchant.rut,
    identity: openIdentity(deps.secrets, setup.sealed_pkcs12),
    resolucionNumero: merchant.resolucion_numero,
    resolucionFecha: merchant.resolucion_fecha,
    timezone: merchant.timezone,
  };
}

/** Where a token of the merchant's certificate comes from: the SOAP services and the boleta service each issue their own. */
export interface TokenSource {
  key: string;
  fetch(): Promise<string>;
}

// Keyed by service too: a token of one is no use to the other, whatever hosts the configuration names.
export const soapTokens = (s: Sender): TokenSource => ({ key: `soap|${s.base}|${s.identity.certificateBase64}`, fetch: () => fetchToken(s.base, s.identity) });
export const boletaTokens = (s: Sender): TokenSource => ({
  key: `boleta|${s.boleta.api}|${s.identity.certificateBase64}`,
  fetch: () => getBoletaToken(s.boleta.api, s.identity),
});

const tokens = new Map<string, { token: string; until: number }>();

/** A token: the cached one while it lasts, else a new one. */
export async function token(source: TokenSource, renew = false): Promise<string> {
  const cached = tokens.get(source.key);
  if (cached && cached.until > Date.now() && !renew) return cached.token;
  const fresh = await source.fetch();
  tokens.set(source.key, { token: fresh, until: Date.now() + TOKEN_TTL_MS });
  return fresh;
}

/** The call with a token, once more with a new token when SII refuses the cached one. */
export async function withToken<T>(source: TokenSource, fn: (token: string) => Promise<T>): Promise<T> {
  try {
    return await fn(await token(source));
  } catch (err) {
    if (!(err instanceof SiiTokenError)) throw err;
    return fn(await token(source, true));
  }
}

/** The intent: the waiting documents in a new signed envelope, committed before any call. */
export interface Claimed {
  id: string;
  envio: Buffer;
  documentIds: string[];
}

/** One of SII's ways in: what its envelope is, how it goes up, how a lost upload's documents are asked about. */
export interface Channel {
  name: q.Channel;
  perEnvelope: number;
  envelope(c: Caratula, dtes: SignedDte[], identity: SigningIdentity): Buffer;
  tokens(s: Sender): TokenSource;
  /** The track id SII gives the upload. */
  upload(s: Sender, token: string, claimed: Claimed): Promise<string>;
  /** Whether SII has the document (of an upload whose answer was lost); throws when SII says neither. */
  received(s: Sender, token: string, doc: DocumentRow): Promise<boolean>;
}

export const SOAP: Channel = {
  name: 'soap',
  // SII takes large envelopes; this keeps one upload, and one failure, small.
  perEnvelope: 50,
  envelope: buildEnvioDte,
  tokens: soapTokens,
  upload: (s, t, claimed) => uploadEnvio(s.base, t, { sender: s.identity.subjectRut, company: s.rut, envio: claimed.envio, filename: `EnvioDTE-${claimed.id}.xml` }),
  received: async (s, t, d) => {
    const state = await documentState(s.base, t, {
      querier: s.identity.subjectRut,
      company: s.rut,
      receiver: d.receiver_rut,
      type: d.dte_type,
      folio: d.folio,
      issueDate: d.issue_date,
      total: d.total,
    });
    if (!DOCUMENT_RECEIVED.has(state.code) && !DOCUMENT_UNKNOWN.has(state.code)) {
      throw new SiiError(`SII answered the state of document ${d.dte_type}/${d.folio} with ${state.code} ${state.glosa}`, true);
    }
    return DOCUMENT_RECEIVED.has(state.code);
  },
};

export const BOLETA: Channel = {
  name: 'boleta',
  // The EnvioBOLETA schema's limit (docs/decisions.md §20): a merchant's waiting boletas travel together.
  perEnvelope: 500,
  envelope: buildEnvioBoleta,
  tokens: boletaTokens,
  upload: async (s, t, claimed) =>
    (await uploadEnvioBoleta(s.boleta.upload, t, { rutSender: s.identity.subjectRut, rutCompany: s.rut, filename: `EnvioBOLETA-${claimed.id}.xml`, bytes: claimed.envio }))
      .trackid,
  received: async (s, t, d) =>
    (await boletaStatusByFolio(s.boleta.api, t, { rutCompany: s.rut, tipo: d.dte_type, folio: d.folio, monto: d.total, fechaEmision: d.issue_date })).received,
};
