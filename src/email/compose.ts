import { z } from 'zod';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Config } from '../config.js';
import type { Queryable } from '../db/client.js';
import { invoiceEmailSources } from './queries.js';
import type { EmailKind, EmailRow } from '../email-queue/queries.js';
import { disabledReason, renderEmail } from './render.js';
import { formatDate, formatMoney } from '../format.js';
import { getNote, noteDteXml } from '../invoices/note-queries.js';
import { getInvoiceWithItems } from '../invoices/queries.js';
import { publicInvoiceUrl } from '../invoices/public-url.js';
import { receiptData } from '../invoices/receipt.js';
import { getMerchant } from '../merchants/queries.js';
import { asChargingMerchant } from '../checkout/credentials.js';
import { legalProfile } from '../merchants/legal-profile.js';
import { issuedInvoicePdf, printNote } from '../pdf/store.js';
import { noteEmailData, noteKindOf } from '../invoices/note-email.js';
import { isBoletaType } from '../dte/boleta.js';
import { dteFilename } from '../dte/document.js';

export interface ComposeDeps {
  sql: Queryable;
  config: Pick<Config, 'EMAIL_FROM'>;
  /** Where the message's links point: the API's base (its docs) and the hosted pages' base. */
  urls: { apiBase: string; publicBase: string };
}

// A row's data was written by whatever version queued it: it is checked, never trusted.
const reminderData = z.object({ custom_message: z.string().nullable().optional() });

const disabledData = z.object({
  endpoint_id: z.string(),
  url: z.string(),
  reason: z.enum(['consecutive_failures', 'gone']),
  failures: z.number().int(),
});

export type ComposedEmail = Mail.Options & { subject: string };

/** The notice to the merchant that one of their webhook endpoints was disabled (docs/decisions.md §10). */
async function composeEndpointDisabled(deps: ComposeDeps, email: EmailRow): Promise<ComposedEmail> {
  const merchant = await getMerchant(deps.sql, email.merchant_id);
  if (!merchant) throw new Error(`e-mail ${email.id}: merchant is gone`);
  const d = disabledData.parse(email.data);
  const rendered = renderEmail('endpoint_disabled', email.locale, {
    merchant: merchant.name,
    merchant_email: merchant.email,
    url: `${deps.urls.apiBase}/docs#webhooks`,
    endpoint_url: d.url,
    endpoint_id: d.endpoint_id,
    reason: disabledReason(email.locale, d.reason, d.failures),
  });
  return {
    from: deps.config.EMAIL_FROM,
    to: { name: merchant.name, address: email.to_address },
    subject: rendered.subject,
    text: rendered.text,
    html: rendered.html,
    messageId: `<${email.id}@invoicing>`,
    headers: { 'X-Email-Kind': email.kind, 'X-Webhook-Endpoint-Id': d.endpoint_id },
  };
}

/** When a kind of e-mail reads the invoice's DTE and PDF: the ones it may attach. */
const DOCUMENTS_READ: Record<EmailKind, 'always' | 'checkout' | 'never'> = {
  invoice: 'always',
  reminder: 'always',
  receipt: 'checkout',
  credit_note: 'never',
  debit_note: 'never',
  endpoint_disabled: 'never',
};

/**
 * The message for an e-mail row: rendered from the invoice and its merchant as they are now (the
 * issuer's legal profile, whether it can take payments), PDF attached where due.
 */
export async function composeEmail(deps: ComposeDeps, email: EmailRow): Promise<ComposedEmail> {
  if (email.kind === 'endpoint_disabled') return composeEndpointDisabled(deps, email);
  if (!email.invoice_id) throw new Error(`e-mail ${email.id}: a ${email.kind} e-mail without its invoice`);
  // Each row read once, in two statements (three for a note's e-mail, which carries the note's
  // documents instead of the invoice's): the message and its attachments (the PDF, when not stored
  // yet, is rendered from these same rows).
  const noteKind = noteKindOf(email.kind);
  const [invoice, sources, note] = await Promise.all([
    getInvoiceWithItems(deps.sql, email.merchant_id, email.invoice_id),
    invoiceEmailSources(deps.sql, email.merchant_id, email.invoice_id, DOCUMENTS_READ[email.kind]),
    noteKind ? getNote(deps.sql, email.merchant_id, noteKind, noteEmailData.parse(email.data).note_id) : null,
  ]);
  if (!invoice || !sources) throw new Error(`e-mail ${email.id}: invoice or merchant is gone`);
  if (noteKind && !note) throw new Error(`e-mail ${email.id}: its ${noteKind} note is gone`);
  const merchant = asChargingMerchant(sources.provider_fields, sources.merchant);
  const { dte } = sources;
  // The invoice e-mail and reminders carry the invoice; a checkout's invoice is never e-mailed, so
  // its receipt, the one message the customer gets, carries its tax document (docs/decisions.md §20):
  // a receipt reads the DTE only for a checkout's invoice.
  const checkoutReceipt = email.kind === 'receipt' && dte !== null;
  const attachesPdf = email.kind === 'invoice' || email.kind === 'reminder' || checkoutReceipt;
  const locale = email.locale;
  const vars = {
    merchant: merchant.name,
    merchant_email: merchant.email,
    client: invoice.client_name,
    number: invoice.invoice_number ?? '',
    total: formatMoney(invoice.total, invoice.currency, locale),
    due_date: formatDate(invoice.due_date, locale),
    url: publicInvoiceUrl(deps.urls.publicBase, invoice.public_token),
  };
  if (note) Object.assign(vars, { note: note.number, total: formatMoney(note.total, note.currency, locale) });
  let customMessage: string | null = null;
  if (email.kind === 'reminder') customMessage = reminderData.parse(email.data).custom_message ?? null;
  if (email.kind === 'receipt') {
    const r = receiptData.parse(email.data);
    Object.assign(vars, {
      amount: formatMoney(r.amount, invoice.currency, locale),
      paid_on: formatDate(r.paid_at.slice(0, 10), locale),
    });
  }
  const rendered = renderEmail(email.kind, locale, vars, {
    customMessage,
    // docs/decisions.md §11: the button offers to pay only where the hosted page can take the payment.
    canPay: merchant.can_charge,
    issuer: legalProfile(merchant),
    document: isBoletaType(invoice.dte_type) ? 'boleta' : 'invoice',
  });
  const attachments: Mail.Attachment[] = [];
  if (attachesPdf) {
    const pdf = await issuedInvoicePdf(deps.sql, { invoice, merchant, dte }, sources.stored_pdf, deps.urls.publicBase);
    if (!pdf) throw new Error(`e-mail ${email.id}: invoice ${invoice.id} has no PDF`);
    attachments.push({ filename: `${invoice.invoice_number ?? invoice.id}.pdf`, content: pdf.content, contentType: 'application/pdf' });
  }
  // docs/decisions.md §15: the invoice e-mail carries the tax document beside its printed representation.
  if ((email.kind === 'invoice' || checkoutReceipt) && dte) attachments.push({ filename: dteFilename(dte.dte_type, dte.folio), content: dte.envio_xml, contentType: 'application/xml' });
  if (note) {
    const pdf = await printNote(deps.sql, { note, invoice, merchant });
    attachments.push({ filename: pdf.filename, content: pdf.content, contentType: 'application/pdf' });
    if (note.dte_type !== null && note.dte_folio !== null) {
      const xml = (await noteDteXml(deps.sql, email.merchant_id, note.kind, note.id))?.envio_xml;
      if (!xml) throw new Error(`e-mail ${email.id}: note ${note.id} has a DTE but no EnvioDTE`);
      attachments.push({ filename: dteFilename(note.dte_type, note.dte_folio), content: xml, contentType: 'application/xml' });
    }
  }
  return {
    from: deps.config.EMAIL_FROM,
    replyTo: { name: merchant.name, address: merchant.email },
    to: { name: invoice.client_name, address: email.to_address },
    subject: rendered.subject,
    text: rendered.text,
    html: rendered.html,
    attachments,
    // One Message-ID per e-mail row: a receiver can tell a retried delivery from a new message.
    messageId: `<${email.id}@invoicing>`,
    headers: { 'X-Email-Kind': email.kind, 'X-Invoice-Id': invoice.id },
  };
}
