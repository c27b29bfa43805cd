// One invoice's tax document, from its rows to the signed EnvioDTE: CPU only, so it runs inside
// the sending transaction.
import type { InvoiceWithItems } from '../invoices/queries.js';
import { Decimal } from '../money.js';
import type { SigningIdentity } from './certificate.js';
import { buildDte, documentId, GENERIC_RUT, timbreFields, type DteContent, type Issuer, type Reference } from './document.js';
import { buildEnvioDte } from './envelope.js';
import { signElement } from './sign.js';
import { stampTimbre } from './ted.js';

export interface IssueInput {
  invoice: InvoiceWithItems;
  type: 33 | 34 | 61;
  folio: number;
  issuer: Issuer & { resolucionNumero: number; resolucionFecha: string; timezone: string };
  /** A credit note's: the document it cancels (it is issued today, with that document's lines and totals). */
  reference?: Reference;
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
function pesos(amount: string): string {
  const d = new Decimal(amount);
  if (!d.isInteger()) throw new Error(`a CLP amount with decimals: ${amount}`);
  return d.toFixed(0);
}

const CHILEAN_RUT = /^\d{1,8}-[\dK]$/;

/** The document's content: the invoice's own lines and totals (decisions §2), nothing recomputed. */
export function dteContent(input: Pick<IssueInput, 'invoice' | 'type' | 'folio' | 'issuer' | 'reference' | 'now'>): DteContent {
  const { invoice } = input;
  return {
    type: input.type,
    folio: input.folio,
    issueDate: input.reference ? siiTimestamp(input.now, input.issuer.timezone).slice(0, 10) : invoice.issue_date,
    grossLines: invoice.tax_inclusive && (input.type === 33 || input.reference?.type === 33),
    issuer: input.issuer,
    receiver: {
      rut: invoice.client_rut && CHILEAN_RUT.test(invoice.client_rut) ? invoice.client_rut : GENERIC_RUT,
      name: invoice.client_name,
      email: invoice.client_email,
      phone: invoice.client_phone,
      address: invoice.client_address,
    },
    lines: invoice.items.map((it) => ({ description: it.description, quantity: it.quantity, unitPrice: it.unit_price, lineTotal: pesos(it.line_total) })),
    totals: { net: pesos(invoice.subtotal), taxRate: invoice.tax_rate, tax: pesos(invoice.tax_total), total: pesos(invoice.total) },
    ...(input.reference ? { reference: input.reference } : {}),
  };
}

export function issueDte(input: IssueInput): IssuedDte {
  const content = dteContent(input);
  const stampedAt = siiTimestamp(input.now, input.issuer.timezone);
  const timbre = stampTimbre(
    {
      RE: input.issuer.rut,
      TD: input.type,
      F: input.folio,
      FE: content.issueDate,
      ...timbreFields(content),
      MNT: content.totals.total,
      CAF: input.caf.cafXml,
      TSTED: stampedAt,
    },
    input.caf.privateKeyPem,
  );
  // Signed on its own, as SII checks it once taken out of the envelope (decisions §15).
  const signedDte = signElement(buildDte(content, timbre, stampedAt), 'Documento', input.identity);
  if (!signedDte.includes(`ID="${documentId(input.type, input.folio)}"`)) throw new Error('the signed DTE lost its ID');
  return { ted: timbre.text, signedDte, signedAt: stampedAt, receiverRut: content.receiver.rut, issueDate: content.issueDate, total: content.totals.total };
}

/** The document alone in a signed EnvioDTE, ISO-8859-1: what an invoice keeps as its tax document (a credit note keeps none). */
export function soleEnvio(input: Pick<IssueInput, 'type' | 'issuer' | 'identity'>, issued: IssuedDte): Buffer {
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
