// docs/decisions.md §1: N web and M worker processes on one database behave exactly like one of each.
// Two web and two worker processes (the real entry points, as the Procfile runs them) take 30 s
// of mixed load from several merchants; afterwards a query reconciles every count: invoice
// numbers gapless and unique per merchant, each request counted once by the rate limit, each
// e-mail sent once, each webhook delivered once per (event, endpoint), no job left behind.
import t from 'tap';
import { testApp } from './helpers/app.js';
import { spawnApp, startWorkerProcess, whenReady } from './helpers/processes.js';
import { invoiceBody } from './helpers/fixtures.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { startSmtpSink } from './helpers/smtp.js';
import { freePort } from '../src/db/embedded.js';
import { API_PREFIX } from '../src/http/urls.js';
import { until } from './helpers/until.js';

const LOAD_MS = 30_000;
const LOOPS_PER_MERCHANT = 2;

t.test('2 web + 2 worker processes under 30 s of mixed load lose nothing and do nothing twice', async (t) => {
  const smtp = await startSmtpSink(t);
  const receiver = await startHttpsReceiver(t);
  const h = await testApp(t);
  const env = { DATABASE_URL: h.dbUrl, SMTP_URL: smtp.url, WEBHOOK_RETRY_SCHEDULE: '1,1,1' };

  const ports = [await freePort(), await freePort()];
  const webs = await Promise.all(
    ports.map(async (port) => {
      const web = spawnApp(t, 'src/server.ts', { ...env, PORT: String(port), HOST: '127.0.0.1' });
      await whenReady(web, `web on ${port}`, () => fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false));
      return web;
    }),
  );
  const workers = await Promise.all([0, 1].map(() => startWorkerProcess(t, env)));

  // Limits high enough that the load is never refused: what is checked is the counting.
  const merchants = await Promise.all([0, 1, 2].map(() => h.key(['*'], { rate_limit: 1_000_000 })));
  for (const m of merchants) {
    const res = await h.api('POST', '/webhooks/endpoints', { key: m.key, body: { url: receiver.url(`/m/${m.merchantId}`), events: ['invoice.sent', 'invoice.paid'] } });
    t.equal(res.status, 201);
  }

  // Requests per key, the endpoint registration above included.
  const sent = new Map<string, number>(merchants.map((m) => [m.key, 1]));
  let requests = 0;
  const unexpectedStatuses: string[] = [];
  const unexpected = { push: (what: string) => unexpectedStatuses.push(what) };
  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const port = ports[requests++ % ports.length]!;
    sent.set(key, (sent.get(key) ?? 0) + 1);
    const res = await fetch(`http://127.0.0.1:${port}${API_PREFIX}${path}`, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = res.status === 204 ? null : ((await res.json()) as Record<string, any>);
    return { status: res.status, body: json };
  };
  const deadline = Date.now() + LOAD_MS;
  const loop = async (m: { key: string }, i: number) => {
    let n = 0;
    while (Date.now() < deadline) {
      n += 1;
      // A third of the invoices are sent (by create or by the send route) and half of those paid:
      // every kind of write, at a pace the workers' e-mail and PDF work can follow.
      const send = n % 3 === 0;
      const created = await call(m.key, 'POST', '/invoices', invoiceBody({ send_immediately: send && n % 2 === 0 }));
      if (created.status !== 201) {
        unexpected.push(`create ${created.status} ${JSON.stringify(created.body)}`);
        continue;
      }
      const id = created.body!.invoice_id as string;
      if (send && n % 2 === 1) {
        const s = await call(m.key, 'POST', `/invoices/${id}/send`);
        if (s.status !== 200) unexpected.push(`send ${s.status} ${JSON.stringify(s.body)}`);
      }
      const got = await call(m.key, 'GET', `/invoices/${id}`);
      if (got.status !== 200) unexpected.push(`get ${got.status} ${JSON.stringify(got.body)}`);
      if (send && (n + i) % 2 === 0) {
        const paid = await call(m.key, 'POST', `/invoices/${id}/mark-paid`, {});
        if (paid.status !== 200) unexpected.push(`mark-paid ${paid.status} ${JSON.stringify(paid.body)}`);
      }
    }
  };
  await Promise.all(merchants.flatMap((m) => Array.from({ length: LOOPS_PER_MERCHANT }, (_, i) => loop(m, i))));
  t.same(unexpectedStatuses.slice(0, 5), [], `no unexpected status under load (${unexpectedStatuses.length} in all)`);
  t.ok(requests > 200, `${requests} requests in ${LOAD_MS / 1000} s`);

  for (const m of merchants) {
    const numbers = await h.sql<{ n: number }[]>`
      SELECT substring(invoice_number FROM '[0-9]+$')::int AS n FROM invoices
       WHERE merchant_id = ${m.merchantId} AND invoice_number IS NOT NULL ORDER BY n`;
    t.same(numbers.map((r) => r.n), numbers.map((_, i) => i + 1), `merchant ${m.merchantId}: numbers 1..${numbers.length}, no gap, no repeat`);
  }

  // Both web processes flush their counts on a short interval: wait for them to land.
  for (const m of merchants) {
    const counted = await until(
      'every request counted',
      async () => {
        const [row] = await h.sql<{ hits: number }[]>`SELECT coalesce(sum(hits), 0)::int AS hits FROM rate_limit_windows WHERE bucket = ${`key:${m.id}`}`;
        return row!.hits >= sent.get(m.key)! ? row!.hits : null;
      },
      10_000,
    ).catch(async () => (await h.sql<{ hits: number }[]>`SELECT coalesce(sum(hits), 0)::int AS hits FROM rate_limit_windows WHERE bucket = ${`key:${m.id}`}`)[0]!.hits);
    t.equal(counted, sent.get(m.key), `key ${m.id}: every request counted once by the shared rate limit`);
  }

  const [mail] = await h.sql<{ total: number }[]>`SELECT count(*)::int AS total FROM emails`;
  await until('every e-mail sent', async () => {
    const [row] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM emails WHERE status = 'sent'`;
    return row!.n === mail!.total;
  }, 240_000);
  await smtp.waitFor(mail!.total, 30_000);
  const ids = smtp.messages.map((m) => m.messageId);
  t.equal(new Set(ids).size, ids.length, `${ids.length} e-mails, none twice`);
  t.equal(ids.length, mail!.total, 'every recorded e-mail arrived');

  const [expected] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE type IN ('invoice.sent', 'invoice.paid')`;
  await until('every webhook delivered', async () => {
    const [row] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'success'`;
    return row!.n === expected!.n;
  }, 120_000).catch(async (err: Error) => {
    const states = await h.sql`SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status`;
    const jobs = await h.sql`SELECT name, state, count(*)::int AS n FROM pgboss.job GROUP BY name, state`;
    t.fail(`${err.message}: ${expected!.n} events; deliveries ${JSON.stringify(states)}; jobs ${JSON.stringify(jobs)}`);
  });
  const [notDone] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'success'`;
  t.equal(notDone!.n, 0, 'no delivery failed or pending');
  const pairs = receiver.received.map((r) => `${r.path} ${String(r.headers['x-webhook-id'])}`);
  t.equal(pairs.length, expected!.n, `${expected!.n} events, each delivered to its endpoint`);
  t.equal(new Set(pairs).size, pairs.length, 'no (event, endpoint) delivered twice');
  const [multiAttempt] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM webhook_attempts WHERE attempt_number > 1`;
  t.equal(multiAttempt!.n, 0, 'receivers answered 2xx: one attempt each');

  // A job completes just after its effect is recorded: one whose e-mail has arrived may still be
  // finishing. Stuck is what stays so.
  const unfinished = () => h.sql<{ name: string; state: string; n: number }[]>`
    SELECT name, state, count(*)::int AS n FROM pgboss.job
     WHERE state IN ('active', 'retry', 'failed') OR (state = 'created' AND start_after < now() - interval '30 seconds')
     GROUP BY name, state`;
  const stuck = await until('every job finished', async () => ((await unfinished()).length === 0 ? [] : null), 15_000).catch(unfinished);
  t.same(stuck, [], 'no job stuck, retrying or failed');

  for (const c of [...webs, ...workers]) {
    c.process.kill('SIGTERM');
    t.equal((await c.exited).code, 0, 'a process told to stop exits cleanly');
  }
});
