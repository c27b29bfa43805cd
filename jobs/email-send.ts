import { z } from 'zod';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { clock } from '../src/clock.js';
import type { Tx } from '../src/db/client.js';
import { claimFreshEmail, EmailInFlightError, findEmail, markSent, markSkipped, recordFailure, renewEmailClaim, type EmailRow } from '../src/email/queries.js';
import { keepClaim, type ClaimKeeper } from '../src/queue/claim-keeper.js';
import { disabledReason, renderEmail, type EmailKind } from '../src/email/render.js';
import { API_PREFIX } from '../src/http/urls.js';
import { formatDate, formatMoney } from '../src/format.js';
import { getInvoice, getInvoiceRow } from '../src/invoices/queries.js';
import { getMerchant } from '../src/merchants/queries.js';
import { chargingMerchant } from '../src/checkout/credentials.js';
import { legalProfile } from '../src/merchants/legal-profile.js';
import { storeInvoicePdf } from '../src/pdf/store.js';
import { findInvoiceDte } from '../src/dte/queries.js';
import { dteFilename } from '../src/dte/document.js';
import { queues } from '../src/queue/boss.js';
import { addressDomain, redactedMessage } from '../src/logger.js';
import type { WorkerDeps } from './worker.js';

// Old jobs outlive deploys: the payload is checked, never trusted.
const payload = z.object({ email_id: z.uuid() });
const reminderData = z.object({ custom_message: z.string().nullable().optional() });
const receiptData = z.object({ amount: z.string(), paid_at: z.string() });

const disabledData = z.object({
  endpoint_id: z.string(),
  url: z.string(),
  reason: z.enum(['consecutive_failures', 'gone']),
  failures: z.number().int(),
});

type Composed = Mail.Options & { subject: string };

/** The notice to the merchant that one of their webhook endpoints was disabled (decisions §10). */
async function composeEndpointDisabled(deps: WorkerDeps, email: EmailRow): Promise<Composed> {
  const merchant = await getMerchant(deps.sql, email.merchant_id);
  if (!merchant) throw new Error(`e-mail ${email.id}: merchant is gone`);
  const d = disabledData.parse(email.data);
  const rendered = renderEmail('endpoint_disabled', email.locale, {
    merchant: merchant.name,
    merchant_email: merchant.email,
    url: `${deps.config.publicBaseUrl}${API_PREFIX}/docs#webhooks`,
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

/**
 * The message for an e-mail row: rendered from the invoice and its merchant as they are now (the
 * issuer's legal profile, whether it can take payments), PDF attached where due.
 */
async function compose(deps: WorkerDeps, email: EmailRow): Promise<Composed> {
  if (email.kind === 'endpoint_disabled') return composeEndpointDisabled(deps, email);
  if (!email.invoice_id) throw new Error(`e-mail ${email.id}: a ${email.kind} e-mail without its invoice`);
  const [invoice, merchant] = await Promise.all([getInvoice(deps.sql, email.merchant_id, email.invoice_id), chargingMerchant(deps.sql, email.merchant_id)]);
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
  const rendered = renderEmail(email.kind as EmailKind, locale, vars, {
    customMessage,
    // Decisions §11: the button offers to pay only where the hosted page can take the payment.
    canPay: merchant.can_charge,
    issuer: legalProfile(merchant),
  });
  const attachments: Mail.Attachment[] = [];
  if (email.kind === 'invoice' || email.kind === 'reminder') {
    const pdf = await storeInvoicePdf(deps.sql, invoice.id, deps.config.publicBaseUrl);
    if (!pdf) throw new Error(`e-mail ${email.id}: invoice ${invoice.id} has no PDF`);
    attachments.push({ filename: `${invoice.invoice_number ?? invoice.id}.pdf`, content: pdf.content, contentType: 'application/pdf' });
  }
  // Decisions §15: the invoice e-mail carries the tax document beside its printed representation.
  const dte = email.kind === 'invoice' ? await findInvoiceDte(deps.sql, invoice.id) : null;
  if (dte) attachments.push({ filename: dteFilename(dte.dte_type, dte.folio), content: dte.envio_xml, contentType: 'application/xml' });
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

/** Why the message must no longer go out, or null: nobody should be asked to pay what is settled. */
async function staleReason(tx: Tx, email: EmailRow): Promise<string | null> {
  if (!email.invoice_id || (email.kind !== 'reminder' && email.kind !== 'invoice')) return null;
  const invoice = await getInvoiceRow(tx, email.merchant_id, email.invoice_id);
  if (!invoice) return null;
  if (email.kind === 'reminder' && (invoice.status === 'paid' || invoice.status === 'cancelled')) {
    return `not sent: the invoice was ${invoice.status} before the reminder went out`;
  }
  if (email.kind === 'invoice' && invoice.status === 'cancelled') return 'not sent: the invoice was cancelled before its e-mail went out';
  return null;
}

// Room left in the job's lease for the run to finish after its last try at recording a delivery.
const LEASE_MARGIN_SECONDS = 10;
const RECORD_RETRY_MS = 500;
// How long a run's claim on its row holds unless renewed. A live run renews it every
// CLAIM_RENEW_MS for as long as it talks SMTP (src/email/transport.ts's timeouts add up to 40 s);
// a worker that died stops renewing, so its claim has run out by the time pg-boss's heartbeat
// check (src/queue/boss.ts) hands the job to another run, and the row can be taken again.
const CLAIM_SECONDS = 10;
const CLAIM_RENEW_MS = 3_000;
if (CLAIM_SECONDS >= queues.emailSend.expireInSeconds - LEASE_MARGIN_SECONDS) {
  throw new Error('the e-mail claim must run out before pg-boss hands the job to another run');
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Why claimFreshEmail claimed nothing: null when there is nothing to send (gone, final, or skipped
 * here as stale, by staleReason's rules, which claimFreshEmail applies in SQL);
 * EmailInFlightError when another run's claim is live.
 */
async function unclaimed(tx: Tx, id: string): Promise<null> {
  const row = await findEmail(tx, id);
  if (!row || row.status !== 'queued') return null;
  const stale = await staleReason(tx, row);
  if (stale && (await markSkipped(tx, id, stale))) return null;
  // Claimed by a run that is still live (a skip waits for it too), or final by now.
  const now = await findEmail(tx, id);
  if (now?.status === 'queued') throw new EmailInFlightError(id);
  return null;
}

/**
 * Delivers one recorded e-mail, once however many runs of its job overlap (pg-boss hands a job
 * whose lease ran out to another worker while the first may still be talking SMTP). A row already
 * final sends nothing; a stale one is skipped; a run that finds the row claimed by another live
 * run throws EmailInFlightError, so pg-boss retries after that run has finished and the retry
 * sends nothing. A failure is recorded and thrown so pg-boss retries with backoff; the last one
 * marks the row failed.
 *
 * No transaction is open and no connection held while SMTP talks (decisions §10): a slow server
 * would otherwise keep a pool connection and a row lock for as long as it likes. The claim is
 * committed first (so a crash mid-send still shows the attempt), and the outcome is recorded
 * afterwards under that claim.
 */
export async function deliverEmail(deps: WorkerDeps, data: unknown, finalAttempt: boolean): Promise<void> {
  // The run began moments after pg-boss leased the job: until then no other run can take it.
  const leaseEnds = Date.now() + (queues.emailSend.expireInSeconds - LEASE_MARGIN_SECONDS) * 1000;
  const { email_id } = payload.parse(data);
  const email = (await claimFreshEmail(deps.sql, email_id, CLAIM_SECONDS)) ?? (await deps.sql.begin((tx) => unclaimed(tx, email_id)));
  if (!email) return;
  const claimKept = keepClaim(email.sending_until!, (lease) => renewEmailClaim(deps.sql, email.id, lease, CLAIM_SECONDS), CLAIM_RENEW_MS);
  try {
    await send(deps, email, claimKept, finalAttempt, leaseEnds);
  } finally {
    await claimKept.stop();
  }
}

async function send(deps: WorkerDeps, email: EmailRow, claimKept: ClaimKeeper<Date>, finalAttempt: boolean, leaseEnds: number): Promise<void> {
  let message: Awaited<ReturnType<typeof compose>>;
  try {
    message = await compose(deps, email);
  } catch (err) {
    await recordFailure(deps.sql, email.id, await claimKept.stop(), errorText(err), finalAttempt);
    throw err;
  }

  let sent: { providerId: string; at: Date };
  try {
    sent = { providerId: await deps.mailer.deliver(message), at: clock.now() };
  } catch (error) {
    logRefusal(deps, email, error, finalAttempt);
    // Recorded, then thrown: pg-boss retries, and the row says why.
    await recordFailure(deps.sql, email.id, await claimKept.stop(), errorText(error), finalAttempt);
    throw error;
  }
  await recordSent(deps, email.id, await claimKept.stop(), message.subject, sent, leaseEnds);
}

/**
 * The SMTP server's refusal (or the outbox's write error), for whoever runs the worker: the e-mail
 * by its ids and the recipient only by domain; nodemailer's `responseCode` and `command` say what
 * the server answered to which step. The message itself is never logged.
 */
function logRefusal(deps: WorkerDeps, email: EmailRow, error: unknown, finalAttempt: boolean): void {
  const smtp = (error instanceof Error ? error : {}) as { code?: unknown; responseCode?: unknown; command?: unknown };
  deps.log?.warn(
    {
      email_id: email.id,
      kind: email.kind,
      merchant_id: email.merchant_id,
      invoice_id: email.invoice_id,
      recipient_domain: addressDomain(email.to_address),
      attempt: email.attempts,
      final: finalAttempt,
      smtp_code: smtp.responseCode ?? null,
      smtp_command: smtp.command ?? null,
      error_code: smtp.code ?? null,
      error: redactedMessage(error),
    },
    'e-mail delivery failed',
  );
}

/**
 * Marks the e-mail sent. The message is at the SMTP server: forgetting it would send it twice, so
 * a database that is away is retried until the job's lease is nearly over; no other run of the
 * job can start before then, so an outage shorter than that sends nothing twice.
 */
async function recordSent(
  deps: WorkerDeps,
  emailId: string,
  lease: Date,
  subject: string,
  sent: { providerId: string; at: Date },
  until: number,
): Promise<void> {
  for (;;) {
    let recorded: boolean;
    try {
      recorded = await markSent(deps.sql, emailId, lease, subject, sent.providerId, sent.at);
    } catch (err) {
      if (Date.now() + RECORD_RETRY_MS >= until) throw err;
      await new Promise((r) => setTimeout(r, RECORD_RETRY_MS));
      continue;
    }
    if (recorded) return;
    // Only when this run outlived its claim and another run claimed the row since.
    throw new Error(`e-mail ${emailId} was delivered, but another run claimed it after this run's claim ran out: it may arrive twice`);
  }
}
