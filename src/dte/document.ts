// The DTE of SII's schema v1.0 (DTE_v10.xsd): Documento with Encabezado, Detalle, TED and
// TmstFirma, elements in the schema's order, texts cut to its lengths, amounts in whole pesos.
import { create } from 'xmlbuilder2';
import type { Timbre } from './ted.js';
import { cut, latin1 } from './xml.js';

export const SII_NAMESPACE = 'http://www.sii.cl/SiiDte';
// SII's schema allows at most 60 lines of detail per document.
export const MAX_DTE_LINES = 60;
// SII's RUT for a receiver without one (a final consumer): a boleta's, never a factura's.
export const GENERIC_RUT = '66666666-6';

export interface Issuer {
  rut: string;
  razonSocial: string;
  giro: string;
  acteco: string;
  direccion: string;
  comuna: string;
  ciudad: string;
}

export interface Receiver {
  /** A RUT as `12345678-5`. */
  rut: string;
  name: string;
  giro: string | null;
  email: string | null;
  phone: string | null;
  address: string | null;
  comuna: string | null;
  ciudad: string | null;
}

export interface Line {
  description: string;
  /** Plain decimals, as the invoice stores them; null on a note that corrects a text. */
  quantity: string | null;
  unitPrice: string | null;
  /** Percent off the line's gross amount, or null. */
  discountPercent: string | null;
  /** Whole pesos taken off the line ("0" for none). */
  discountAmount: string;
  /** Not subject to VAT (IndExe 1). */
  exempt: boolean;
  /** Whole pesos. */
  lineTotal: string;
}

/** A Referencia line: another document, or the one a note modifies (with its CodRef). */
export interface Reference {
  /** The SII's TpoDocRef: a DTE type, 801, 802, 803, HES, HEM or SET. */
  type: string;
  folio: string;
  /** YYYY-MM-DD. */
  date: string;
  /** A note's reference to its document: 1 anula, 2 corrige texto, 3 corrige montos. */
  code?: 1 | 2 | 3;
  reason?: string | null;
}

/** The SII's DscRcgGlobal with TpoMov D: a discount on the taxable lines (the exempt ones when `exempt`). */
export interface GlobalDiscount {
  kind: '%' | '$';
  /** The percent, or whole pesos. */
  value: string;
  description: string | null;
  exempt: boolean;
}

export interface DteContent {
  type: 33 | 34 | 56 | 61;
  folio: number;
  issueDate: string;
  /** Line prices include VAT (the invoice is tax-inclusive): SII's MntBruto. */
  grossLines: boolean;
  /** No VAT at all: a 34, or a note of one. Its totals are the exempt amount only. */
  taxExempt: boolean;
  issuer: Issuer;
  receiver: Receiver;
  lines: Line[];
  globalDiscount?: GlobalDiscount | undefined;
  /** Whole pesos; the rate in percent. */
  totals: { net: string; exempt: string; taxRate: string; tax: string; total: string };
  /** In their order: the document's own references, then a note's reference to what it modifies. */
  references: Reference[];
}

/** The document's ID attribute, the signature's reference. */
export function documentId(type: number, folio: number): string {
  return `F${folio}T${type}`;
}

/** `DTE-33-42.xml`: the name of the e-mail attachment and of the download. */
export function dteFilename(type: number, folio: number): string {
  return `DTE-${type}-${folio}.xml`;
}

const text = (value: string, max: number) => cut(latin1(value), max);

/** A decimal as SII writes one: no trailing zeros, no point for a whole number. */
function decimal(value: string): string {
  return value.includes('.') ? value.replace(/0+$/, '').replace(/\.$/, '') : value;
}

/** What the timbre states of the document: its first item and receiver, cut as SII's DD cuts them. */
export function timbreFields(content: DteContent) {
  return {
    RR: content.receiver.rut,
    RSR: text(content.receiver.name, 40),
    IT1: text(content.lines[0]!.description, 40),
  };
}

function detail(content: DteContent, line: Line, index: number) {
  const name = text(line.description, 80);
  const full = text(line.description, 1000);
  return {
    NroLinDet: String(index + 1),
    // A document without VAT has only exempt lines: the SII reads them so without the mark.
    ...(line.exempt && !content.taxExempt ? { IndExe: '1' } : {}),
    NmbItem: name,
    // A description longer than NmbItem's 80 characters is kept whole in DscItem.
    ...(full !== name ? { DscItem: full } : {}),
    ...(line.quantity === null ? {} : { QtyItem: decimal(line.quantity) }),
    ...(line.unitPrice === null ? {} : { PrcItem: decimal(line.unitPrice) }),
    ...(line.discountPercent === null ? {} : { DescuentoPct: decimal(line.discountPercent) }),
    ...(line.discountAmount === '0' ? {} : { DescuentoMonto: line.discountAmount }),
    MontoItem: line.lineTotal,
  };
}

function totals(content: DteContent) {
  const t = content.totals;
  if (content.taxExempt) return { MntExe: t.exempt, MntTotal: t.total };
  return { MntNeto: t.net, ...(t.exempt === '0' ? {} : { MntExe: t.exempt }), TasaIVA: decimal(t.taxRate), IVA: t.tax, MntTotal: t.total };
}

function globalDiscount(g: GlobalDiscount) {
  return {
    NroLinDR: '1',
    TpoMov: 'D',
    ...(g.description ? { GlosaDR: text(g.description, 45) } : {}),
    TpoValor: g.kind,
    ValorDR: decimal(g.value),
    ...(g.exempt ? { IndExeDR: '1' } : {}),
  };
}

function reference(r: Reference, index: number) {
  return {
    NroLinRef: String(index + 1),
    TpoDocRef: r.type,
    FolioRef: r.folio,
    FchRef: r.date,
    ...(r.code ? { CodRef: String(r.code) } : {}),
    ...(r.reason ? { RazonRef: text(r.reason, 90) } : {}),
  };
}

/** The unsigned DTE element (namespace declared on it, no XML declaration), timbre and signing time included. */
export function buildDte(content: DteContent, timbre: Timbre, signedAt: string): string {
  const { issuer, receiver } = content;
  const documento = {
    '@ID': documentId(content.type, content.folio),
    Encabezado: {
      IdDoc: {
        TipoDTE: String(content.type),
        Folio: String(content.folio),
        FchEmis: content.issueDate,
        ...(content.grossLines ? { MntBruto: '1' } : {}),
      },
      Emisor: {
        RUTEmisor: issuer.rut,
        RznSoc: text(issuer.razonSocial, 100),
        GiroEmis: text(issuer.giro, 80),
        Acteco: issuer.acteco,
        DirOrigen: text(issuer.direccion, 70),
        CmnaOrigen: text(issuer.comuna, 20),
        CiudadOrigen: text(issuer.ciudad, 20),
      },
      Receptor: {
        RUTRecep: receiver.rut,
        RznSocRecep: text(receiver.name, 100),
        ...(receiver.giro ? { GiroRecep: text(receiver.giro, 40) } : {}),
        ...(receiver.phone ? { Contacto: text(receiver.phone, 80) } : {}),
        ...(receiver.email && receiver.email.length <= 80 ? { CorreoRecep: latin1(receiver.email) } : {}),
        ...(receiver.address ? { DirRecep: text(receiver.address, 70) } : {}),
        ...(receiver.comuna ? { CmnaRecep: text(receiver.comuna, 20) } : {}),
        ...(receiver.ciudad ? { CiudadRecep: text(receiver.ciudad, 20) } : {}),
      },
      Totales: totals(content),
    },
    Detalle: content.lines.map((line, i) => detail(content, line, i)),
    ...(content.globalDiscount ? { DscRcgGlobal: globalDiscount(content.globalDiscount) } : {}),
    ...(content.references.length ? { Referencia: content.references.map(reference) } : {}),
    TED: timbre.element,
    TmstFirma: signedAt,
  };
  return dteElement(documento, timbre);
}

/** A Documento in its DTE element, whose timbre must stand exactly as it was signed, or no reader can check it. */
export function dteElement(documento: Record<string, unknown>, timbre: Timbre): string {
  const xml = create({ DTE: { '@xmlns': SII_NAMESPACE, '@version': '1.0', Documento: documento } }).end({ headless: true });
  if (!xml.includes(timbre.signedData)) throw new Error('the timbre changed when placed in its document');
  return xml;
}
