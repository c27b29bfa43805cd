// Issue 6 item 6, the short soak for CI: the load of `npm run bench:soak` (bench/soak-load.ts) for
// 75 s against one web and one worker process from their real entry points. Every response must
// be the one its kind of request asked for (the 404/409/422 ones included), every e-mail and
// webhook must arrive exactly once, no job may be left, and RSS must level off.
import path from 'node:path';
import t from 'tap';
import { seedMerchant } from '../bench/db.js';
import { EXPECTED, rssGrowth, runSoak } from '../bench/soak-load.js';
import { createTestDatabase } from './helpers/db.js';

const SECONDS = 75;
// The bench asks for < 10 % between minute 2 and minute 10. 75 s has no minute 2: from 30 % of the
// run (22 s) to its end still holds warm-up, and V8 lets a busy heap grow before it collects and
// shrinks it. In four runs on the 2-core machine the worker climbed from ~200 to ~255 MiB by 45 s and
// fell back to ~208 MiB, the web swung between 180 and 212 MiB: swings of up to ~25 % that are not
// leaks. With the suite's other files running beside it on the two cores, a worker once climbed
// steadily from 198 to 312 MiB (+44 %) without V8 collecting before the run ended, and fell to
// ~230 MiB when run alone. So 50 %: this short run catches a gross leak (one that adds half in a
// minute); the 10-minute bench, which asks for < 10 %, catches the slow ones.
const GROWTH_TOLERANCE_PCT = 50;

t.test(`${SECONDS} s of mixed load on 1 web + 1 worker: only the statuses asked for, everything delivered once, RSS levels off`, async (t) => {
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  const seed = await seedMerchant(db.sql);
  const started = Date.now();
  const r = await runSoak(t, {
    cwd: path.resolve('.'),
    databaseUrl: db.url,
    sql: db.sql,
    apiKey: seed.apiKey,
    seconds: SECONDS,
    loops: 8,
    iterationMs: 500,
    drainTimeoutMs: 120_000,
    log: (msg) => t.comment(msg),
  });
  t.comment(`run took ${((Date.now() - started) / 1000).toFixed(1)} s, drain ${r.drainSeconds.toFixed(1)} s, ${r.totalRequests} requests`);

  t.same(r.unexpected, [], 'no response other than the one its kind of request asked for');
  t.equal(r.unexpectedCount, 0, 'counted over every request');
  for (const k of r.requests) {
    const total = Object.values(k.byStatus).reduce((a, b) => a + b, 0);
    t.ok(total > 0, `${k.kind}: ${total} request(s), all ${EXPECTED[k.kind]}`);
  }
  t.ok(r.invoicesSent > 0 && r.invoicesPaid > 0, `${r.invoicesCreated} invoices created, ${r.invoicesSent} sent, ${r.invoicesPaid} paid`);

  t.same(r.problems, [], 'every reconciliation holds');
  t.equal(r.emails.invoiceEmails, r.invoicesSent, 'one invoice e-mail per sent invoice');
  t.equal(r.emails.receiptEmails, r.invoicesPaid, 'one receipt per payment');
  t.equal(r.emails.missing, 0, 'every recorded e-mail reached the SMTP sink');
  t.equal(r.emails.received, r.emails.distinctReceived, 'none twice');
  t.ok(r.webhooks.events > r.invoicesCreated, `${r.webhooks.events} events`);
  t.equal(r.webhooks.missing, 0, 'every event reached the receiver');
  t.equal(r.webhooks.received, r.webhooks.events, 'each exactly once');
  t.same(r.stuckJobs, [], 'no job left in created, active, retry or failed');
  t.same(r.exitCodes, { web: 0, worker: 0 }, 'both processes stop cleanly after the soak');

  // The lowest sample of 15 s at each end: a 5 s median once ended on a crest of the worker's heap
  // (322 MiB against a level of ~210) and compared it with a trough.
  const g = rssGrowth(r, 0.3, 15);
  t.ok(r.samples.length >= SECONDS - 5, `${r.samples.length} RSS samples`);
  const every5s = (which: 'webKb' | 'workerKb') => r.samples.filter((_, i) => i % 5 === 4).map((s) => Math.round(s[which] / 1024)).join(' ');
  for (const [name, x, which] of [['web', g.web, 'webKb'], ['worker', g.worker, 'workerKb']] as const) {
    t.comment(`${name} RSS every 5 s, MiB: ${every5s(which)}`);
    t.ok(
      x.pct < GROWTH_TOLERANCE_PCT,
      `${name} RSS ${Math.round(x.fromKb / 1024)} MiB at ${g.from} s → ${Math.round(x.toKb / 1024)} MiB at ${SECONDS} s: ${x.pct.toFixed(1)} % (< ${GROWTH_TOLERANCE_PCT} %)`,
    );
  }
});
