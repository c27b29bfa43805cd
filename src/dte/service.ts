// Chilean tax documents (docs/decisions.md §15): setting a merchant up (certificate, CAFs), what it has
// left, and issuing a document (folio, timbre, signature) inside the caller's transaction; which
// document an invoice or a note gets is src/invoices/tax-document.ts's.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Config } from '../config.js';
import type { Queryable, Sql } from '../db/client.js';
import { AppError } from '../errors.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { iso } from '../http/schemas.js';
import { getMerchant, type MerchantRow } from '../merchants/queries.js';
import { enqueue, queues } from '../queue/boss.js';
import type { PgBoss } from 'pg-boss';
import type { SecretBox } from '../secret-box.js';
import { CafError, DTE_TYPES, parseCaf, verifyCaf, type DteType } from './caf.js';
import { CertificateError, readPkcs12, type SigningIdentity } from './certificate.js';
import { dteFilename } from './document.js';
import type { IssuedDte, IssueInput } from './issue.js';
import { SII_CAF_CERTIFICATES } from './sii-certs.js';
import * as q from './queries.js';

/** The tax profile's fields a DTE needs (docs/decisions.md §15); set-tax-profile leaves the last four optional. */
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

// Reading a PKCS#12 (node-forge: its key derivations and ciphers in JavaScript) takes some 10 ms
// of CPU, and every send and every submission job signs: each sealed certificate is read once per
// process. The key is the sealed bytes' hash, so a replaced certificate (sealed anew) is read anew.
const IDENTITIES_KEPT = 256;
const identities = new Map<string, SigningIdentity>();

/** The merchant's signing identity from its sealed certificate, read once per process. */
export function openIdentity(secrets: SecretBox, sealed: Buffer): SigningIdentity {
  const key = createHash('sha256').update(sealed).digest('base64');
  const kept = identities.get(key);
  if (kept) return kept;
  const { pkcs12, password } = JSON.parse(secrets.open(sealed)) as SealedPkcs12;
  const identity = readPkcs12(Buffer.from(pkcs12, 'base64'), password);
  if (identities.size >= IDENTITIES_KEPT) identities.delete(identities.keys().next().value!);
  identities.set(key, identity);
  return identity;
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
 * Loads a CAF once it checks out (docs/decisions.md §15): a type this service issues, the merchant's RUT,
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

/** Folios left per type of every merchant that has loaded CAFs, for the admin console's merchant list. */
export async function foliosLeftOfAll(db: Queryable): Promise<{ merchant_id: string; folios_left: FoliosLeft }[]> {
  const byMerchant = new Map<string, { dte_type: DteType; left: number }[]>();
  for (const r of await q.foliosLeft(db)) {
    const rows = byMerchant.get(r.merchant_id);
    if (rows) rows.push(r);
    else byMerchant.set(r.merchant_id, [r]);
  }
  return [...byMerchant].map(([id, rows]) => ({ merchant_id: id, folios_left: foliosByType(rows) }));
}

/** What GET /me says: whether the merchant issues DTEs, and its folios left per type. */
export async function dteSummary(db: Queryable, merchantId: string): Promise<{ enabled: boolean; folios_left: FoliosLeft }> {
  // Not signingSetup: it reads the sealed certificate, and this needs only to know there is one.
  const [merchant, certificate, rows] = await Promise.all([getMerchant(db, merchantId), q.certificateInfo(db, merchantId), q.foliosLeft(db, merchantId)]);
  return { enabled: merchant !== null && isDteReady(merchant) && certificate !== null && rows.length > 0, folios_left: foliosByType(rows) };
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

/** Enqueues the merchant's submission in the caller's transaction (the one that issued a document). */
export async function queueSubmission(db: Queryable, boss: PgBoss, merchantId: string): Promise<void> {
  await enqueue(boss, db, queues.dteSubmit.name, { merchant_id: merchantId }, { group: { id: merchantId } });
}

export function misconfigured(type: DteType, message: string): AppError {
  return new AppError('merchant_misconfigured', message, { details: { dte_type: type } });
}

/** What issuing a document in the caller's transaction takes: the secrets that open the keys, the queue of its submission. */
export interface IssueDeps {
  secrets: SecretBox | undefined;
  boss: PgBoss;
}

/** Who signs, under which resolution, and when. */
export type Signer = Pick<IssueInput, 'issuer' | 'identity' | 'now'>;

/** The merchant's signing setup when it issues DTEs (tax profile, certificate), its certificate opened. */
export async function signer(db: Queryable, secrets: SecretBox | undefined, merchantId: string): Promise<Signer | null> {
  const setup = await q.signingSetup(db, merchantId);
  if (!setup) return null;
  const merchant = await getMerchant(db, merchantId);
  if (!merchant || !isDteReady(merchant)) return null;
  if (!secrets) throw new Error('issuing a DTE needs the secret box that opens the certificate');
  return {
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
    identity: openIdentity(secrets, setup.sealed_pkcs12),
    now: clock.now(),
  };
}

/** Whose document it is: the invoice, and the note when it is a note's. */
interface DocumentOwner {
  merchantId: string;
  invoiceId: string;
  noteId?: string;
}

/**
 * A folio of the type, the document built, stamped and signed (by `issue`, given its folio and
 * CAF), and its submission queued, all in the caller's transaction. No folio left, or an expired
 * certificate, refuses (the caller's transaction rolls back).
 */
export async function issueDocument(db: Queryable, deps: IssueDeps, by: Signer, owner: DocumentOwner, type: DteType, issue: (folio: number, caf: IssueInput['caf']) => IssuedDte) {
  const { identity, now } = by;
  if (identity.notAfter <= now) throw misconfigured(type, `The DTE signing certificate expired on ${iso(identity.notAfter)}: add a current one.`);
  const taken = await q.takeFolio(db, owner.merchantId, type);
  if (!taken) throw misconfigured(type, `No folios of DTE type ${type} are left: load a CAF of type ${type}.`);
  const issued = issue(taken.folio, { cafXml: taken.caf_xml, privateKeyPem: deps.secrets!.open(taken.sealed_private_key) });
  await q.insertDocument(db, {
    id: newId(),
    merchant_id: owner.merchantId,
    invoice_id: owner.invoiceId,
    note_id: owner.noteId ?? null,
    dte_type: type,
    folio: taken.folio,
    signed_dte: issued.signedDte,
    ted: issued.ted,
    receiver_rut: issued.receiverRut,
    issue_date: issued.issueDate,
    total: issued.total,
    created_at: now,
  });
  await queueSubmission(db, deps.boss, owner.merchantId);
  return { taken, issued };
}

/** A document a note modifies, as the SII knows it: what the note's Referencia names. */
export interface NoteTarget {
  type: number;
  folio: number;
  /** YYYY-MM-DD. */
  issueDate: string;
  receiverRut: string;
}

/**
 * The invoice's own DTE, or the note's, when there is one the SII did not reject: what a note
 * references. A DTE the SII rejected does not exist for it, and a note of it would be refused too.
 */
export async function noteTarget(db: Queryable, of: { invoiceId: string } | { noteId: string }): Promise<NoteTarget | null> {
  const doc = 'invoiceId' in of ? await q.invoiceDocument(db, of.invoiceId) : await q.noteDocument(db, of.noteId);
  if (!doc || doc.status === 'rejected') return null;
  return { type: doc.dte_type, folio: doc.folio, issueDate: doc.issue_date, receiverRut: doc.receiver_rut };
}

/** The signed EnvioDTE of one of the merchant's invoices, with a file name; 404 when it has none. */
export async function invoiceDteXml(db: Queryable, merchantId: string, invoiceId: string): Promise<{ content: Buffer; filename: string }> {
  const found = await q.merchantInvoiceDte(db, merchantId, invoiceId);
  if (!found) throw new AppError('invoice_not_found', `No invoice ${invoiceId}.`);
  if (!found.envio_xml) throw new AppError('dte_not_found', `Invoice ${invoiceId} has no tax document (DTE).`);
  return { content: found.envio_xml, filename: dteFilename(found.dte_type!, found.folio!) };
}

/** A merchant's documents (its invoices' DTEs and credit notes), newest first, with SII's state and reason. */
export async function listDocuments(db: Queryable, merchantId: string, status?: q.DocumentStatus) {
  const rows = await q.listDocuments(db, merchantId, status, 200);
  return rows.map((r) => ({ ...r, created_at: iso(r.created_at)!, updated_at: iso(r.updated_at)! }));
}
