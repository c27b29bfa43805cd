// A tax document (an invoice's, a note's), from its rows to the signed EnvioDTE: CPU only, so it runs inside
// the sending transaction.
import { Decimal } from '../money.js';
import type { SigningIdentity } from './certificate.js';
import { buildDte, documentId, GENERIC_RUT, timbreFields, type DteContent, type GlobalDiscount, type Issuer, type Line, type Receiver } from './document.js';
import { buildEnvioDte } from './envelope.js';
import { signElement } from './sign.js';
import { stampTimbre } from './ted.js';
import type { SourceClient, SourceInvoice, SourceItem } from './source.js';

/** The issuer as a document states it, with the resolution it issues under and its time zone. */
export type IssuerSetup = Issuer & { resolucionNumero: number; resolucionFecha: string; timezone: string };

export interface IssueInput {
  content: DteContent;
  issuer: IssuerSetup;
  caf: { cafXml: string; privateKeyPem: string };
  identity: SigningIdentity;
  now: Date;
}

export interface IssuedDte {
  /** The TED as signed: the PDF's barcode. */
  ted: string;
  /** The DTE element as signed: an EnvioDTE of several documents places it as is. */
  signedDte: string;
  /** When it was stamped and signed, SII's FechaHora in the issuer's time. */
  signedAt: string;
  /** What SII's per-document query asks: the receiver's RUT, the issue date, the total. */
  receiverRut: string;
  issueDate: string;
  total: string;
}

const timestampFormats = new Map<string, Intl.DateTimeFormat>();

/** SII's FechaHora: the local time of the issuer, YYYY-MM-DDTHH:MM:SS. */
export function siiTimestamp(at: Date, timeZone: string): string {
  let format = timestampFormats.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('sv-SE', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
    timestampFormats.set(timeZone, format);
  }
  return format.format(at).replace(' ', 'T');
}

/** A CLP amount as SII writes it; the invoice's own arithmetic made it whole already. */
export function pesos(amount: string): string {
  const d = new Decimal(amount);
  if (!d.isInteger()) throw new Error(`a CLP amount with decimals: ${amount}`);
  return d.toFixed(0);
}

const CHILEAN_RUT = /^\d{1,8}-[\dK]$/;

/** A receiver a factura or a note can be addressed to: a Chilean RUT other than the consumer's generic one. */
export function hasCompanyRut(rut: string | null): rut is string {
  return rut !== null && CHILEAN_RUT.test(rut) && rut !== GENERIC_RUT;
}

/** The receiver as the invoice keeps its client, under the RUT its documents are addressed to. */
export function invoiceReceiver(invoice: SourceClient, rut: string): Receiver {
  return {
    rut,
    name: invoice.client_name,
    giro: invoice.client_giro,
    email: invoice.client_email,
    phone: invoice.client_phone,
    address: invoice.client_address,
    comuna: invoice.client_comuna,
    ciudad: invoice.client_ciudad,
  };
}

/** Lines as the SII states them, from rows that hold them as an invoice does. */
/** A line as an invoice or a note holds it; a note's corrected text has no quantity or price. */
type LineRow = Pick<SourceItem, 'description' | 'discount_percent' | 'discount_amount' | 'exempt' | 'line_total'> & { quantity: string | null; unit_price: string | null };

export function dteLines(items: LineRow[], taxExempt: boolean): Line[] {
  return items.map((it) => ({
    description: it.description,
    quantity: it.quantity,
    unitPrice: it.unit_price,
    discountPercent: it.discount_percent,
    discountAmount: pesos(it.discount_amount),
    exempt: taxExempt || it.exempt,
    lineTotal: pesos(it.line_total),
  }));
}

/** The invoice's global discount as a DscRcgGlobal, when it has one. */
export function dteGlobalDiscount(g: { percent: string | null; amount: string | null; description: string | null }, taxExempt: boolean): GlobalDiscount | undefined {
  if (g.percent !== null) return { kind: '%', value: g.percent, description: g.description, exempt: taxExempt };
  if (g.amount !== null) return { kind: '$', value: pesos(g.amount), description: g.description, exempt: taxExempt };
  return undefined;
}

/** The invoice's own tax document (33 or 34): its lines and totals as they are (docs/tax-documents.md), nothing recomputed. */
export function invoiceDteContent(invoice: SourceInvoice & { client_rut: string }, type: 33 | 34, folio: number, issuer: Issuer): DteContent {
  return {
    type,
    folio,
    issueDate: invoice.issue_date,
    grossLines: invoice.tax_inclusive && type === 33,
    taxExempt: type === 34,
    issuer,
    receiver: invoiceReceiver(invoice, invoice.client_rut),
    lines: dteLines(invoice.items, invoice.is_tax_exempt),
    globalDiscount: dteGlobalDiscount(
      { percent: invoice.global_discount_percent, amount: invoice.global_discount_amount, description: invoice.global_discount_description },
      invoice.is_tax_exempt,
    ),
    totals: {
      net: pesos(invoice.taxable_amount),
      exempt: pesos(invoice.exempt_amount),
      taxRate: invoice.tax_rate,
      tax: pesos(invoice.tax_total),
      total: pesos(invoice.total),
    },
    references: invoice.references.map((r) => ({ type: r.type, folio: r.folio, date: r.date, reason: r.reason })),
  };
}

export function issueDte(input: IssueInput): IssuedDte {
  const { content } = input;
  const stampedAt = siiTimestamp(input.now, input.issuer.timezone);
  const timbre = stampTimbre(
    {
      RE: input.issuer.rut,
      TD: content.type,
      F: content.folio,
      FE: content.issueDate,
      ...timbreFields(content),
      MNT: content.totals.total,
      CAF: input.caf.cafXml,
      TSTED: stampedAt,
    },
    input.caf.privateKeyPem,
  );
  // Signed on its own, as SII checks it once taken out of the envelope (docs/decisions.md §15).
  const signedDte = signElement(buildDte(content, timbre, stampedAt), 'Documento', input.identity);
  if (!signedDte.includes(`ID="${documentId(content.type, content.folio)}"`)) throw new Error('the signed DTE lost its ID');
  return { ted: timbre.text, signedDte, signedAt: stampedAt, receiverRut: content.receiver.rut, issueDate: content.issueDate, total: content.totals.total };
}

/** The document alone in a signed EnvioDTE, ISO-8859-1: what an invoice keeps as its tax document (a credit note keeps none). */
export function soleEnvio(input: Pick<IssueInput, 'issuer' | 'identity'> & { type: DteContent['type'] }, issued: IssuedDte): Buffer {
  return buildEnvioDte(
    {
      rutEmisor: input.issuer.rut,
      rutEnvia: input.identity.subjectRut,
      resolucionFecha: input.issuer.resolucionFecha,
      resolucionNumero: input.issuer.resolucionNumero,
      signedAt: issued.signedAt,
    },
    [{ type: input.type, xml: issued.signedDte }],
    input.identity,
  );
}
