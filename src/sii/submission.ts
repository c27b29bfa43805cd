// Submitting documents to the SII (docs/decisions.md §15), as jobs after the commit that issued them:
// a merchant's documents ready together go in one envelope, uploaded with a token from a signed
// seed; the upload's intent is committed before the call and its track id after it, in a new
// transaction; then the upload's state is polled until SII's answer is final. No call to SII
// holds a transaction. Facturas and notes go as an EnvioDTE to the SOAP upload, boletas as an
// EnvioBOLETA to the boleta REST service (docs/decisions.md §20): each upload goes through one channel.
import type { PgBoss } from 'pg-boss';
import type { Queryable } from '../db/client.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { emitEvent } from '../events/emit.js';
import { getInvoice } from '../invoices/read.js';
import type { Urls } from '../invoices/resource.js';
import { enqueue, queues } from '../queue/boss.js';
import { boletaOutcome, boletaUploadStatus } from './boleta-client.js';
import { siiTimestamp } from '../dte/issue.js';
import { documentState, SiiError, SiiFileRefused, SiiTokenError, uploadState, type UploadState } from './sii-client.js';
import { queueSubmission } from '../dte/service.js';
import * as q from './queries.js';
import { BOLETA, boletaTokens, DOCUMENT_RECEIVED, sender, SOAP, soapTokens, token, withToken, type Channel, type Claimed, type Sender, type SenderDeps } from './channels.js';
import type { DocumentRow } from '../dte/queries.js';

export interface SubmissionDeps extends SenderDeps {
  boss: PgBoss;
  urls: Urls;
}

// How long a worker holds an upload while it calls SII: longer than the calls' timeouts.
const LEASE_MS = 120_000;
// An upload whose answer was lost, and whose documents SII does not know: SII may still be
// processing it, so it is uploaded again only once this much time has passed since.
const UPLOAD_SETTLE_MS = 15 * 60_000;
// Polls of an upload's state, in seconds after the upload and then between polls.
const POLL_SCHEDULE = [3, 10, 30, 60, 120, 300, 600, 1800, 3600];

// QueryEstUp's states (LibreDTE's reading of SII's manual): EPR processed (counts per type say the
// outcome), RLV/RPR accepted with objections, these rejected, and the rest still under way.
const UPLOAD_REJECTED = new Set(['RSC', 'RCH', 'RPT', 'RFR', 'VOF', 'RCT']);
const UPLOAD_OBJECTIONS = new Set(['RLV', 'RPR']);
const UPLOAD_UNDER_WAY = new Set(['REC', 'SOK', 'FOK', 'PDR', 'PRD', 'CRT', '-11', '-8', '004', '005', '007', '106', '107']);

/**
 * Through each channel, every upload of the merchant whose answer is owed is settled first; then
 * its waiting documents go up, several to an envelope. A failure throws, once the other channel
 * had its turn (one of SII's services down holds back none of the other's documents), and the
 * job's retry picks up where this left.
 */
export async function submitMerchant(deps: SubmissionDeps, merchantId: string): Promise<void> {
  const s = await sender(deps, merchantId);
  const failures: unknown[] = [];
  for (const channel of [SOAP, BOLETA]) {
    try {
      await settleLostUploads(deps, s, channel);
      for (;;) {
        const claimed = await claim(deps, s, channel);
        if (!claimed) break;
        await upload(deps, s, channel, claimed);
      }
    } catch (err) {
      failures.push(err);
    }
  }
  if (failures.length) throw failures[0];
}

async function claim(deps: SubmissionDeps, s: Sender, channel: Channel): Promise<Claimed | null> {
  return deps.sql.begin(async (tx) => {
    const docs = await q.lockPendingDocuments(tx, s.merchantId, channel.name, channel.perEnvelope);
    if (docs.length === 0) return null;
    const now = clock.now();
    // Each DTE keeps its own signature; the set is signed again as one.
    const envio = channel.envelope(
      {
        rutEmisor: s.rut,
        rutEnvia: s.identity.subjectRut,
        resolucionFecha: s.resolucionFecha,
        resolucionNumero: s.resolucionNumero,
        signedAt: siiTimestamp(now, s.timezone),
      },
      docs.map((d) => ({ type: d.dte_type, xml: d.signed_dte })),
      s.identity,
    );
    const id = newId();
    const documentIds = docs.map((d) => d.id);
    await q.insertSubmission(tx, { id, merchant_id: s.merchantId, channel: channel.name, envio_xml: envio, document_ids: documentIds, now, leased_until: new Date(now.getTime() + LEASE_MS) });
    for (const d of documentIds) await q.mirrorOnInvoice(tx, d, now);
    return { id, envio, documentIds };
  });
}

async function upload(deps: SubmissionDeps, s: Sender, channel: Channel, claimed: Claimed): Promise<void> {
  const tokens = channel.tokens(s);
  const send = (t: string) => channel.upload(s, t, claimed);
  let trackId: string;
  try {
    // A failure getting the token is before the upload: nothing went up.
    const first = await token(tokens).catch((err: unknown) => {
      throw new SiiError(err instanceof Error ? err.message : String(err), false);
    });
    trackId = await send(first).catch(async (err: unknown) => {
      if (!(err instanceof SiiTokenError)) throw err;
      const renewed = await token(tokens, true).catch((e: unknown) => {
        throw new SiiError(e instanceof Error ? e.message : String(e), false);
      });
      return send(renewed);
    });
  } catch (err) {
    if (err instanceof SiiFileRefused) {
      // Refused for what the documents are: rejected with SII's reason, as an envelope refused after
      // its upload is (docs/decisions.md §15), rather than sent again forever ahead of later ones.
      await deps.sql.begin(async (tx) => {
        const now = clock.now();
        for (const d of await q.submissionDocuments(tx, claimed.id)) await finish(tx, deps, d, 'rejected', err.message, now);
        await q.closeSubmission(tx, claimed.id, 'done', `STATUS ${err.uploadStatus}`, now);
      });
      return;
    }
    if (err instanceof SiiError && !err.delivered) {
      // SII took nothing: the documents wait for the next attempt, in a new envelope.
      await deps.sql.begin((tx) => q.abandonSubmission(tx, claimed.id, clock.now()));
    } else {
      // The answer was lost: the retry asks SII about these documents before anything goes up again.
      await q.releaseSubmission(deps.sql, claimed.id);
    }
    throw err;
  }
  await deps.sql.begin(async (tx) => {
    const now = clock.now();
    if (!(await q.markSubmissionSent(tx, claimed.id, trackId, now))) return;
    // Still the claimed ones: only settling a lost upload takes documents off it, and closes it as it does.
    for (const d of claimed.documentIds) await q.mirrorOnInvoice(tx, d, now);
    await queuePoll(tx, deps.boss, claimed.id, 0);
  });
}

async function queuePoll(db: Queryable, boss: PgBoss, submissionId: string, poll: number): Promise<void> {
  const delay = POLL_SCHEDULE[Math.min(poll, POLL_SCHEDULE.length - 1)]!;
  await enqueue(boss, db, queues.dteStatus.name, { submission_id: submissionId, poll }, { startAfter: delay });
}

/**
 * An upload whose answer never came: SII is asked about each of its documents. Those it has are
 * accepted (they were received; only the track id is unknown); those it does not know go back
 * to waiting once the upload is old enough that SII would have processed it.
 */
async function settleLostUploads(deps: SubmissionDeps, s: Sender, channel: Channel): Promise<void> {
  for (;;) {
    const now = clock.now();
    const sub = await q.leaseOpenSubmission(deps.sql, s.merchantId, channel.name, now, new Date(now.getTime() + LEASE_MS));
    if (!sub) return;
    try {
      const docs = (await q.submissionDocuments(deps.sql, sub.id)).filter((d) => d.status === 'uploading');
      const states: { doc: DocumentRow; received: boolean }[] = [];
      for (const d of docs) states.push({ doc: d, received: await withToken(channel.tokens(s), (token) => channel.received(s, token, d)) });
      const unknown = states.filter((x) => !x.received).map((x) => x.doc.id);
      const settled = unknown.length === 0 || clock.now().getTime() - sub.uploaded_at.getTime() >= UPLOAD_SETTLE_MS;
      await deps.sql.begin(async (tx) => {
        const at = clock.now();
        for (const x of states.filter((x) => x.received)) await finish(tx, deps, x.doc, 'accepted', null, at);
        if (settled) {
          await q.returnToPending(tx, unknown, at);
          for (const id of unknown) await q.mirrorOnInvoice(tx, id, at);
          await q.closeSubmission(tx, sub.id, unknown.length === 0 ? 'done' : 'abandoned', null, at);
        }
      });
      if (!settled) throw new SiiError(`SII does not know ${unknown.length} document(s) of an upload whose answer was lost; asking again later`, true);
    } finally {
      await q.releaseSubmission(deps.sql, sub.id);
    }
  }
}

/** One document's final state, on the invoice too, with its event (once: the update is guarded). */
async function finish(
  tx: Queryable,
  deps: SubmissionDeps,
  doc: DocumentRow,
  status: 'accepted' | 'accepted_with_objections' | 'rejected',
  reason: string | null,
  now: Date,
): Promise<void> {
  const done = await q.finishDocument(tx, doc.id, status, reason, now);
  if (!done) return;
  await q.mirrorOnInvoice(tx, doc.id, now);
  // A note's DTE shows on the note (and a cancelling credit note's on its invoice's credit_note) without an event of its own.
  if (doc.dte_type === 61 || doc.dte_type === 56) return;
  await emitEvent(tx, deps.boss, doc.merchant_id, status === 'rejected' ? 'invoice.dte_rejected' : 'invoice.dte_accepted', {
    object: await getInvoice(tx, doc.merchant_id, doc.invoice_id, deps.urls),
  });
}

type Outcome = { status: 'accepted' | 'accepted_with_objections' | 'rejected'; reason: string | null } | 'ask';

/** What the counts of a processed upload (EPR) say of its documents of one type; `ask` when they differ. */
function outcomeOfType(state: UploadState, type: number): Outcome {
  const c = state.counts.find((x) => x.type === type);
  if (!c || c.informed === 0) throw new SiiError(`SII's processed upload reports no documents of type ${type}`, true);
  if (c.rejected === 0 && c.objections === 0) return { status: 'accepted', reason: null };
  const summary = `EPR ${state.glosa}: ${c.accepted} accepted, ${c.objections} with objections, ${c.rejected} rejected of ${c.informed}`.replace(/\s+/g, ' ');
  if (c.rejected === c.informed) return { status: 'rejected', reason: summary };
  if (c.objections === c.informed) return { status: 'accepted_with_objections', reason: summary };
  return 'ask';
}

/**
 * Polls an upload's state once: a final answer is recorded on its documents; one under way
 * schedules the next poll, further apart each time; SII down or unreadable throws for a retry.
 */
export async function pollSubmission(deps: SubmissionDeps, submissionId: string, poll: number): Promise<void> {
  const sub = await q.getSubmission(deps.sql, submissionId);
  if (!sub || sub.status !== 'sent' || !sub.track_id) return;
  const s = await sender(deps, sub.merchant_id);
  if (sub.channel === 'boleta') return pollBoletas(deps, s, sub, poll);
  const state = await withToken(soapTokens(s), (token) => uploadState(s.base, token, s.rut, sub.track_id!));
  const docs = (await q.submissionDocuments(deps.sql, sub.id)).filter((d) => d.status === 'sent');
  const reason = `${state.code} ${state.glosa}`.trim();
  const outcomes = new Map<string, Exclude<Outcome, 'ask'>>();
  if (UPLOAD_REJECTED.has(state.code)) for (const d of docs) outcomes.set(d.id, { status: 'rejected', reason });
  else if (UPLOAD_OBJECTIONS.has(state.code)) for (const d of docs) outcomes.set(d.id, { status: 'accepted_with_objections', reason });
  else if (state.code === 'EPR') {
    for (const d of docs) {
      const o = outcomeOfType(state, d.dte_type);
      // Some documents of the type were rejected and some not: SII is asked about each.
      if (o === 'ask') {
        const one = await withToken(soapTokens(s), (token) =>
          documentState(s.base, token, { querier: s.identity.subjectRut, company: s.rut, receiver: d.receiver_rut, type: d.dte_type, folio: d.folio, issueDate: d.issue_date, total: d.total }),
        );
        outcomes.set(d.id, DOCUMENT_RECEIVED.has(one.code) ? { status: 'accepted', reason: null } : { status: 'rejected', reason: `${reason}; ${one.code} ${one.glosa}`.trim() });
      } else outcomes.set(d.id, o);
    }
  } else if (UPLOAD_UNDER_WAY.has(state.code)) {
    await queuePoll(deps.sql, deps.boss, sub.id, poll + 1);
    return;
  } else throw new SiiError(`SII answered the upload's state with an unknown code: ${reason}`, true);
  await deps.sql.begin(async (tx) => {
    const now = clock.now();
    for (const d of docs) {
      const o = outcomes.get(d.id)!;
      await finish(tx, deps, d, o.status, o.reason, now);
    }
    await q.closeSubmission(tx, sub.id, 'done', reason, now);
  });
}

/**
 * Polls a boleta upload's state once (docs/decisions.md §20): processed, each boleta takes its own outcome
 * (SII lists the rejected and the objected to, with its reasons); an envelope refused whole
 * rejects them all; still processing schedules the next poll.
 */
async function pollBoletas(deps: SubmissionDeps, s: Sender, sub: q.SubmissionRow, poll: number): Promise<void> {
  const status = await withToken(boletaTokens(s), (token) => boletaUploadStatus(s.boleta.api, token, s.rut, sub.track_id!));
  if (status.kind === 'processing') return queuePoll(deps.sql, deps.boss, sub.id, poll + 1);
  const docs = (await q.submissionDocuments(deps.sql, sub.id)).filter((d) => d.status === 'sent');
  await deps.sql.begin(async (tx) => {
    const now = clock.now();
    for (const d of docs) {
      if (status.kind === 'envelope_rejected') {
        await finish(tx, deps, d, 'rejected', `${status.estado} ${status.glosa}`, now);
        continue;
      }
      const listed = status.details.find((x) => x.tipo === d.dte_type && x.folio === d.folio);
      const reason = listed ? [`${listed.estado} ${listed.descripcion}`.trim(), ...listed.errors].join('; ') : null;
      await finish(tx, deps, d, boletaOutcome(status, d.dte_type, d.folio), reason, now);
    }
    await q.closeSubmission(tx, sub.id, 'done', status.estado, now);
  });
}

// A sent upload with no answer for this long has lost its poll (retries spent): the sweep polls it.
const STALE_POLL_MS = 6 * 3600_000;

/** Everything still owed to SII: the sweep that catches a submission or a poll given up on. */
export async function sweepSubmissions(deps: SubmissionDeps): Promise<void> {
  for (const merchantId of await q.merchantsToSubmit(deps.sql)) await queueSubmission(deps.sql, deps.boss, merchantId);
  const before = new Date(clock.now().getTime() - STALE_POLL_MS);
  for (const id of await q.staleSentSubmissions(deps.sql, before)) await queuePoll(deps.sql, deps.boss, id, POLL_SCHEDULE.length - 1);
}
