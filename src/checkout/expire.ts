import type { Queryable, Sql } from '../db/client.js';
import { enqueue, queues } from '../queue/boss.js';
import { emitEvent } from '../events/emit.js';
import { expireCheckoutInvoice, type InvoiceDeps } from '../invoices/transitions.js';
import type { SecretBox } from '../secret-box.js';
import { statusProviders } from './providers/registry.js';
import { resolveByStatus } from './pay.js';
import { checkoutResource } from './resource.js';
import * as q from './queries.js';

/** The session's expiry job, due at its deadline, one per session; in the transaction that inserted it. */
export async function scheduleExpiry(db: Queryable, boss: InvoiceDeps['boss'], row: q.CheckoutRow): Promise<void> {
  await enqueue(boss, db, queues.checkoutExpire.name, { checkout_id: row.id }, { startAfter: row.expires_at, singletonKey: row.id });
}

/**
 * pending → expired once past expires_at, and `checkout.expired` emitted; the invoice the session
 * owns is cancelled (reason `checkout_expired`), its DTE by a credit note. False when the session
 * is not due or no longer pending; throws, to roll the caller's transaction back, when that
 * credit note cannot be issued.
 */
export async function expireCheckout(db: Queryable, id: string, now: Date, deps: InvoiceDeps): Promise<boolean> {
  await q.lockSessionInvoice(db, id);
  const s = await q.markExpired(db, id, now);
  if (!s) return false;
  await expireCheckoutInvoice(db, s.merchant_id, s.invoice_id, now, deps);
  await emitEvent(db, deps.boss, s.merchant_id, 'checkout.expired', { object: checkoutResource(s, deps.urls.publicBase, now) });
  return true;
}

/**
 * The expiry job of one session. pg-boss starts it by the database's clock; when that ran a
 * little ahead of ours the session is not due yet, and throwing has the job retried shortly. A
 * session held by a payment attempt is left to it the same way: retried, it is completed or
 * expired by then. An expiry that throws (no credit-note folio left for its invoice's DTE) rolls
 * back whole and is retried the same way; the sweep every 10 minutes tries it again too.
 */
export async function expireOnSchedule(sql: Sql, id: string, now: Date, deps: InvoiceDeps & { secrets?: SecretBox }): Promise<boolean> {
  const due = await q.sessionById(sql, id);
  // A gateway that can say how the session's payment stands is asked before the session expires.
  if (deps.secrets && due?.status === 'pending' && due.expires_at <= now && (await resolveByStatus(sql, due, { ...deps, secrets: deps.secrets }))) return false;
  if (await sql.begin((tx) => expireCheckout(tx, id, now, deps))) return true;
  const s = await q.sessionById(sql, id);
  if (s?.status !== 'pending') return false;
  if (s.expires_at > now) throw new Error(`checkout ${id} is not due until ${s.expires_at.toISOString()}`);
  throw new Error(`checkout ${id} is being paid; its outcome decides`);
}

// Batches keep each sweep transaction short; the loop runs until nothing is left.
const SWEEP_BATCH = 200;

/**
 * Every pending session past its deadline, for expiry jobs that were missed. One that cannot
 * expire (its merchant has no credit-note folio left) stays pending, and the sweep still expires
 * the others before it fails, so that the failure is retried and logged.
 */
export async function expireDueCheckouts(sql: Sql, now: Date, deps: InvoiceDeps & { secrets?: SecretBox }): Promise<number> {
  // Sessions whose gateway could not be asked stay pending for the next sweep: expiring them could drop a payment.
  const unresolved: string[] = [];
  if (deps.secrets) {
    for (const s of await q.dueOpenGatewaySessions(sql, now, statusProviders(), SWEEP_BATCH)) {
      await resolveByStatus(sql, s, { ...deps, secrets: deps.secrets }).catch(() => unresolved.push(s.id));
    }
  }
  const failed: { id: string; err: unknown }[] = [];
  let expired = 0;
  for (;;) {
    const batch = await sql.begin(async (tx) => {
      // Failed ones stay due: left out, so that they are not fetched again in this run.
      const ids = await q.dueSessions(tx, now, SWEEP_BATCH, [...unresolved, ...failed.map((f) => f.id)]);
      let n = 0;
      for (const id of ids) {
        // A savepoint each: one session's failure rolls back only its own expiry.
        const done = await tx.savepoint((sp) => expireCheckout(sp, id, now, deps)).catch((err: unknown) => {
          failed.push({ id, err });
          return false;
        });
        if (done) n++;
      }
      return { found: ids.length, expired: n };
    });
    expired += batch.expired;
    if (batch.found < SWEEP_BATCH) break;
  }
  if (failed.length > 0) {
    const { id, err } = failed[0]!;
    const reason = err instanceof Error ? err.message : String(err);
    throw new AggregateError(
      failed.map((f) => f.err),
      `${failed.length} due checkout session(s) could not expire (${expired} others did); checkout ${id}: ${reason}`,
    );
  }
  return expired;
}
