import type { PgBoss } from 'pg-boss';
import type { Config } from '../config.js';
import type { Queryable, Sql } from '../db/client.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { enqueue, enqueueMany, queues } from '../queue/boss.js';
import { keepClaim } from '../queue/claim-keeper.js';
import { queueEmail } from '../email-queue/queue.js';
import { getMerchant } from '../merchants/queries.js';
import { signatureHeader } from './signature.js';
import { DELIVERY_TIMEOUT_MS, postWebhook, type PostResult } from './http-post.js';
import type { DeliveryErrorCategory } from './schemas.js';
import type { SecretBox } from '../secret-box.js';
import * as eq from './endpoint-queries.js';
import * as dq from './delivery-queries.js';
import * as atq from './attempt-queries.js';
import type { Log } from '../logger.js';

export interface DeliveryDeps {
  config: Config;
  boss: PgBoss;
  secrets: SecretBox;
  /**
   * Where a failed attempt is logged: the worker's logger. The web's test attempts have none;
   * their outcome is the answer to the merchant's request.
   */
  log?: Log;
}

// docs/decisions.md §10: waits after the first attempt; max_attempts is one more than its length.
export const DEFAULT_RETRY_SCHEDULE = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];
const JITTER = 0.1;
// A run's claim on a delivery holds this long unless renewed; a live run renews it every
// HOLD_RENEW_MS while it waits on the receiver (up to 15 s), so it is never raced, and a worker that
// died leaves a claim that has run out by the time pg-boss's heartbeat check hands its job on.
const HOLD_SECONDS = 10;
const HOLD_RENEW_MS = 3_000;

// Attempts to one endpoint in flight at once in one worker process (pg-boss local group
// concurrency): a slow or hanging receiver holds at most this many attempts, and so at most this
// many of a worker's 48 webhook fetch loops (jobs/webhook-deliver.ts).
// 8 held one busy receiver to what 8 round trips allow (bench:effects 1b: 16 took a burst to one
// endpoint from 369 to about 490 webhooks/s once fan-out stopped being the limit).
export const DELIVERIES_PER_ENDPOINT = 16;

/** Another live run holds the delivery's claim: the job retries once that run is done. */
export class DeliveryInFlightError extends Error {
  constructor(id: string, attempt: number) {
    super(`attempt ${attempt} of delivery ${id} is being made by another run; retry once it is done`);
    this.name = 'DeliveryInFlightError';
  }
}

export const USER_AGENT = 'Invoicing-Webhooks/1.0 (+https://github.com/invoicing)';

export function retrySchedule(config: Config): number[] {
  return config.WEBHOOK_RETRY_SCHEDULE ?? DEFAULT_RETRY_SCHEDULE;
}

export function maxAttempts(config: Config): number {
  return retrySchedule(config).length + 1;
}

/** Seconds before the attempt after `attempt`: the schedule ±10 %, never sooner than Retry-After. */
export function retryDelaySeconds(schedule: number[], attempt: number, retryAfter: number | null, random = Math.random): number {
  const base = schedule[Math.min(attempt - 1, schedule.length - 1)] ?? 0;
  const jittered = base * (1 - JITTER + 2 * JITTER * random());
  return Math.max(jittered, retryAfter ?? 0);
}

type DeliveryRef = { id: string; endpoint_id: string };

/**
 * The job of one attempt: once per (delivery, attempt). Attempts are grouped by endpoint, so a
 * slow receiver holds at most its group's share of the worker.
 */
function attemptJob(delivery: DeliveryRef, attempt: number) {
  return { data: { delivery_id: delivery.id, attempt }, singletonKey: `${delivery.id}:${attempt}`, group: { id: delivery.endpoint_id } };
}

/** Attempt number `attempt` of a delivery, due `afterSeconds` from now. */
export async function enqueueAttempt(db: Queryable, boss: PgBoss, delivery: DeliveryRef, attempt: number, afterSeconds: number): Promise<void> {
  const { data, ...options } = attemptJob(delivery, attempt);
  await enqueue(boss, db, queues.webhookDeliver.name, data, { ...options, ...(afterSeconds > 0 ? { startAfter: Math.ceil(afterSeconds) } : {}) });
}

/** The first attempts of new deliveries, due now, in one statement. */
export async function enqueueFirstAttempts(db: Queryable, boss: PgBoss, deliveries: DeliveryRef[]): Promise<void> {
  await enqueueMany(
    boss,
    db,
    queues.webhookDeliver.name,
    deliveries.map((d) => attemptJob(d, 1)),
  );
}

type Verdict = 'success' | 'gone' | 'failure';

function judge(result: PostResult): Verdict {
  if (result.status !== null && result.status >= 200 && result.status < 300) return 'success';
  if (result.status === 410) return 'gone';
  return 'failure';
}

/** What the API may tell of a failed attempt (docs/decisions.md §10): never the raw error. */
function failureCategory(result: PostResult): DeliveryErrorCategory {
  if (result.errorCategory) return result.errorCategory;
  if (result.status !== null && result.status >= 300 && result.status < 400) return 'redirect';
  return 'http_error';
}

function describeFailure(result: PostResult): string | null {
  if (result.error) return result.error;
  if (result.status !== null && result.status >= 300 && result.status < 400) return `HTTP ${result.status}: redirects are not followed`;
  if (result.status !== null && (result.status < 200 || result.status >= 300)) return `HTTP ${result.status}`;
  return null;
}

/** Attempt number `attempt` of delivery `id`, as one job asks for it. */
export type AttemptRef = { id: string; attempt: number };

/**
 * Makes attempt number `attempt` of a delivery and records it: see attemptClaimed. The claim is one
 * statement on the pool `db`.
 */
export async function attemptDelivery(
  db: Sql,
  transact: Transact,
  deps: DeliveryDeps,
  deliveryId: string,
  attempt: number,
  timeoutMs = DELIVERY_TIMEOUT_MS,
): Promise<dq.DeliveryRow | null> {
  const [outcome] = attemptDeliveries(db, transact, deps, [{ id: deliveryId, attempt }], timeoutMs);
  return outcome!;
}

/**
 * Makes attempts of several deliveries at once, as the jobs of a batch ask for them: they are
 * claimed in one statement, and each then goes its own way (one outcome per attempt, in order), so
 * a slow receiver delays only its own.
 */
export function attemptDeliveries(
  db: Sql,
  transact: Transact,
  deps: DeliveryDeps,
  refs: readonly AttemptRef[],
  timeoutMs = DELIVERY_TIMEOUT_MS,
): Promise<dq.DeliveryRow | null>[] {
  const now = clock.now();
  // A claim is for one attempt, and goes to one job: two jobs asking for the same one (which
  // singleton keys prevent) cannot both make it.
  const key = (id: string, attempt: number) => `${id}:${attempt}`;
  const claims = dq.claimDeliveries(db, refs, now, holdUntil()).then((rows) => new Map(rows.map((r) => [key(r.id, r.attempts + 1), r])));
  return refs.map(async (ref) => {
    const owned = await claims;
    const claimed = owned.get(key(ref.id, ref.attempt)) ?? null;
    owned.delete(key(ref.id, ref.attempt));
    return attemptClaimed(db, transact, deps, ref, claimed, now, timeoutMs);
  });
}

const holdUntil = () => new Date(clock.now().getTime() + HOLD_SECONDS * 1000);

/**
 * The attempt once claimed, and its record: a success in one statement, a failure with everything
 * it implies in one transaction (recordFailedAttempt). A stale or duplicate job (not claimed, and
 * the attempt no longer owed) does nothing; one whose delivery another live run holds throws.
 * docs/decisions.md §10: no connection nor transaction is held while the receiver is waited for; the
 * outcome gets a transaction of its own.
 */
async function attemptClaimed(
  db: Sql,
  transact: Transact,
  deps: DeliveryDeps,
  { id: deliveryId, attempt }: AttemptRef,
  claimed: dq.ClaimedDelivery | null,
  now: Date,
  timeoutMs: number,
): Promise<dq.DeliveryRow | null> {
  if (!claimed) {
    if (await dq.attemptOwed(db, deliveryId, attempt)) throw new DeliveryInFlightError(deliveryId, attempt);
    return null;
  }
  // A disabled endpoint gets nothing but what POST .../test sends it; a sandbox's deliveries are
  // is_test too, and stop like any other.
  if (!claimed.endpoint_enabled && !claimed.from_test_route) {
    await dq.failWithoutAttempt(db, deliveryId, 'endpoint disabled', now);
    return dq.getDelivery(db, deliveryId);
  }

  const secret = deps.secrets.open(claimed.secret_encrypted);
  const timestamp = Math.floor(clock.now().getTime() / 1000);
  const headers = {
    'Content-Type': 'application/json',
    'User-Agent': USER_AGENT,
    'X-Webhook-Id': claimed.event_id,
    'X-Webhook-Event': claimed.event_type,
    'X-Webhook-Signature': signatureHeader(secret, timestamp, claimed.payload),
  };
  const startedAt = clock.now();
  const claimKept = keepClaim(true, async () => ((await dq.renewDeliveryClaim(db, deliveryId, attempt, holdUntil())) ? true : null), HOLD_RENEW_MS);
  let result: PostResult;
  try {
    result = await postWebhook(claimed.url, claimed.payload, headers, deps.config.WEBHOOK_ALLOW_PRIVATE_TARGETS, startedAt, timeoutMs);
  } finally {
    await claimKept.stop();
  }
  const verdict = judge(result);
  const kept: atq.NewAttempt = {
    id: newId(),
    delivery_id: deliveryId,
    attempt_number: attempt,
    started_at: startedAt,
    duration_ms: result.durationMs,
    request_url: claimed.url,
    request_headers: headers,
    response_status: result.status,
    response_body: result.body,
    error: describeFailure(result),
    error_category: verdict === 'success' ? null : failureCategory(result),
  };
  // Sandbox endpoints and test deliveries never count failures nor get disabled (docs/decisions.md §10).
  const counts = !claimed.is_test && !claimed.endpoint_sandbox;
  if (verdict === 'success') return atq.recordSuccessfulAttempt(db, kept, { id: claimed.endpoint_id, counts }, clock.now());
  logFailedAttempt(deps.log, claimed, kept);
  return recordFailedAttempt(transact, deps, claimed, counts, verdict, kept, result.retryAfterSeconds);
}

/**
 * The receiver's failure, for whoever runs the worker: ids to find the delivery and its endpoint,
 * and only the URL's host (its path or query may carry the merchant's own tokens). Neither the
 * signed headers nor either body is logged.
 */
function logFailedAttempt(log: Log | undefined, d: dq.ClaimedDelivery, kept: atq.NewAttempt): void {
  log?.warn(
    {
      delivery_id: d.id,
      endpoint_id: d.endpoint_id,
      merchant_id: d.merchant_id,
      event_type: d.event_type,
      attempt: kept.attempt_number,
      max_attempts: d.max_attempts,
      host: URL.parse(d.url)?.host ?? null,
      status: kept.response_status,
      error_category: kept.error_category,
      error: kept.error,
      duration_ms: kept.duration_ms,
    },
    'webhook attempt failed',
  );
}

/** Runs the recording of a failed attempt in a new transaction, begun once the attempt is over. */
export type Transact = <T>(fn: (tx: Queryable) => Promise<T>) => Promise<T>;

export function transactOn(sql: Sql): Transact {
  return (fn) => sql.begin(fn) as never;
}

/**
 * A failed attempt and everything it implies, in one transaction: the delivery's new state, the
 * endpoint's failure streak, disabling it (its waiting deliveries stop, the merchant is e-mailed)
 * and the job of the next attempt.
 */
async function recordFailedAttempt(
  transact: Transact,
  deps: DeliveryDeps,
  d: dq.ClaimedDelivery,
  counts: boolean,
  verdict: Exclude<Verdict, 'success'>,
  kept: atq.NewAttempt,
  retryAfterSeconds: number | null,
): Promise<dq.DeliveryRow | null> {
  const attempt = kept.attempt_number;
  const write = async (tx: Queryable): Promise<dq.DeliveryRow | null> => {
    const now = clock.now();
    let disabled: eq.EndpointRow | null = null;
    if (counts) {
      // A 410 is a failed attempt like any (consecutive_failures counts it) that also ends the endpoint.
      const ep = await eq.recordEndpointFailure(tx, d.endpoint_id, now);
      const oldEnough = ep?.failing_since && now.getTime() - ep.failing_since.getTime() >= deps.config.WEBHOOK_DISABLE_AFTER_SECONDS * 1000;
      if (verdict === 'gone') disabled = await eq.disableEndpoint(tx, d.endpoint_id, 'gone', now);
      else if (ep && ep.enabled && ep.consecutive_failures >= deps.config.WEBHOOK_DISABLE_AFTER_FAILURES && oldEnough) {
        disabled = await eq.disableEndpoint(tx, d.endpoint_id, 'consecutive_failures', now);
      }
    }

    const endpointStopped = verdict === 'gone' && counts;
    const retry = !endpointStopped && !disabled && attempt < d.max_attempts;
    const delay = retry ? retryDelaySeconds(retrySchedule(deps.config), attempt, retryAfterSeconds) : 0;
    const row = await atq.recordAttempt(
      tx,
      d.id,
      attempt,
      {
        status: retry ? 'retrying' : 'failed',
        next_retry_at: retry ? new Date(now.getTime() + delay * 1000) : null,
        last_response_status: kept.response_status,
        last_error: kept.error ?? (verdict === 'gone' ? 'HTTP 410: endpoint gone' : null),
        last_error_category: kept.error_category,
        completed_at: retry ? null : now,
      },
      now,
    );
    // Another run recorded this attempt first: write nothing.
    if (!row) throw new AlreadyRecorded();
    await atq.insertAttempt(tx, kept);
    if (retry) await enqueueAttempt(tx, deps.boss, d, attempt + 1, delay);
    if (disabled) await announceDisabled(tx, deps, disabled, now);
    return row;
  };
  try {
    return await transact(write);
  } catch (err) {
    if (err instanceof AlreadyRecorded) return null;
    throw err;
  }
}

class AlreadyRecorded extends Error {}

/** Waiting retries stop and the merchant learns why their endpoint went quiet. */
async function announceDisabled(tx: Queryable, deps: DeliveryDeps, ep: eq.EndpointRow, now: Date): Promise<void> {
  const reason = ep.disabled_reason === 'gone' ? 'the endpoint answered 410 Gone' : `${ep.consecutive_failures} consecutive failed attempts`;
  await dq.stopPendingDeliveries(tx, ep.id, `endpoint disabled: ${reason}`, now);
  const merchant = await getMerchant(tx, ep.merchant_id);
  if (!merchant) return;
  await queueEmail(tx, deps.boss, {
    merchant_id: ep.merchant_id,
    invoice_id: null,
    kind: 'endpoint_disabled',
    dedupe_key: `endpoint_disabled:${ep.id}:${now.toISOString()}`,
    to_address: merchant.email,
    locale: merchant.default_locale,
    data: { endpoint_id: ep.id, url: ep.url, reason: ep.disabled_reason, failures: ep.consecutive_failures },
  });
}
