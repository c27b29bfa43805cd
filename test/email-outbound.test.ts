// docs/decisions.md §10: an outbound call never holds a database connection or transaction. The e-mail job
// claims its row in a short transaction, talks SMTP with nothing open, and records the outcome in
// another: a slow SMTP server holds neither a pool connection nor a row lock. The SMTP server here
// is real and stalls each message for as long as the test says, so the test looks at the database
// while a delivery is in the middle of its SMTP conversation.
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { testApp, type TestApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';
import { until } from './helpers/until.js';
import { createSql, type Sql } from '../src/db/client.js';
import { createMailer, type Mailer } from '../src/email/transport.js';
import { EmailInFlightError } from '../src/email/queries.js';
import { deliverEmail } from '../jobs/email-send.js';
import type { WorkerDeps } from '../jobs/worker.js';

type Teardown = { teardown(fn: () => unknown): void };

interface StallingSmtp {
  url: string;
  /** Message-IDs of the messages the server took (answered 250). */
  accepted: string[];
  /** Message transfers whose data has fully arrived, taken or still held. */
  arrived: number;
  /** From now on each message is held, after its data, until `release`. */
  hold(): void;
  release(): void;
}

/** A real SMTP server on 127.0.0.1 that can hold its reply to each message; closed with the test. */
async function startStallingSmtp(t: Teardown): Promise<StallingSmtp> {
  let gate: Promise<void> = Promise.resolve();
  let open: (() => void) | null = null;
  const sink: StallingSmtp = {
    url: '',
    accepted: [],
    arrived: 0,
    hold() {
      if (!open) gate = new Promise<void>((r) => (open = r));
    },
    release() {
      open?.();
      open = null;
      gate = Promise.resolve();
    },
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream).then(
        async (mail) => {
          sink.arrived += 1;
          await gate;
          sink.accepted.push(mail.messageId ?? '');
          callback();
        },
        (err: Error) => callback(err),
      );
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  sink.url = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
  t.teardown(() => {
    sink.release();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return sink;
}

/** A TCP proxy in front of PostgreSQL that the test can cut, to take the database away from one pool only. */
async function startDbProxy(t: Teardown, dbUrl: string): Promise<{ url: string; refused: number; cut(): void; restore(): void }> {
  const target = new URL(dbUrl);
  const sockets = new Set<net.Socket>();
  let down = false;
  const proxy = {
    url: '',
    refused: 0,
    cut() {
      down = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    restore() {
      down = false;
    },
  };
  const server = net.createServer((client) => {
    if (down) {
      proxy.refused += 1;
      client.destroy();
      return;
    }
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = new URL(dbUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);
  proxy.url = url.toString();
  t.teardown(() => {
    proxy.cut();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return proxy;
}

function depsFor(t: Teardown, h: TestApp, opts: { sql?: Sql; mailer?: Mailer } = {}): WorkerDeps {
  let mailer = opts.mailer;
  if (!mailer) {
    const real = createMailer(h.ctx.config);
    t.teardown(() => real.close());
    mailer = real;
  }
  return { config: h.ctx.config, sql: opts.sql ?? h.sql, boss: h.ctx.boss, mailer, secrets: h.ctx.secrets };
}

type EmailState = { id: string; status: string; attempts: number; last_error: string | null; sending_until: Date | null; sent_at: Date | null };

/** A sent invoice and its queued invoice e-mail; no worker runs, so only the test delivers it. */
async function queuedEmail(h: TestApp, key: string): Promise<string> {
  const res = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
  const [row] = await h.sql<{ id: string }[]>`SELECT id FROM emails WHERE invoice_id = ${res.body.invoice_id} AND kind = 'invoice'`;
  return row!.id;
}

async function stateOf(db: Sql, emailId: string): Promise<EmailState> {
  const [row] = await db<EmailState[]>`SELECT id, status, attempts, last_error, sending_until, sent_at FROM emails WHERE id = ${emailId}`;
  return row!;
}

/** How a promise ended, without letting its rejection go unhandled meanwhile. */
function outcome(p: Promise<unknown>): Promise<{ ok: true } | { ok: false; error: unknown }> {
  return p.then(
    () => ({ ok: true as const }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

t.test('e-mail delivery holds no transaction, connection or row lock while SMTP talks', async (t) => {
  const smtp = await startStallingSmtp(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const { key } = await h.key(['*']);
  // The test's own connection, apart from the pool the job uses.
  const observer = createSql(h.dbUrl, { max: 1, application: 'email-outbound-observer' });
  t.teardown(() => observer.end({ timeout: 1 }));
  const messageIdOf = (emailId: string) => `<${emailId}@invoicing>`;

  t.test('a delivery stalled in the middle of SMTP', async (t) => {
    const deps = depsFor(t, h);
    const emailId = await queuedEmail(h, key);
    smtp.hold();
    t.teardown(() => smtp.release());
    const run = outcome(deliverEmail(deps, { email_id: emailId }, false));
    await until('the message to reach the SMTP server', () => smtp.arrived >= 1);

    const lock = await outcome(observer.begin((tx) => tx`SELECT 1 FROM emails WHERE id = ${emailId} FOR UPDATE NOWAIT`));
    t.same(lock, { ok: true }, 'the e-mail row can be locked at once');
    const [open] = await observer<{ n: number; who: string | null }[]>`
      SELECT count(*)::int AS n, string_agg(application_name || ': ' || query, '; ') AS who FROM pg_stat_activity
       WHERE datname = current_database() AND state LIKE 'idle in transaction%'`;
    t.equal(open!.n, 0, `no connection of the database is idle in a transaction (${open!.who ?? 'none'})`);
    const during = await stateOf(observer, emailId);
    t.match(during, { status: 'queued', attempts: 1, last_error: null }, 'the attempt was committed before the message went out');
    t.ok(during.sending_until, 'and the row is claimed by the run');

    smtp.release();
    t.same(await run, { ok: true }, 'the delivery completes once the server answers');
    t.same(smtp.accepted, [messageIdOf(emailId)], 'one message arrived');
    t.match(await stateOf(observer, emailId), { status: 'sent', attempts: 1, last_error: null, sending_until: null }, 'recorded sent, claim released');
    t.ok((await stateOf(observer, emailId)).sent_at, 'with its time');
    t.same(await outcome(deliverEmail(deps, { email_id: emailId }, false)), { ok: true });
    t.same(smtp.accepted, [messageIdOf(emailId)], 'the job run again sends nothing');
  });

  t.test('two overlapping runs of one e-mail deliver one message', async (t) => {
    const deps = depsFor(t, h);
    const before = smtp.accepted.length;

    const emailId = await queuedEmail(h, key);
    smtp.hold();
    t.teardown(() => smtp.release());
    const first = outcome(deliverEmail(deps, { email_id: emailId }, false));
    await until('the first run to reach the SMTP server', () => smtp.arrived >= before + 1);
    const second = await outcome(deliverEmail(deps, { email_id: emailId }, false));
    t.equal(second.ok, false, 'the second run, while the first talks SMTP, does not deliver');
    if (!second.ok) t.type(second.error, EmailInFlightError, 'it is told to retry later');
    t.match(await stateOf(observer, emailId), { status: 'queued', attempts: 1, last_error: null }, 'it counted no attempt and recorded no failure');
    smtp.release();
    t.same(await first, { ok: true });
    t.same(smtp.accepted.slice(before), [messageIdOf(emailId)], 'one message');
    t.same(await outcome(deliverEmail(deps, { email_id: emailId }, false)), { ok: true }, 'the retry after it ends quietly');
    t.same(smtp.accepted.slice(before), [messageIdOf(emailId)], 'and sends nothing');

    // Started together: one claims, the other is refused at once, whichever wins.
    const together = await queuedEmail(h, key);
    const arrivedBefore = smtp.arrived;
    smtp.hold();
    t.teardown(() => smtp.release());
    const runs = [1, 2].map(() => outcome(deliverEmail(deps, { email_id: together }, false)));
    await until('one run to reach the SMTP server', () => smtp.arrived >= arrivedBefore + 1);
    // The held run cannot end before the release: whichever ends first is the refused one.
    const refused = await Promise.race(runs);
    t.equal(refused.ok, false, 'one run is refused while the other delivers');
    if (!refused.ok) t.type(refused.error, EmailInFlightError);
    smtp.release();
    const results = await Promise.all(runs);
    t.equal(results.filter((r) => r.ok).length, 1, 'the other delivered');
    t.same(smtp.accepted.slice(before + 1), [messageIdOf(together)], 'one message');
    t.match(await stateOf(observer, together), { status: 'sent', attempts: 1, sending_until: null });
  });

  t.test('a claim that ran out is taken by the next run; a live one is not', async (t) => {
    const deps = depsFor(t, h);
    const before = smtp.accepted.length;

    // A worker that died mid-send leaves its claim behind.
    const orphan = await queuedEmail(h, key);
    await observer`UPDATE emails SET attempts = 1, sending_until = now() - interval '1 second' WHERE id = ${orphan}`;
    t.same(await outcome(deliverEmail(deps, { email_id: orphan }, false)), { ok: true }, 'the retry takes the row');
    t.match(await stateOf(observer, orphan), { status: 'sent', attempts: 2, sending_until: null });

    const held = await queuedEmail(h, key);
    await observer`UPDATE emails SET attempts = 1, sending_until = now() + interval '1 hour' WHERE id = ${held}`;
    const refused = await outcome(deliverEmail(deps, { email_id: held }, true));
    t.equal(refused.ok, false, 'a live claim of another run refuses the row');
    if (!refused.ok) t.type(refused.error, EmailInFlightError);
    t.match(await stateOf(observer, held), { status: 'queued', attempts: 1, last_error: null }, 'untouched, even by a final attempt');

    t.same(smtp.accepted.slice(before), [messageIdOf(orphan)], 'only the orphaned e-mail was sent');
  });

  t.test('an e-mail stale by the time its job runs is skipped, never while another run holds it', async (t) => {
    const deps = depsFor(t, h);
    const before = smtp.accepted.length;
    const res = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) });
    const invoiceId = res.body.invoice_id as string;
    const [row] = await h.sql<{ id: string }[]>`SELECT id FROM emails WHERE invoice_id = ${invoiceId} AND kind = 'invoice'`;
    const emailId = row!.id;
    t.equal((await h.api('POST', `/invoices/${invoiceId}/cancel`, { key, body: {} })).status, 200);

    await observer`UPDATE emails SET sending_until = now() + interval '1 hour' WHERE id = ${emailId}`;
    const refused = await outcome(deliverEmail(deps, { email_id: emailId }, false));
    t.equal(refused.ok, false, 'a live claim: not skipped under the run that may be sending it');
    if (!refused.ok) t.type(refused.error, EmailInFlightError);
    t.equal((await stateOf(observer, emailId)).status, 'queued');

    await observer`UPDATE emails SET sending_until = NULL WHERE id = ${emailId}`;
    t.same(await outcome(deliverEmail(deps, { email_id: emailId }, false)), { ok: true });
    t.match(await stateOf(observer, emailId), { status: 'skipped', attempts: 0, last_error: /cancelled/, sending_until: null }, 'skipped, no attempt counted');
    t.equal(smtp.accepted.length, before, 'nothing sent');
  });

  t.test('a run records its outcome only under its own claim', async (t) => {
    // A mailer that, while it "talks SMTP", lets the test change the row as another run would.
    const scripted = (during: (emailId: string) => Promise<unknown>, result: 'sent' | 'refused'): Mailer => ({
      async deliver(message) {
        const emailId = /^<(.+)@invoicing>$/.exec(String(message.messageId))![1]!;
        await during(emailId);
        if (result === 'refused') throw new Error('451 try again later');
        return `provider-${emailId}`;
      },
      close() {},
    });

    // Its claim ran out and another run took the row: that run's claim is left alone.
    const lost = await queuedEmail(h, key);
    const takeOver = (id: string) => observer`UPDATE emails SET sending_until = now() + interval '1 hour' WHERE id = ${id}`;
    const failed = await outcome(deliverEmail(depsFor(t, h, { mailer: scripted(takeOver, 'refused') }), { email_id: lost }, true));
    t.equal(failed.ok, false, 'the failure is still thrown');
    const afterFailure = await stateOf(observer, lost);
    t.match(afterFailure, { status: 'queued', last_error: null }, 'but not recorded over the other run');
    t.ok(afterFailure.sending_until, 'whose claim stays');

    const doubled = await queuedEmail(h, key);
    const delivered = await outcome(deliverEmail(depsFor(t, h, { mailer: scripted(takeOver, 'sent') }), { email_id: doubled }, false));
    t.equal(delivered.ok, false, 'a delivery it cannot record under a live claim of another run is reported');
    if (!delivered.ok) t.match((delivered.error as Error).message, /may arrive twice/);
    t.equal((await stateOf(observer, doubled)).status, 'queued', 'that run records its own outcome');

    // Its claim ran out and nobody took the row: the message went out, so it is recorded.
    const late = await queuedEmail(h, key);
    const expire = (id: string) => observer`UPDATE emails SET sending_until = now() - interval '1 second' WHERE id = ${id}`;
    t.same(await outcome(deliverEmail(depsFor(t, h, { mailer: scripted(expire, 'sent') }), { email_id: late }, false)), { ok: true });
    t.match(await stateOf(observer, late), { status: 'sent', sending_until: null, last_error: null });
  });

  t.test('the database gone while SMTP talks: the delivery is recorded once it is back, and sent once', async (t) => {
    const proxy = await startDbProxy(t, h.dbUrl);
    const jobSql = createSql(proxy.url, { max: 2, application: 'email-outbound-job' });
    t.teardown(() => jobSql.end({ timeout: 1 }));
    const deps = depsFor(t, h, { sql: jobSql });
    const before = smtp.accepted.length;
    const arrivedBefore = smtp.arrived;

    const emailId = await queuedEmail(h, key);
    smtp.hold();
    t.teardown(() => smtp.release());
    const run = outcome(deliverEmail(deps, { email_id: emailId }, false));
    await until('the message to reach the SMTP server', () => smtp.arrived >= arrivedBefore + 1);
    proxy.cut();
    smtp.release();
    await until('the run to fail to reach the database after the delivery', () => proxy.refused >= 1);
    t.equal((await stateOf(observer, emailId)).status, 'queued', 'not recorded while the database is away');
    proxy.restore();
    t.same(await run, { ok: true }, 'the run ends once it has recorded the delivery');
    t.match(await stateOf(observer, emailId), { status: 'sent', attempts: 1, sending_until: null });
    t.same(await outcome(deliverEmail(deps, { email_id: emailId }, false)), { ok: true });
    t.same(smtp.accepted.slice(before), [messageIdOf(emailId)], 'one message, however the job is run again');
  });
});
