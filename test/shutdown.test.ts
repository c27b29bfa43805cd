// docs/processes.md "Processes" and docs/decisions.md §13: SIGTERM lets running jobs and requests finish, within
// Heroku's 30 s, before the process exits. Real processes (the Procfile's worker and web entry
// points) on a real port, a real SMTP server and real Postgres; the signal is a real SIGTERM.
import net from 'node:net';
import t from 'tap';
import { isEnvelope, testApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';
import { startSmtpSink } from './helpers/smtp.js';
import { freePort } from '../src/db/embedded.js';
import { API_PREFIX } from '../src/http/urls.js';
import { until } from './helpers/until.js';
import { spawnApp, whenReady } from './helpers/processes.js';

// Heroku's SIGKILL follows SIGTERM after this long.
const HEROKU_GRACE_MS = 30_000;

t.test('worker: SIGTERM mid-delivery lets the e-mail job finish, then exits 0', async (t) => {
  // Each message is answered 4 s after its data: the signal lands while the worker waits for it.
  const smtp = await startSmtpSink(t, { delayMs: 4_000 });
  const h = await testApp(t, { SMTP_URL: smtp.url });
  const { key } = await h.key(['*']);
  // At info: its ready line is an info line.
  const worker = spawnApp(t, 'jobs/worker.ts', { DATABASE_URL: h.dbUrl, SMTP_URL: smtp.url, LOG_LEVEL: 'info' });
  await whenReady(worker, 'the worker', () => worker.output().includes('invoicing worker ready'));

  const res = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) });
  t.equal(res.status, 201);
  const invoiceId = res.body.invoice_id as string;
  await until('the delivery to begin', () => smtp.receiving >= 1);
  t.equal(smtp.messages.length, 0, 'the message is still in delivery');
  const signalledAt = Date.now();
  worker.process.kill('SIGTERM');

  const exit = await worker.exited;
  t.same({ code: exit.code, signal: exit.signal }, { code: 0, signal: null }, 'exit code 0');
  t.ok(exit.at - signalledAt < HEROKU_GRACE_MS, `exited ${exit.at - signalledAt} ms after SIGTERM`);
  t.ok(exit.at - signalledAt > 2_000, 'it waited for the job rather than leaving at once');
  t.match(worker.output(), /SIGTERM: shutting down/);
  const forInvoice = smtp.messages.filter((m) => m.headers.get('x-invoice-id') === invoiceId);
  t.equal(forInvoice.length, 1, 'the e-mail arrived, once');
  const [row] = await h.sql<{ status: string; attempts: number }[]>`SELECT status, attempts FROM emails WHERE invoice_id = ${invoiceId}`;
  t.match(row, { status: 'sent', attempts: 1 }, 'and was recorded as sent');
  const [job] = await h.sql<{ state: string }[]>`
    SELECT state FROM pgboss.job WHERE name = 'email-send' AND data->>'email_id' = (SELECT id::text FROM emails WHERE invoice_id = ${invoiceId})`;
  t.equal(job?.state, 'completed', 'its job is completed, not failed by the shutdown');
});

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: any;
}

/** Splits what one keep-alive connection received into its HTTP/1.1 responses (Content-Length bodies). */
function parseResponses(data: Buffer): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = data;
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) throw new Error(`incomplete response head: ${rest.toString()}`);
    const [statusLine, ...lines] = rest.subarray(0, end).toString('latin1').split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const i = line.indexOf(':');
      headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
    }
    const length = Number(headers['content-length']);
    if (!Number.isInteger(length)) throw new Error(`no Content-Length in ${statusLine}`);
    const body = rest.subarray(end + 4, end + 4 + length).toString('utf8');
    out.push({ status: Number(statusLine!.split(' ')[1]), headers, body: JSON.parse(body) });
    rest = rest.subarray(end + 4 + length);
  }
  return out;
}

t.test('web: SIGTERM finishes the request in flight, answers new ones 503 with Connection: close until then, exits 0', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);
  const invoice = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: true }) });
  const invoiceId = invoice.body.invoice_id as string;

  const port = await freePort();
  const web = spawnApp(t, 'src/server.ts', { DATABASE_URL: h.dbUrl, PORT: String(port), HOST: '127.0.0.1' });
  await whenReady(web, 'the web server', () =>
    fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    ),
  );

  // The test holds the invoice's row lock, so the request that pays it waits, in flight, on Postgres.
  let release!: () => void;
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const lock = h.sql.begin(async (tx) => {
    await tx`SELECT 1 FROM invoices WHERE id = ${invoiceId} FOR UPDATE`;
    locked();
    await new Promise<void>((r) => (release = r));
  });
  await isLocked;

  const socket = net.connect(port, '127.0.0.1');
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const body = '{"payment_method":"transfer"}';
  socket.write(
    `POST ${API_PREFIX}/invoices/${invoiceId}/mark-paid HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${key}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  await until('the request to wait on the row lock', async () => {
    const [row] = await h.sql<{ n: number }[]>`
      SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND application_name = 'invoicing-web' AND wait_event_type = 'Lock'`;
    return row!.n > 0;
  });

  const signalledAt = Date.now();
  web.process.kill('SIGTERM');
  // While the request in flight runs, the server still listens: a new connection's request is
  // answered 503 with Connection: close.
  const fresh = await until('a new request answered 503', async () => {
    const res = await fetch(`http://127.0.0.1:${port}${API_PREFIX}/me`, { headers: { 'x-api-key': key } });
    return res.status === 503 ? res : (await res.arrayBuffer(), null);
  });
  t.equal(fresh.headers.get('connection'), 'close', 'a new connection: 503 with Connection: close');
  t.match(await fresh.json(), { code: 'service_unavailable', retry: 'safe' });
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  t.equal(health.status, 503, 'the health check says so too');
  await health.arrayBuffer();
  // A client reusing its open connection still reaches the stopping server.
  socket.write(`GET ${API_PREFIX}/me HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: ${key}\r\nX-Request-Id: after-sigterm\r\n\r\n`);
  await new Promise((r) => setTimeout(r, 200));
  t.equal(received.length, 0, 'nothing answered while the first request waits');
  release();
  await lock;
  await closed;

  const [first, second] = parseResponses(Buffer.concat(received));
  t.equal(first?.status, 200, 'the request in flight completed');
  t.match(first?.body, { invoice_id: invoiceId, status: 'paid' });
  t.equal(second?.status, 503, 'the new request: 503');
  t.ok(isEnvelope(second?.body), 'in the error envelope');
  t.match(second?.body, { code: 'service_unavailable', retry: 'safe', request_id: 'after-sigterm' });
  t.equal(second?.headers['connection'], 'close', 'with Connection: close');
  t.equal(second?.headers['x-request-id'], 'after-sigterm');
  const [row] = await h.sql<{ status: string }[]>`SELECT status FROM invoices WHERE id = ${invoiceId}`;
  t.equal(row!.status, 'paid', 'the payment of the request in flight was committed');

  const exit = await web.exited;
  t.same({ code: exit.code, signal: exit.signal }, { code: 0, signal: null }, 'exit code 0');
  const refused = await fetch(`http://127.0.0.1:${port}/healthz`).then(
    () => false,
    () => true,
  );
  t.ok(refused, 'once it has exited, nothing listens');
  t.ok(exit.at - signalledAt < HEROKU_GRACE_MS, `exited ${exit.at - signalledAt} ms after SIGTERM`);
});
