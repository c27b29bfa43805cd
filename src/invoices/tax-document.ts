// An invoice's tax documents (docs/tax-documents.md): the DTE issued in the transaction that sends
// the invoice, and a credit or debit note's. What a DTE is, and how it is signed and numbered,
// is src/dte's; which document an invoice gets, and from which of its fields, is decided here.
import type { Queryable } from '../db/client.js';
import { AppError } from '../errors.js';
import { Decimal } from '../money.js';
import { boletaDteContent, issueBoleta, soleEnvioBoleta, type BoletaType } from '../dte/boleta.js';
import { MAX_DTE_LINES, type DteContent, type Receiver } from '../dte/document.js';
import { dteGlobalDiscount, dteLines, hasCompanyRut, invoiceDteContent, invoiceReceiver, issueDte, pesos, siiTimestamp, soleEnvio, type IssuedDte } from '../dte/issue.js';
import { issueDocument, misconfigured, signer, type IssueDeps, type NoteTarget, type Signer } from '../dte/service.js';
import * as dteQ from '../dte/queries.js';
import type { NoteAmounts } from './note-amounts.js';
import { getInvoiceWithItems, type DocumentReference, type InvoiceRow } from './queries.js';

/** The receiver's fields a factura or a note needs (docs/tax-documents.md), each one missing named. */
function assertReceiverComplete(invoice: InvoiceRow): void {
  const missing = (['giro', 'address', 'comuna'] as const).filter((f) => !invoice[`client_${f}`]);
  if (!missing.length) return;
  throw AppError.validation(
    missing.map((f) => ({ path: `client.${f}`, message: `is required: a factura to a Chilean RUT (${invoice.client_rut}) states the receiver's giro, address and comuna` })),
    422,
    `The client lacks ${missing.join(', ')}, which the SII requires of a factura's receiver: set them with PATCH /clients/${invoice.client_id}.`,
  );
}

// Chile's IVA (docs/tax-documents.md#the-iva-rate): the SII takes no other rate on a factura or boleta.
const IVA_PERCENT = 19;

/** A taxed document (33, 39) states IVA at 19 %: an invoice at another rate would print a tax the SII never receives. */
function assertIvaRate(invoice: InvoiceRow): void {
  const rate = new Decimal(invoice.tax_rate);
  if (invoice.is_tax_exempt || rate.eq(IVA_PERCENT)) return;
  throw AppError.validation(
    [{ path: 'tax_rate', message: `must be ${IVA_PERCENT} on an invoice with a tax document: Chile's IVA is ${IVA_PERCENT} % (this invoice has ${rate.toString()})` }],
    422,
    `The invoice's tax_rate is ${rate.toString()} %; a factura or boleta states IVA at ${IVA_PERCENT} % (or is_tax_exempt for an exempt sale).`,
  );
}

/**
 * The invoice's DTE, issued in the sending transaction (docs/tax-documents.md) once it is
 * sent: a folio from the oldest CAF with folios left, the document built, stamped and signed,
 * stored with the invoice, its submission to SII queued. A merchant without the three pieces
 * issues none; an invoice in another currency than CLP gets `not_applicable`. A client with a
 * Chilean RUT gets a factura; one without (a consumer: no factura to 66666666-6) a boleta when the
 * merchant has CAFs of its type (docs/decisions.md §20), else `not_applicable`. A factura's receiver
 * without giro, address or comuna, a taxed document at another rate than IVA's, or no folio left,
 * refuses the send.
 */
export async function issueInvoiceDte(db: Queryable, deps: IssueDeps, merchantId: string, invoiceId: string): Promise<void> {
  const by = await signer(db, deps.secrets, merchantId);
  if (!by) return;
  const invoice = await getInvoiceWithItems(db, merchantId, invoiceId);
  if (!invoice) throw new Error(`invoice ${invoiceId} vanished while its tax document was issued`);
  if (invoice.currency !== 'CLP') return dteQ.markDteNotApplicable(db, invoiceId);
  if (!hasCompanyRut(invoice.client_rut)) {
    // A 41 documents a sale exempt of VAT, a 39 one whose prices include it (docs/tax-documents.md).
    const boleta: BoletaType = invoice.is_tax_exempt ? 41 : 39;
    if (!(await dteQ.issuesType(db, merchantId, boleta))) return dteQ.markDteNotApplicable(db, invoiceId);
    assertIvaRate(invoice);
    // No line limit here: the boleta schema takes 1000 Detalle lines, more than an invoice has.
    const { taken, issued } = await issueDocument(db, deps, by, { merchantId, invoiceId }, boleta, (folio, caf) =>
      issueBoleta({ ...by, caf, content: boletaDteContent(invoice, boleta, folio, by.issuer) }),
    );
    return storeInvoiceDte(db, by, invoiceId, merchantId, boleta, taken, issued, soleEnvioBoleta({ ...by, type: boleta }, issued));
  }
  assertReceiverComplete(invoice);
  assertIvaRate(invoice);
  if (invoice.items.length > MAX_DTE_LINES) {
    throw AppError.validation([{ path: 'items', message: `a DTE has at most ${MAX_DTE_LINES} lines; this invoice has ${invoice.items.length}` }]);
  }
  const type = invoice.is_tax_exempt ? 34 : 33;
  const rut = invoice.client_rut;
  const { taken, issued } = await issueDocument(db, deps, by, { merchantId, invoiceId }, type, (folio, caf) =>
    issueDte({ ...by, caf, content: invoiceDteContent({ ...invoice, client_rut: rut }, type, folio, by.issuer) }),
  );
  await storeInvoiceDte(db, by, invoiceId, merchantId, type, taken, issued, soleEnvio({ ...by, type }, issued));
}

/** The invoice's document as it keeps it: its sole envelope (EnvioDTE or EnvioBOLETA), timbre and resolution. */
async function storeInvoiceDte(
  db: Queryable,
  by: Signer,
  invoiceId: string,
  merchantId: string,
  type: dteQ.InvoiceDteType,
  taken: { caf_id: string; folio: number },
  issued: IssuedDte,
  envio: Buffer,
): Promise<void> {
  await dteQ.insertInvoiceDte(db, {
    invoice_id: invoiceId,
    merchant_id: merchantId,
    dte_type: type,
    folio: taken.folio,
    caf_id: taken.caf_id,
    ted: issued.ted,
    envio_xml: envio,
    resolucion_numero: by.issuer.resolucionNumero,
    resolucion_fecha: by.issuer.resolucionFecha,
    created_at: by.now,
  });
}

/**
 * Whom a note is addressed to: its document's receiver. A boleta's consumer is 66666666-6, which
 * the SII takes on no note: a boleta's note, and a note of that note, name the issuer itself as
 * their receiver, as the SII instructs (docs/decisions.md §20).
 */
function noteReceiver(invoice: InvoiceRow, target: NoteTarget, issuer: Signer['issuer']): Receiver {
  if (hasCompanyRut(target.receiverRut) && target.receiverRut !== issuer.rut) return invoiceReceiver(invoice, target.receiverRut);
  return {
    rut: issuer.rut,
    name: issuer.razonSocial,
    giro: issuer.giro,
    email: null,
    phone: null,
    address: issuer.direccion,
    comuna: issuer.comuna,
    ciudad: issuer.ciudad,
  };
}

/** A credit or debit note about to be issued, with its lines and totals (docs/tax-documents.md). */
export interface NoteForDte {
  id: string;
  type: 56 | 61;
  /** The SII's CodRef of its reference to the target: 1 anula, 2 corrige texto, 3 corrige montos. */
  code: 1 | 2 | 3;
  description: string;
  amounts: NoteAmounts;
  references: DocumentReference[];
}

/**
 * The note's DTE (61 or 56) in the caller's transaction: its own folio, the invoice's receiver,
 * the note's lines and totals, its references and last the one to `target` with its CodRef;
 * signed, stored, its submission queued. Returns the folio. No folio of the type left, or a
 * merchant that no longer has its DTE setup, refuses the note (the transaction rolls back).
 */
export async function issueNoteDte(db: Queryable, deps: IssueDeps, invoice: InvoiceRow, note: NoteForDte, target: NoteTarget): Promise<number> {
  const by = await signer(db, deps.secrets, invoice.merchant_id);
  if (!by) throw misconfigured(note.type, `The document has a DTE, and a note of it is one too (type ${note.type}): the DTE setup is incomplete.`);
  const a = note.amounts;
  const content = (folio: number): DteContent => ({
    type: note.type,
    folio,
    issueDate: siiTimestamp(by.now, by.issuer.timezone).slice(0, 10),
    grossLines: invoice.tax_inclusive && !invoice.is_tax_exempt,
    taxExempt: invoice.is_tax_exempt,
    issuer: by.issuer,
    receiver: noteReceiver(invoice, target, by.issuer),
    lines: dteLines(a.lines, invoice.is_tax_exempt),
    globalDiscount: dteGlobalDiscount({ percent: a.global_discount_percent, amount: a.global_discount_amount, description: a.global_discount_description }, invoice.is_tax_exempt),
    totals: { net: pesos(a.taxable_amount), exempt: pesos(a.exempt_amount), taxRate: invoice.tax_rate, tax: pesos(a.tax_total), total: pesos(a.total) },
    references: [
      ...note.references,
      { type: String(target.type), folio: String(target.folio), date: target.issueDate, code: note.code, reason: note.description },
    ],
  });
  const owner = { merchantId: invoice.merchant_id, invoiceId: invoice.id, noteId: note.id };
  const { taken, issued } = await issueDocument(db, deps, by, owner, note.type, (folio, caf) => issueDte({ ...by, caf, content: content(folio) }));
  await dteQ.setNoteDte(db, note.id, note.type, taken.folio, soleEnvio({ ...by, type: note.type }, issued));
  // The credit note that cancels the invoice is also its `credit_note`.
  if (note.type === 61 && note.code === 1) await dteQ.setCreditNote(db, invoice.id, taken.folio);
  return taken.folio;
}
