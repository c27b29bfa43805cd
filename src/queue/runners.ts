import type { PgBoss, JobWithMetadata, Queue } from 'pg-boss';
import { HEARTBEAT_REFRESH_SECONDS, wakeIdleLoop, type QueueName } from './boss.js';
import { redactedMessage, type Log } from '../logger.js';

/**
 * How many jobs of a queue one worker runs at once (pg-boss's localConcurrency), how many of one
 * group of them (perGroup: jobs are grouped by merchant, webhook attempts by endpoint), and how
 * many one fetch takes. A group's cap below the worker's total is what keeps one merchant's burst
 * from starving another's, and one slow or hanging receiver (15 s timeouts) from occupying every
 * webhook slot. The cap is kept in the worker's memory, exactly: pg-boss's database-wide
 * groupConcurrency lets concurrent fetches overshoot it (each counts the group's active jobs as
 * its own snapshot sees them), and with 48 fetch loops one endpoint held twice its share.
 */
export interface Concurrency {
  localConcurrency: number;
  perGroup: number;
  batchSize: number;
}

/** What a job file declares besides how it runs. */
interface Declared {
  /** The queue's name and pg-boss options, which the release step applies (migrateQueues). */
  queue: Queue & { name: QueueName };
  /** A cron expression (UTC) on which the worker's pg-boss enqueues a job, when the queue has one. */
  schedule?: string;
}

/**
 * The runner kinds, one per way a queue's work must be shared out:
 * - `each`: an effect whose jobs are independent and may be many at once (an e-mail, a DTE
 *   upload): each job runs alone, concurrently, under the queue's per-group cap.
 * - `eachOf`: like `each`, but the handler is given the fetched batch, to claim it in one statement,
 *   and answers one outcome per job (webhook attempts).
 * - `batch`: jobs whose work is cheaper as one transaction (fan-out): a batch runs as one unit, and
 *   when it fails each of its jobs is run alone so one bad job fails by itself.
 * - `scheduled`: sweeps and purges, mostly enqueued by `schedule`: one job at a time per worker,
 *   polled, with no groups or NOTIFY wake-up.
 */
type Runs<D> =
  | { runner: 'each'; concurrency: Concurrency; run: (deps: D, job: JobWithMetadata<object>) => Promise<unknown> }
  | { runner: 'eachOf'; concurrency: Concurrency; start: (deps: D, jobs: JobWithMetadata<object>[]) => Promise<unknown>[] }
  | { runner: 'batch'; concurrency: Concurrency; run: (deps: D, data: object[]) => Promise<unknown> }
  | { runner: 'scheduled'; run: (deps: D, job: JobWithMetadata<object>) => Promise<unknown> };

export type RunnerKind = Runs<unknown>['runner'];
export type JobDefinition<D, K extends RunnerKind = RunnerKind> = Declared & Extract<Runs<D>, { runner: K }>;

/** One job file's declaration (jobs/); the worker registers it through jobs/index.ts. */
export function defineJob<D, K extends RunnerKind>(job: JobDefinition<D, K>): JobDefinition<D, K> {
  return job;
}

/** pg-boss has no retry left for this run of the job. */
export function isFinalAttempt(job: JobWithMetadata): boolean {
  return job.retryCount >= job.retryLimit;
}

/**
 * A job whose handler threw. pg-boss retries it (the same job id, retryCount one higher) until
 * retryLimit, so a warning while retries are left, an error when the job stays failed.
 */
function logJobFailure(log: Log, queue: string, job: JobWithMetadata, err: unknown): void {
  const final = isFinalAttempt(job);
  log[final ? 'error' : 'warn'](
    { queue, job_id: job.id, retry_count: job.retryCount, retry_limit: job.retryLimit, error: redactedMessage(err) },
    final ? 'job failed, no retries left' : 'job failed, to be retried',
  );
}

/**
 * A worker that just finished a job fetches again at once instead of waiting for its next poll,
 * for as long as fetches find work: pg-boss only bursts on full batches, and a batch cut short by
 * a group's cap would otherwise send the worker to sleep with work still waiting.
 */
function keepFetching(boss: PgBoss, queue: string): void {
  for (const w of boss.getWipData()) if (w.name === queue && w.count > 0) boss.notifyWorker(w.id);
}

// How long a batch's ended job keeps its group slot while the rest of the batch still runs.
// Far longer than a batch of quick jobs takes, far shorter than a hanging receiver's 15 s.
const SLOT_GRACE_MS = 500;

/**
 * A fetched job as patches/pg-boss+12.38.0.patch hands it over (assertPatched checks at start-up):
 * a job of a group has `releaseGroupSlot`, which gives the group's local slot back, once, so a
 * batch's fast jobs free their groups as they end instead of when the batch's slowest job does.
 */
type SlottedJob<T extends object> = JobWithMetadata<T> & { releaseGroupSlot?: () => void };

/** Called as each job of a batch ends, to give its group slot back (see workJobs). */
type Release<T extends object> = (job: SlottedJob<T>) => void;

/**
 * Runs a queue's jobs with pg-boss's concurrency; `settle` runs a fetched batch and says how each
 * job of it went, and each job is settled on its own (perJobResults): one job that throws is
 * retried without its batch neighbours. pg-boss completes the batch's jobs in one statement once
 * the last of them ends.
 */
async function workJobs<T extends object>(
  boss: PgBoss,
  log: Log,
  queue: string,
  shape: Concurrency,
  pollingSeconds: number,
  settle: (jobs: SlottedJob<T>[], release: Release<T>) => Promise<PromiseSettledResult<unknown>[]>,
): Promise<void> {
  const options = {
    localConcurrency: shape.localConcurrency,
    localGroupConcurrency: shape.perGroup,
    batchSize: shape.batchSize,
    pollingIntervalSeconds: pollingSeconds,
    notifyPollingIntervalSeconds: pollingSeconds,
    includeMetadata: true as const,
    perJobResults: true as const,
    burstWhenBatchFull: shape.batchSize > 1,
    heartbeatRefreshSeconds: HEARTBEAT_REFRESH_SECONDS,
  };
  // Jobs running per group, as pg-boss's local cap counts them.
  const running = new Map<string, number>();
  const groupsOf = (jobs: JobWithMetadata<T>[]) => jobs.flatMap((job) => job.groupId ?? []);
  await boss.work<T, unknown, typeof options>(queue, options, async (jobs: SlottedJob<T>[]) => {
    const groups = groupsOf(jobs);
    for (const g of groups) running.set(g, (running.get(g) ?? 0) + 1);
    const holding = new Set(jobs.filter((job) => job.groupId));
    const release: Release<T> = (job) => {
      if (!holding.delete(job)) return;
      job.releaseGroupSlot?.();
      const n = running.get(job.groupId!)! - 1;
      if (n > 0) running.set(job.groupId!, n);
      else running.delete(job.groupId!);
      // Fetches passed the group's waiting jobs by while it was at its cap; once a batch of them
      // fits again, an idle loop takes it (fewer would be fetched whole and the rest put back).
      if (n === shape.perGroup - Math.min(shape.batchSize, shape.perGroup)) wakeIdleLoop(boss, queue);
    };
    // A batch's jobs give their slots back together when it ends, and its loop fetches the next
    // batch: freeing each slot as its job ended sent other loops after a slot or two at a time, each
    // fetching a whole batch and putting most of it back. A job that ends while its neighbours still
    // run keeps its slot for at most SLOT_GRACE_MS: a batch still running by then waits on something
    // slow, and its ended jobs give their slots back, each later one as it ends.
    const ended: SlottedJob<T>[] = [];
    let lingering = false;
    let grace: NodeJS.Timeout | undefined;
    const jobEnded: Release<T> = (job) => {
      if (lingering) return release(job);
      ended.push(job);
      if (ended.length < jobs.length) {
        grace ??= setTimeout(() => {
          lingering = true;
          for (const j of ended) release(j);
        }, SLOT_GRACE_MS);
      }
    };
    // Work found: more of it may be waiting, for the next idle loop to take. Not when every job
    // found belongs to a group now at its cap: the next loop could take only other groups' jobs,
    // and those woke a loop of their own when they were queued.
    if (jobs.length > groups.length || groups.some((g) => running.get(g)! < shape.perGroup)) wakeIdleLoop(boss, queue);
    let settled: PromiseSettledResult<unknown>[];
    try {
      settled = await settle(jobs, jobEnded);
    } finally {
      clearTimeout(grace);
      for (const job of jobs) release(job);
    }
    keepFetching(boss, queue);
    return settled.map((r, n) => {
      const job = jobs[n]!;
      if (r.status === 'fulfilled') return { id: job.id, status: 'completed' as const };
      logJobFailure(log, queue, job, r.reason);
      return { id: job.id, status: 'failed' as const, output: { message: r.reason instanceof Error ? r.reason.message : String(r.reason) } };
    });
  });
}

/**
 * The jobs of a batch, each run on its own, concurrently: `start` begins them all and gives one
 * promise per job, in order. A slow job holds its own group's slot, and its neighbours' for at
 * most SLOT_GRACE_MS.
 */
function workEachOf<T extends object>(
  boss: PgBoss,
  log: Log,
  queue: string,
  shape: Concurrency,
  pollingSeconds: number,
  start: (jobs: JobWithMetadata<T>[]) => Promise<unknown>[],
) {
  return workJobs<T>(boss, log, queue, shape, pollingSeconds, (jobs, jobEnded) =>
    Promise.allSettled(start(jobs).map((outcome, n) => outcome.finally(() => jobEnded(jobs[n]!)))),
  );
}

/** workEachOf with each job begun by `run`. */
function workEach<T extends object>(boss: PgBoss, log: Log, queue: string, shape: Concurrency, pollingSeconds: number, run: (job: JobWithMetadata<T>) => Promise<unknown>) {
  return workEachOf<T>(boss, log, queue, shape, pollingSeconds, (jobs) => jobs.map((job) => run(job)));
}

/**
 * A batch run as one unit (one transaction for all its jobs). When it fails, each job is run
 * alone, so a job that cannot succeed fails by itself and its neighbours go through.
 */
function workBatches<T extends object>(boss: PgBoss, log: Log, queue: string, shape: Concurrency, pollingSeconds: number, run: (data: T[]) => Promise<unknown>) {
  return workJobs<T>(boss, log, queue, shape, pollingSeconds, async (jobs) => {
    try {
      const value = await run(jobs.map((job) => job.data));
      return jobs.map(() => ({ status: 'fulfilled' as const, value }));
    } catch {
      return Promise.allSettled(jobs.map((job) => run([job.data])));
    }
  });
}

const SCHEDULED_FETCH = { batchSize: 1, includeMetadata: true as const, pollingIntervalSeconds: 2 };

/** A scheduled queue's jobs, one at a time; one that throws is logged and pg-boss retries it. */
async function workScheduled<T extends object>(boss: PgBoss, log: Log, queue: string, run: (job: JobWithMetadata<T>) => Promise<unknown>): Promise<void> {
  await boss.work<T, unknown, typeof SCHEDULED_FETCH>(queue, SCHEDULED_FETCH, async ([job]) => {
    if (!job) return;
    try {
      await run(job);
    } catch (err) {
      logJobFailure(log, queue, job, err);
      throw err;
    }
  });
}

export interface RunnerContext {
  boss: PgBoss;
  log: Log;
  /** The effect queues' polling backstop behind NOTIFY. */
  pollingSeconds: number;
}

/** Starts fetching `job`'s queue with its runner kind. */
export function work<D>(ctx: RunnerContext, deps: D, job: JobDefinition<D>): Promise<void> {
  const { boss, log, pollingSeconds } = ctx;
  const queue = job.queue.name;
  switch (job.runner) {
    case 'each':
      return workEach(boss, log, queue, job.concurrency, pollingSeconds, (j) => job.run(deps, j));
    case 'eachOf':
      return workEachOf(boss, log, queue, job.concurrency, pollingSeconds, (jobs) => job.start(deps, jobs));
    case 'batch':
      return workBatches(boss, log, queue, job.concurrency, pollingSeconds, (data) => job.run(deps, data));
    case 'scheduled':
      return workScheduled(boss, log, queue, (j) => job.run(deps, j));
  }
}
