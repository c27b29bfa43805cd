import { z } from 'zod';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { clock } from '../src/clock.js';
import { getEmail, markSent, recordFailure, startAttempt, type EmailRow } from '../src/email/queries.js';
import { renderEmail, type EmailKind } from '../src/email/render.js';
import { formatDate, formatMoney } from '../src/format.js';
import { getInvoice } from '../src/invoices/queries.js';
import { getMerchant } from '../src/merchants/queries.js';
import { storeInvoicePdf } from '../src/pdf/store.js';
import type { WorkerDeps } from './worker.js';

// Old jobs outlive deploys: the payload is checked, never trusted.
const payload = z.object({ email_id: z.uuid() });
const reminderData = z.object({ custom_message: z.string().nullable().optional() });
const receiptData = z.object({ amount: z.string(), paid_at: z.string() });

/** The message for an e-mail row: rendered from the invoice as it is now, PDF attached where due. */
async function compose(deps: WorkerDeps, email: EmailRow): Promise<Mail.Options & { subject: string }> {
  if (email.kind === 'endpoint_disabled' || !email.invoice_id) throw new Error(`e-mail ${email.id}: no composer for ${email.kind}`);
  const [invoice, merchant] = await Promise.all([getInvoice(deps.sql, email.merchant_id, email.invoice_id), getMerchant(deps.sql, email.merchant_id)]);
  if (!invoice || !merchant) throw new Error(`e-mail ${email.id}: invoice or merchant is gone`);
  const locale = email.locale;
  const vars = {
    merchant: merchant.name,
    merchant_email: merchant.email,
    client: invoice.client_name,
    number: invoice.invoice_number ?? '',
    total: formatMoney(invoice.total, invoice.currency, locale),
    due_date: formatDate(invoice.due_date, locale),
    url: `${deps.config.publicBaseUrl}/i/${invoice.public_token}`,
  };
  let customMessage: string | null = null;
  if (email.kind === 'reminder') customMessage = reminderData.parse(email.data).custom_message ?? null;
  if (email.kind === 'receipt') {
    const r = receiptData.parse(email.data);
    Object.assign(vars, {
      amount: formatMoney(r.amount, invoice.currency, locale),
      paid_on: formatDate(r.paid_at.slice(0, 10), locale),
    });
  }
  const rendered = renderEmail(email.kind as EmailKind, locale, vars, customMessage);
  const attachments: Mail.Attachment[] = [];
  if (email.kind === 'invoice' || email.kind === 'reminder') {
    const pdf = await storeInvoicePdf(deps.sql, invoice.id, deps.config.publicBaseUrl);
    if (!pdf) throw new Error(`e-mail ${email.id}: invoice ${invoice.id} has no PDF`);
    attachments.push({ filename: `${invoice.invoice_number ?? invoice.id}.pdf`, content: pdf.content, contentType: 'application/pdf' });
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

/**
 * Delivers one recorded e-mail. A row already sent (a job run twice) sends nothing; a failure is
 * recorded and thrown so pg-boss retries with backoff; the last failure marks the row failed.
 */
export async function deliverEmail(deps: WorkerDeps, data: unknown, finalAttempt: boolean): Promise<void> {
  const { email_id } = payload.parse(data);
  const current = await getEmail(deps.sql, email_id);
  if (!current || current.status !== 'queued') return;
  const email = await startAttempt(deps.sql, email_id);
  if (!email) return;
  try {
    const message = await compose(deps, email);
    const providerId = await deps.mailer.deliver(message);
    await markSent(deps.sql, email.id, message.subject, providerId, clock.now());
  } catch (err) {
    await recordFailure(deps.sql, email.id, err instanceof Error ? err.message : String(err), finalAttempt);
    throw err;
  }
}
