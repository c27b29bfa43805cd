// The short soak for CI: the load of `npm run bench:soak` (bench/soak-load.ts) for 75 s against
// one web and one worker process from their real entry points. It asserts what cannot flake:
// every response is the one its kind of request asked for (the 404/409/422 ones included), every
// e-mail and webhook arrives exactly once, no job is left, and both processes stop cleanly.
// Memory is measured by the 10-minute bench (`npm run bench:soak`, bench/RESULTS.md), not here: a
// threshold on RSS over 75 s on a shared machine is a timing test (V8 collects when it likes).
import path from 'node:path';
import t from 'tap';
import { seedMerchant } from '../bench/db.js';
import { EXPECTED, runSoak } from '../bench/soak-load.js';
import { createTestDatabase } from './helpers/db.js';

const SECONDS = 75;

t.test(`${SECONDS} s of mixed load on 1 web + 1 worker: only the statuses asked for, everything delivered once, both processes stop cleanly`, async (t) => {
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

  const every5s = (which: 'webKb' | 'workerKb') => r.samples.filter((_, i) => i % 5 === 4).map((s) => Math.round(s[which] / 1024)).join(' ');
  t.comment(`web RSS every 5 s, MiB: ${every5s('webKb')}`);
  t.comment(`worker RSS every 5 s, MiB: ${every5s('workerKb')}`);
});
