import { clock } from '../clock.js';
import type { Sql, Tx } from '../db/client.js';
import { claimFreshEmail, EmailInFlightError, findEmail, markSent, markSkipped, recordFailure, renewEmailClaim } from './queries.js';
import type { EmailRow } from '../email-queue/queries.js';
import { composeEmail, type ComposeDeps, type ComposedEmail } from './compose.js';
import type { Mailer } from './transport.js';
import { keepClaim, type ClaimKeeper } from '../queue/claim-keeper.js';
import { getInvoiceRow } from '../invoices/queries.js';
import { addressDomain, redactedMessage, type Log } from '../logger.js';

export interface EmailDeps extends ComposeDeps {
  sql: Sql;
  mailer: Mailer;
  /** Where a refused message is logged: the worker's logger; a run by hand may leave it out. */
  log?: Log;
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

/**
 * The e-mail job's lease (its queue's expireInSeconds, jobs/email-send.ts): declared here because
 * the claim and the last recording below are timed against it.
 */
export const EMAIL_LEASE_SECONDS = 60;
// Room left in the job's lease for the run to finish after its last try at recording a delivery.
const LEASE_MARGIN_SECONDS = 10;
const RECORD_RETRY_MS = 500;
// How long a run's claim on its row holds unless renewed. A live run renews it every
// CLAIM_RENEW_MS for as long as it talks SMTP (src/email/transport.ts's timeouts add up to 40 s);
// a worker that died stops renewing, so its claim has run out by the time pg-boss's heartbeat
// check (src/queue/boss.ts) hands the job to another run, and the row can be taken again.
const CLAIM_SECONDS = 10;
const CLAIM_RENEW_MS = 3_000;
if (CLAIM_SECONDS >= EMAIL_LEASE_SECONDS - LEASE_MARGIN_SECONDS) {
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
 * (`finalAttempt`) marks the row failed.
 *
 * No transaction is open and no connection held while SMTP talks (docs/decisions.md §10): a slow server
 * would otherwise keep a pool connection and a row lock for as long as it likes. The claim is
 * committed first (so a crash mid-send still shows the attempt), and the outcome is recorded
 * afterwards under that claim.
 */
export async function deliverRecordedEmail(deps: EmailDeps, emailId: string, finalAttempt: boolean): Promise<void> {
  // The run began moments after pg-boss leased the job: until then no other run can take it.
  const leaseEnds = Date.now() + (EMAIL_LEASE_SECONDS - LEASE_MARGIN_SECONDS) * 1000;
  const email = (await claimFreshEmail(deps.sql, emailId, CLAIM_SECONDS)) ?? (await deps.sql.begin((tx) => unclaimed(tx, emailId)));
  if (!email) return;
  const claimKept = keepClaim(email.sending_until!, (lease) => renewEmailClaim(deps.sql, email.id, lease, CLAIM_SECONDS), CLAIM_RENEW_MS);
  try {
    await send(deps, email, claimKept, finalAttempt, leaseEnds);
  } finally {
    await claimKept.stop();
  }
}

async function send(deps: EmailDeps, email: EmailRow, claimKept: ClaimKeeper<Date>, finalAttempt: boolean, leaseEnds: number): Promise<void> {
  let message: ComposedEmail;
  try {
    message = await composeEmail(deps, email);
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
function logRefusal(deps: EmailDeps, email: EmailRow, error: unknown, finalAttempt: boolean): void {
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
  deps: EmailDeps,
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
