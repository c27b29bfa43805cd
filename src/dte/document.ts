// The DTE of SII's schema v1.0 (DTE_v10.xsd): Documento with Encabezado, Detalle, TED and
// TmstFirma, elements in the schema's order, texts cut to its lengths, amounts in whole pesos.
import { create } from 'xmlbuilder2';
import type { Timbre } from './ted.js';
import { cut, latin1 } from './xml.js';

export const SII_NAMESPACE = 'http://www.sii.cl/SiiDte';
// SII's schema allows at most 60 lines of detail per document.
export const MAX_DTE_LINES = 60;
// SII's RUT for a receiver without one (a final consumer).
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
  /** A RUT as `12345678-5`, or GENERIC_RUT. */
  rut: string;
  name: string;
  email: string | null;
  phone: string | null;
  address: string | null;
}

export interface Line {
  description: string;
  /** Plain decimals, as the invoice stores them. */
  quantity: string;
  unitPrice: string;
  /** Whole pesos. */
  lineTotal: string;
}

/** What a credit note (type 61) cancels: SII's Referencia with CodRef 1, "anula documento". */
export interface Reference {
  type: 33 | 34;
  folio: number;
  /** The referenced document's issue date, YYYY-MM-DD. */
  date: string;
}

export interface DteContent {
  type: 33 | 34 | 61;
  folio: number;
  issueDate: string;
  /** Line prices include VAT (the invoice is tax-inclusive): SII's MntBruto. */
  grossLines: boolean;
  issuer: Issuer;
  receiver: Receiver;
  lines: Line[];
  /** Whole pesos; the rate in percent. For type 34 `net` is the exempt amount and there is no tax. */
  totals: { net: string; taxRate: string; tax: string; total: string };
  /** A credit note's: the document it cancels. */
  reference?: Reference;
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

function detail(line: Line, index: number) {
  const name = text(line.description, 80);
  const full = text(line.description, 1000);
  return {
    NroLinDet: String(index + 1),
    NmbItem: name,
    // A description longer than NmbItem's 80 characters is kept whole in DscItem.
    ...(full !== name ? { DscItem: full } : {}),
    QtyItem: decimal(line.quantity),
    PrcItem: decimal(line.unitPrice),
    MontoItem: line.lineTotal,
  };
}

function totals(content: DteContent) {
  const t = content.totals;
  // A credit note states its totals as the document it cancels does.
  if (content.type === 34 || content.reference?.type === 34) return { MntExe: t.net, MntTotal: t.total };
  return { MntNeto: t.net, TasaIVA: decimal(t.taxRate), IVA: t.tax, MntTotal: t.total };
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
        ...(receiver.phone ? { Contacto: text(receiver.phone, 80) } : {}),
        ...(receiver.email && receiver.email.length <= 80 ? { CorreoRecep: latin1(receiver.email) } : {}),
        ...(receiver.address ? { DirRecep: text(receiver.address, 70) } : {}),
      },
      Totales: totals(content),
    },
    Detalle: content.lines.map(detail),
    ...(content.reference
      ? {
          Referencia: {
            NroLinRef: '1',
            TpoDocRef: String(content.reference.type),
            FolioRef: String(content.reference.folio),
            FchRef: content.reference.date,
            CodRef: '1',
            RazonRef: 'Anula documento',
          },
        }
      : {}),
    TED: timbre.element,
    TmstFirma: signedAt,
  };
  const xml = create({ DTE: { '@xmlns': SII_NAMESPACE, '@version': '1.0', Documento: documento } }).end({ headless: true });
  // The timbre must stand in the document exactly as it was signed, or no reader can check it.
  if (!xml.includes(timbre.signedData)) throw new Error('the timbre changed when placed in its document');
  return xml;
}
