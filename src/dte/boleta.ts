// The boleta electrónica (39) and boleta no afecta o exenta (41) of docs/decisions.md §20: the consumer's
// tax document, in SII's boleta schema (EnvioBOLETA_v11.xsd) rather than DTE_v10.xsd, with prices
// that include VAT. From an invoice's rows to the signed EnvioBOLETA: CPU only, like issue.ts.
import { Decimal } from '../money.js';
import type { SigningIdentity } from './certificate.js';
import { documentId, dteElement, GENERIC_RUT, type GlobalDiscount, type Issuer, type Reference } from './document.js';
import { buildEnvelope, type Caratula, type SignedDte } from './envelope.js';
import { dteGlobalDiscount, pesos, siiTimestamp, type IssuedDte, type IssueInput } from './issue.js';
import { signElement } from './sign.js';
import { stampTimbre, type Timbre } from './ted.js';
import { cut, latin1 } from './xml.js';
import type { SourceInvoice, SourceItem } from './source.js';

export type BoletaType = 39 | 41;

/** A boleta (docs/decisions.md §20): the consumer's document, 39 or 41. */
export const isBoletaType = (type: number | null): type is BoletaType => type === 39 || type === 41;

/** What is known of the consumer: a boleta needs neither. */
export interface Consumer {
  name: string | null;
  email: string | null;
}

/** A Detalle line as the boleta states it: every amount whole pesos and, in a 39, VAT included. */
export interface BoletaLine {
  description: string;
  exempt: boolean;
  /** QtyItem and PrcItem, or null when no price reproduces the amount (see `statedLine`). */
  quantity: string | null;
  unitPrice: string | null;
  discountPercent: string | null;
  /** "0" for none. */
  discountAmount: string;
  amount: string;
}

export interface BoletaContent {
  type: BoletaType;
  folio: number;
  issueDate: string;
  issuer: Issuer;
  consumer: Consumer;
  lines: BoletaLine[];
  globalDiscount?: GlobalDiscount | undefined;
  /** Whole pesos: a 41 has only `exempt` and `total`. */
  totals: { net: string; exempt: string; tax: string; total: string };
  references: Reference[];
}

// The DD's RSR is required; a consumer who gave no name is named as SII's boletas name one.
const UNNAMED_CONSUMER = 'CONSUMIDOR FINAL';
// SII's boleta schema: PrcItem has at most 6 decimals.
const PRICE_PLACES = 6;

const text = (value: string, max: number) => cut(latin1(value), max);
const whole = (d: Decimal) => d.integerValue(Decimal.ROUND_HALF_UP);

/** A decimal as SII writes one: no trailing zeros, no point for a whole number. */
const decimal = (d: Decimal) => d.toFixed();

/**
 * The line as SII checks one (MontoItem = round(QtyItem × PrcItem) − DescuentoMonto, DescuentoMonto
 * = round(gross × DescuentoPct / 100)): the first price that reproduces `amount` with a discount
 * exactly where the invoice has one. A line whose amount took the boleta's rounding correction
 * may have no such price at 6 decimals; it then states its amount alone, which the schema allows,
 * rather than figures that do not add up.
 */
function statedLine(item: SourceItem, exempt: boolean, amount: Decimal, prices: Decimal[]): BoletaLine {
  const quantity = new Decimal(item.quantity);
  const discounted = !new Decimal(item.discount_amount).isZero();
  const base = { description: item.description, exempt, amount: amount.toFixed(0) };
  for (const price of prices) {
    const gross = whole(quantity.times(price));
    const discount = gross.minus(amount);
    if (discounted ? !discount.isGreaterThan(0) : !discount.isZero()) continue;
    const percent = item.discount_percent !== null && whole(gross.times(item.discount_percent).div(100)).isEqualTo(discount) ? item.discount_percent : null;
    return { ...base, quantity: decimal(quantity), unitPrice: decimal(price), discountPercent: percent === null ? null : decimal(new Decimal(percent)), discountAmount: discount.toFixed(0) };
  }
  return { ...base, quantity: null, unitPrice: null, discountPercent: null, discountAmount: '0' };
}

/**
 * The invoice's boleta (docs/tax-documents.md's arithmetic, docs/decisions.md §20): its totals are the
 * invoice's, restated VAT included. The invoice keeps net prices plus tax (unless tax-inclusive),
 * while a boleta's lines carry VAT: each taxed line's amount becomes round(line_total × (1 + rate)),
 * and since rounding each line need not add up to the rounded whole, the last taxed line takes the
 * difference (a peso or a few), so that Σ taxed lines − global discount = MntNeto + IVA and the
 * lines add up to MntTotal exactly, the SII allowing no peso of tolerance. A tax-inclusive
 * invoice's lines are gross already and add up as they are. A global discount on a 39 is stated
 * in pesos with VAT, the one form whose amount the SII computes back without rounding anew.
 */
export function boletaDteContent(invoice: SourceInvoice, type: BoletaType, folio: number, issuer: Issuer): BoletaContent {
  const total = new Decimal(pesos(invoice.total));
  const exempt = new Decimal(pesos(invoice.exempt_amount));
  const common = {
    type,
    folio,
    issueDate: invoice.issue_date,
    issuer,
    consumer: { name: invoice.client_name.trim() || null, email: invoice.client_email.trim() || null },
    references: invoice.references.map((r) => ({ type: r.type, folio: r.folio, date: r.date, reason: r.reason })),
  };
  const asIs = (item: SourceItem, exemptLine: boolean) => statedLine(item, exemptLine, new Decimal(pesos(item.line_total)), [new Decimal(item.unit_price)]);
  const global = { percent: invoice.global_discount_percent, amount: invoice.global_discount_amount, description: invoice.global_discount_description };

  if (type === 41) {
    return {
      ...common,
      lines: invoice.items.map((item) => asIs(item, true)),
      globalDiscount: dteGlobalDiscount(global, true),
      totals: { net: '0', exempt: exempt.toFixed(0), tax: '0', total: total.toFixed(0) },
    };
  }

  const factor = new Decimal(invoice.tax_rate).div(100).plus(1);
  const withVat = (net: string) => (invoice.tax_inclusive ? new Decimal(pesos(net)) : whole(new Decimal(net).times(factor)));
  const afecto = total.minus(exempt);
  const net = whole(afecto.div(factor));
  const discount = withVat(invoice.discount_total);
  const taxed = invoice.items.filter((item) => !item.exempt);
  const amounts = taxed.map((item) => withVat(item.line_total));
  const correction = afecto.plus(discount).minus(amounts.reduce((a, b) => a.plus(b), new Decimal(0)));
  if (amounts.length) amounts[amounts.length - 1] = amounts.at(-1)!.plus(correction);
  else if (!correction.isZero()) throw new Error('a boleta with VAT and no taxed line');
  if (amounts.some((a) => a.isNegative())) throw new Error('a boleta line with a negative amount');

  const lines = invoice.items.map((item) => {
    if (item.exempt) return asIs(item, true);
    const amount = amounts[taxed.indexOf(item)]!;
    const price = invoice.tax_inclusive ? new Decimal(item.unit_price) : new Decimal(item.unit_price).times(factor).decimalPlaces(PRICE_PLACES, Decimal.ROUND_HALF_UP);
    const discountAmount = withVat(item.discount_amount);
    const fitted = new Decimal(item.quantity).isZero() ? [] : [amount.plus(discountAmount).div(item.quantity).decimalPlaces(PRICE_PLACES, Decimal.ROUND_HALF_UP)];
    return statedLine(item, false, amount, [price, ...fitted]);
  });
  return {
    ...common,
    lines,
    globalDiscount: discount.isZero() ? undefined : { kind: '$', value: discount.toFixed(0), description: invoice.global_discount_description, exempt: false },
    totals: { net: net.toFixed(0), exempt: exempt.toFixed(0), tax: afecto.minus(net).toFixed(0), total: total.toFixed(0) },
  };
}

function detail(content: BoletaContent, line: BoletaLine, index: number) {
  const name = text(line.description, 80);
  const full = text(line.description, 1000);
  return {
    NroLinDet: String(index + 1),
    // A 41 has only exempt lines: the SII reads them so without the mark.
    ...(line.exempt && content.type === 39 ? { IndExe: '1' } : {}),
    NmbItem: name,
    ...(full !== name ? { DscItem: full } : {}),
    ...(line.quantity === null ? {} : { QtyItem: line.quantity }),
    ...(line.unitPrice === null ? {} : { PrcItem: line.unitPrice }),
    ...(line.discountPercent === null ? {} : { DescuentoPct: line.discountPercent }),
    ...(line.discountAmount === '0' ? {} : { DescuentoMonto: line.discountAmount }),
    MontoItem: line.amount,
  };
}

function totals(content: BoletaContent) {
  const t = content.totals;
  if (content.type === 41) return { MntExe: t.exempt, MntTotal: t.total };
  // The schema's IVA is a positive integer: a boleta whose VAT rounds to nothing states none.
  return { MntNeto: t.net, ...(t.exempt === '0' ? {} : { MntExe: t.exempt }), ...(t.tax === '0' ? {} : { IVA: t.tax }), MntTotal: t.total };
}

function globalDiscount(g: GlobalDiscount) {
  return {
    NroLinDR: '1',
    TpoMov: 'D',
    ...(g.description ? { GlosaDR: text(g.description, 45) } : {}),
    TpoValor: g.kind,
    ValorDR: decimal(new Decimal(g.value)),
    ...(g.exempt ? { IndExeDR: '1' } : {}),
  };
}

// The boleta schema's Referencia has no date (FchRef) and a TpoDocRef of at most 3 characters.
function reference(r: Reference, index: number) {
  return {
    NroLinRef: String(index + 1),
    TpoDocRef: text(r.type, 3),
    FolioRef: r.folio,
    ...(r.reason ? { RazonRef: text(r.reason, 90) } : {}),
  };
}

/** What the timbre states of the boleta: the consumer's generic RUT, their name if known, the first item. */
export function boletaTimbreFields(content: BoletaContent) {
  return {
    RR: GENERIC_RUT,
    RSR: text(content.consumer.name ?? UNNAMED_CONSUMER, 40),
    IT1: text(content.lines[0]!.description, 40),
  };
}

/** The unsigned DTE element of a boleta (namespace declared on it, no XML declaration), timbre and signing time included. */
export function buildBoleta(content: BoletaContent, timbre: Timbre, signedAt: string): string {
  const { issuer, consumer } = content;
  const documento = {
    '@ID': documentId(content.type, content.folio),
    Encabezado: {
      IdDoc: {
        TipoDTE: String(content.type),
        Folio: String(content.folio),
        FchEmis: content.issueDate,
        // 3: ventas y servicios, the boleta of a sale.
        IndServicio: '3',
      },
      Emisor: {
        RUTEmisor: issuer.rut,
        RznSocEmisor: text(issuer.razonSocial, 100),
        GiroEmisor: text(issuer.giro, 80),
        DirOrigen: text(issuer.direccion, 70),
        CmnaOrigen: text(issuer.comuna, 20),
        CiudadOrigen: text(issuer.ciudad, 20),
      },
      Receptor: {
        RUTRecep: GENERIC_RUT,
        ...(consumer.name ? { RznSocRecep: text(consumer.name, 100) } : {}),
        // Not every published boleta schema has CorreoRecep (docs/decisions.md §20): the e-mail goes as the contact.
        ...(consumer.email && consumer.email.length <= 80 ? { Contacto: latin1(consumer.email) } : {}),
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

export type BoletaIssueInput = Omit<IssueInput, 'content'> & { content: BoletaContent };

/** The boleta stamped and signed on its own, as SII checks a DTE out of its envelope (docs/decisions.md §15). */
export function issueBoleta(input: BoletaIssueInput): IssuedDte {
  const { content } = input;
  const stampedAt = siiTimestamp(input.now, input.issuer.timezone);
  const timbre = stampTimbre(
    {
      RE: input.issuer.rut,
      TD: content.type,
      F: content.folio,
      FE: content.issueDate,
      ...boletaTimbreFields(content),
      MNT: content.totals.total,
      CAF: input.caf.cafXml,
      TSTED: stampedAt,
    },
    input.caf.privateKeyPem,
  );
  const signedDte = signElement(buildBoleta(content, timbre, stampedAt), 'Documento', input.identity);
  if (!signedDte.includes(`ID="${documentId(content.type, content.folio)}"`)) throw new Error('the signed boleta lost its ID');
  return { ted: timbre.text, signedDte, signedAt: stampedAt, receiverRut: GENERIC_RUT, issueDate: content.issueDate, total: content.totals.total };
}

/** The signed EnvioBOLETA of signed boletas (at most 500, the schema's limit), as its ISO-8859-1 bytes with their declaration. */
export function buildEnvioBoleta(c: Caratula, dtes: SignedDte[], identity: SigningIdentity): Buffer {
  if (dtes.length === 0 || dtes.length > 500) throw new Error(`an EnvioBOLETA holds 1 to 500 boletas, not ${dtes.length}`);
  return buildEnvelope({ root: 'EnvioBOLETA', schema: 'EnvioBOLETA_v11.xsd' }, c, dtes, identity);
}

/** The boleta alone in a signed EnvioBOLETA: what an invoice keeps as its tax document. */
export function soleEnvioBoleta(input: Pick<BoletaIssueInput, 'issuer' | 'identity'> & { type: BoletaType }, issued: IssuedDte): Buffer {
  return buildEnvioBoleta(
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
