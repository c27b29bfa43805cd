// Chilean tax documents (decisions §15): setting a merchant up (certificate, CAFs), what it has
// left, and issuing an invoice's DTE inside the transaction that sends the invoice.
import { readFile } from 'node:fs/promises';
import type { Config } from '../config.js';
import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { iso } from '../http/schemas.js';
import { getInvoice } from '../invoices/queries.js';
import { getMerchant, type MerchantRow } from '../merchants/queries.js';
import type { SecretBox } from '../webhooks/secrets.js';
import { CafError, DTE_TYPES, parseCaf, verifyCaf, type DteType } from './caf.js';
import { CertificateError, readPkcs12, type SigningIdentity } from './certificate.js';
import { dteFilename, MAX_DTE_LINES } from './document.js';
import { issueDte } from './issue.js';
import { SII_CAF_CERTIFICATES } from './sii-certs.js';
import * as q from './queries.js';

/** The tax profile's fields a DTE needs (decisions §15); set-tax-profile leaves the last four optional. */
const DTE_PROFILE_FIELDS = ['rut', 'razon_social', 'giro', 'acteco', 'direccion', 'comuna', 'ciudad', 'resolucion_numero', 'resolucion_fecha', 'sii_env'] as const;

/** The tax-profile fields the merchant still lacks to issue DTEs. */
export function missingDteFields(m: MerchantRow): string[] {
  return DTE_PROFILE_FIELDS.filter((f) => m[f] === null);
}

type DteMerchant = MerchantRow & { [K in (typeof DTE_PROFILE_FIELDS)[number]]: NonNullable<MerchantRow[K]> };

function isDteReady(m: MerchantRow): m is DteMerchant {
  return missingDteFields(m).length === 0;
}

/**
 * The merchant, its tax profile complete for DTEs: a certificate or a CAF loaded before it would
 * sit unused (and a CAF's RUT and environment are checked against it), so loading one is refused
 * with every missing field named.
 */
async function dteMerchant(db: Queryable, merchantId: string): Promise<DteMerchant> {
  const merchant = await getMerchant(db, merchantId);
  if (!merchant) throw AppError.validation([{ path: 'merchant_id', message: 'no such merchant' }], 400);
  if (isDteReady(merchant)) return merchant;
  throw AppError.validation(
    missingDteFields(merchant).map((f) => ({ path: `tax_profile.${f}`, message: 'is required to issue DTEs: set it with merchants set-tax-profile' })),
    400,
    `The merchant's tax profile lacks ${missingDteFields(merchant).join(', ')}, which DTEs need.`,
  );
}

// ─── Certificate ─────────────────────────────────────────────────────────────

/** What anyone is shown of a certificate: never the file, the key or the password. */
function certificateView(c: q.CertificateInfo) {
  return { merchant_id: c.merchant_id, subject_rut: c.subject_rut, subject_name: c.subject_name, not_after: iso(c.not_after)!, added_at: iso(c.created_at)! };
}

/** Sealed together: one is no use without the other. */
interface SealedPkcs12 {
  pkcs12: string;
  password: string;
}

function openIdentity(secrets: SecretBox, sealed: Buffer): SigningIdentity {
  const { pkcs12, password } = JSON.parse(secrets.open(sealed)) as SealedPkcs12;
  return readPkcs12(Buffer.from(pkcs12, 'base64'), password);
}

/** Checks that the password opens the PKCS#12, then stores both sealed; a later one replaces it. */
export async function addCertificate(db: Queryable, secrets: SecretBox, merchantId: string, file: Buffer, password: string) {
  await dteMerchant(db, merchantId);
  let identity: SigningIdentity;
  try {
    identity = readPkcs12(file, password);
  } catch (err) {
    if (!(err instanceof CertificateError)) throw err;
    throw AppError.validation([{ path: /password/.test(err.message) ? 'password' : 'file', message: err.message }], 400);
  }
  const sealed: SealedPkcs12 = { pkcs12: file.toString('base64'), password };
  const row = await q.upsertCertificate(db, {
    id: newId(),
    merchant_id: merchantId,
    sealed_pkcs12: secrets.seal(JSON.stringify(sealed)),
    subject_rut: identity.subjectRut,
    subject_name: identity.subjectName,
    not_after: identity.notAfter,
    created_at: clock.now(),
  });
  return certificateView(row);
}

// ─── CAFs ────────────────────────────────────────────────────────────────────

// The serial (IDK) of the SII key that signs each environment's CAFs.
const SII_KEY_OF_ENV = { certificacion: 100, produccion: 300 } as const;

/** SII_CERT_FILE when set (tests bring their own "SII"), else SII's published certificate of that key. */
async function siiCertificate(config: Pick<Config, 'SII_CERT_FILE'>, idk: 100 | 300): Promise<string> {
  if (!config.SII_CERT_FILE) return SII_CAF_CERTIFICATES[idk];
  const file = await readFile(config.SII_CERT_FILE);
  return file.includes('-----BEGIN') ? file.toString('latin1') : `-----BEGIN CERTIFICATE-----\n${file.toString('base64')}\n-----END CERTIFICATE-----\n`;
}

function cafRefused(message: string): AppError {
  return AppError.validation([{ path: 'file', message }], 400, `CAF refused: ${message}.`);
}

function cafView(c: q.CafRow) {
  return {
    id: c.id,
    merchant_id: c.merchant_id,
    dte_type: c.dte_type,
    folio_from: c.folio_from,
    folio_to: c.folio_to,
    folios_left: c.folio_to - c.next_folio + 1,
    authorized_on: c.authorized_on,
    added_at: iso(c.created_at)!,
  };
}

/**
 * Loads a CAF once it checks out (decisions §15): a type this service issues, the merchant's RUT,
 * SII's signature with the key of the merchant's environment, the CAF's key pair whole, and a
 * range that shares no folio with one loaded already.
 */
export async function addCaf(sql: Sql, config: Pick<Config, 'SII_CERT_FILE'>, secrets: SecretBox, merchantId: string, file: Buffer) {
  const merchant = await dteMerchant(sql, merchantId);
  let caf: ReturnType<typeof parseCaf>;
  try {
    caf = parseCaf(file);
  } catch (err) {
    if (err instanceof CafError) throw cafRefused(err.message);
    throw err;
  }
  if (caf.rut !== merchant.rut) throw cafRefused(`it authorises RUT ${caf.rut}, not the merchant's ${merchant.rut}`);
  const idk = SII_KEY_OF_ENV[merchant.sii_env];
  if (caf.idk !== idk) throw cafRefused(`it was signed by SII key ${caf.idk}, not by the key of the ${merchant.sii_env} environment (${idk})`);
  try {
    verifyCaf(caf, await siiCertificate(config, idk));
  } catch (err) {
    if (err instanceof CafError) throw cafRefused(err.message);
    throw err;
  }
  const row = await sql.begin(async (tx) => {
    await q.lockFolioCounter(tx, merchantId, caf.dteType);
    const loaded = await q.overlappingCaf(tx, merchantId, caf.dteType, caf.from, caf.to);
    if (loaded) {
      throw cafRefused(`folios ${caf.from}..${caf.to} of type ${caf.dteType} overlap the loaded CAF ${loaded.folio_from}..${loaded.folio_to}`);
    }
    return q.insertCaf(tx, {
      id: newId(),
      merchant_id: merchantId,
      dte_type: caf.dteType,
      folio_from: caf.from,
      folio_to: caf.to,
      authorized_on: caf.authorizedOn,
      caf_xml: caf.cafXml,
      sealed_private_key: secrets.seal(caf.privateKeyPem),
      created_at: clock.now(),
    });
  });
  return cafView(row);
}

// ─── What a merchant has ─────────────────────────────────────────────────────

export type FoliosLeft = Record<`${DteType}`, number>;

function foliosByType(rows: { dte_type: DteType; left: number }[]): FoliosLeft {
  const left = Object.fromEntries(DTE_TYPES.map((t) => [String(t), 0])) as FoliosLeft;
  for (const r of rows) left[`${r.dte_type}`] = r.left;
  return left;
}

/** Folios left per document type (0 for a type without CAFs). */
export async function foliosLeft(db: Queryable, merchantId: string): Promise<FoliosLeft> {
  return foliosByType(await q.foliosLeft(db, merchantId));
}

/** Folios left per type of every merchant that has loaded CAFs, for the admin console's merchant list. */
export async function foliosLeftOfAll(db: Queryable): Promise<{ merchant_id: string; folios_left: FoliosLeft }[]> {
  const rows = await q.foliosLeft(db);
  const merchants = [...new Set(rows.map((r) => r.merchant_id))];
  return merchants.map((id) => ({ merchant_id: id, folios_left: foliosByType(rows.filter((r) => r.merchant_id === id)) }));
}

/** What GET /me says: whether the merchant issues DTEs, and its folios left per type. */
export async function dteSummary(db: Queryable, merchantId: string): Promise<{ enabled: boolean; folios_left: FoliosLeft }> {
  const [merchant, setup, left] = await Promise.all([getMerchant(db, merchantId), q.signingSetup(db, merchantId), foliosLeft(db, merchantId)]);
  return { enabled: merchant !== null && isDteReady(merchant) && setup !== null, folios_left: left };
}

/** A merchant's DTE setup: whether it issues DTEs, what it lacks, its certificate and CAFs. */
export async function dteStatus(db: Queryable, merchantId: string) {
  const merchant = await getMerchant(db, merchantId);
  if (!merchant) throw AppError.validation([{ path: 'merchant_id', message: 'no such merchant' }], 400);
  const [certificate, cafs] = await Promise.all([q.certificateInfo(db, merchantId), q.listCafs(db, merchantId)]);
  const missing = [...missingDteFields(merchant).map((f) => `tax_profile.${f}`), ...(certificate ? [] : ['certificate']), ...(cafs.length ? [] : ['caf'])];
  return {
    merchant_id: merchantId,
    enabled: missing.length === 0,
    missing,
    certificate: certificate ? certificateView(certificate) : null,
    folios_left: foliosByType(
      DTE_TYPES.map((t) => ({ dte_type: t, left: cafs.filter((c) => c.dte_type === t).reduce((n, c) => n + c.folio_to - c.next_folio + 1, 0) })),
    ),
    cafs: cafs.map(cafView),
  };
}

// ─── Issuing ─────────────────────────────────────────────────────────────────

function misconfigured(type: 33 | 34, message: string): AppError {
  return new AppError('merchant_misconfigured', message, { details: { dte_type: type } });
}

/**
 * The invoice's DTE, issued in the sending transaction (decisions §15) once it is sent: a folio
 * from the oldest CAF with folios left, the document built, stamped and signed, stored with the
 * invoice. A merchant without the three pieces issues none; an invoice in another currency than
 * CLP gets `not_applicable`. No folio left refuses the send (the caller's transaction rolls back).
 */
export async function issueInvoiceDte(db: Queryable, secrets: SecretBox | undefined, merchantId: string, invoiceId: string): Promise<void> {
  const setup = await q.signingSetup(db, merchantId);
  if (!setup) return;
  const merchant = await getMerchant(db, merchantId);
  if (!merchant || !isDteReady(merchant)) return;
  const invoice = await getInvoice(db, merchantId, invoiceId);
  if (!invoice) throw new Error(`invoice ${invoiceId} vanished while it was being sent`);
  if (invoice.currency !== 'CLP') return q.markDteNotApplicable(db, invoiceId);
  if (invoice.items.length > MAX_DTE_LINES) {
    throw AppError.validation([{ path: 'items', message: `a DTE has at most ${MAX_DTE_LINES} lines; this invoice has ${invoice.items.length}` }]);
  }
  if (!secrets) throw new Error('issuing a DTE needs the secret box that opens the certificate');
  const type = invoice.is_tax_exempt ? 34 : 33;
  const now = clock.now();
  const identity = openIdentity(secrets, setup.sealed_pkcs12);
  if (identity.notAfter <= now) throw misconfigured(type, `The DTE signing certificate expired on ${iso(identity.notAfter)}: add a current one.`);
  const taken = await q.takeFolio(db, merchantId, type);
  if (!taken) throw misconfigured(type, `No folios of DTE type ${type} are left: load a CAF of type ${type}.`);
  const issued = issueDte({
    invoice,
    type,
    folio: taken.folio,
    issuer: {
      rut: merchant.rut,
      razonSocial: merchant.razon_social,
      giro: merchant.giro,
      acteco: merchant.acteco,
      direccion: merchant.direccion,
      comuna: merchant.comuna,
      ciudad: merchant.ciudad,
      resolucionNumero: merchant.resolucion_numero,
      resolucionFecha: merchant.resolucion_fecha,
      timezone: merchant.timezone,
    },
    caf: { cafXml: taken.caf_xml, privateKeyPem: secrets.open(taken.sealed_private_key) },
    identity,
    now,
  });
  await q.insertInvoiceDte(db, {
    invoice_id: invoiceId,
    merchant_id: merchantId,
    dte_type: type,
    folio: taken.folio,
    caf_id: taken.caf_id,
    ted: issued.ted,
    envio_xml: issued.envio,
    resolucion_numero: merchant.resolucion_numero,
    resolucion_fecha: merchant.resolucion_fecha,
    created_at: now,
  });
}

/** The signed EnvioDTE of one of the merchant's invoices, with a file name; 404 when it has none. */
export async function invoiceDteXml(db: Queryable, merchantId: string, invoiceId: string): Promise<{ content: Buffer; filename: string }> {
  const found = await q.merchantInvoiceDte(db, merchantId, invoiceId);
  if (!found) throw new AppError('invoice_not_found', `No invoice ${invoiceId}.`);
  if (!found.envio_xml) throw new AppError('dte_not_found', `Invoice ${invoiceId} has no tax document (DTE).`);
  return { content: found.envio_xml, filename: dteFilename(found.dte_type!, found.folio!) };
}
