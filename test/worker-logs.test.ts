// The worker's log (jobs/worker.ts, src/logger.ts): pino JSON lines like the web's, at LOG_LEVEL,
// with every failed job, refused e-mail and failed webhook attempt by its ids and nothing secret.
// The real worker process from its entry point, a real SMTP server that refuses, a real HTTPS
// receiver that answers 500.
import t from 'tap';
import { testApp, type TestApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';
import { startSmtpSink } from './helpers/smtp.js';
import { startHttpsReceiver } from './helpers/https-receiver.js';
import { loggedApp } from './helpers/logged-app.js';
import { spawnApp, startWorkerProcess, type Child } from './helpers/processes.js';
import { until } from './helpers/until.js';
import { redactedMessage } from '../src/logger.js';

// The next webhook attempt is a minute away: each test sees exactly one.
const ONE_ATTEMPT = { WEBHOOK_RETRY_SCHEDULE: '60' };
// The endpoint's path stands for a merchant's own token in its URL: only the host may be logged.
const HOOK_PATH = '/hooks/merchant-token-5f2b9c';

type Line = Record<string, unknown> & { level: number; time: number; msg: string };

/** Every line of the output, parsed; a line that is not JSON fails the parse, naming it. */
function linesOf(child: Child): Line[] {
  return child
    .output()
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      try {
        return JSON.parse(l) as Line;
      } catch {
        throw new Error(`not a JSON line: ${l}`);
      }
    });
}

/** An SMTP server refusing every message (451) and a receiver answering 500, both for one merchant. */
async function failingEffects(t: { teardown(fn: () => unknown): void }) {
  const smtp = await startSmtpSink(t);
  smtp.refusing = true;
  const receiver = await startHttpsReceiver(t);
  receiver.reply(() => ({ status: 500, body: 'receiver broke' }));
  const h = await testApp(t, { SMTP_URL: smtp.url, ...ONE_ATTEMPT });
  const { key } = await h.key(['*']);
  const ep = await h.api('POST', '/webhooks/endpoints', { key, body: { url: receiver.url(HOOK_PATH), events: ['invoice.sent'] } });
  if (ep.status !== 201) throw new Error(`endpoint create: ${ep.status} ${ep.raw}`);
  const env = { DATABASE_URL: h.dbUrl, SMTP_URL: smtp.url, ...ONE_ATTEMPT };
  return { h, key, env, endpoint: ep.body as { id: string; secret: string }, receiverPort: new URL(receiver.url()).port };
}

/** An invoice sent at once: its e-mail and its invoice.sent webhook are both attempted. */
async function sendInvoice(h: TestApp, key: string) {
  const body = invoiceBody({ send_immediately: true });
  const res = await h.api('POST', '/invoices', { key, body });
  if (res.status !== 201) throw new Error(`invoice create: ${res.status} ${res.raw}`);
  return { invoiceId: res.body.invoice_id as string, recipient: body.client.email as string };
}

const logged = (child: Child, msg: string) => () => linesOf(child).filter((l) => l.msg === msg).length > 0;

/** Waits for the refused e-mail, its failed job (logged after it, once pg-boss has recorded it) and the failed webhook attempt. */
async function failuresLogged(worker: Child): Promise<void> {
  await until('the refused e-mail to be logged', logged(worker, 'e-mail delivery failed'), 30_000);
  await until('its failed job to be logged', logged(worker, 'job failed, to be retried'), 30_000);
  await until('the failed webhook attempt to be logged', logged(worker, 'webhook attempt failed'), 30_000);
}

t.test('LOG_LEVEL=info: JSON lines as the web writes them; a refused e-mail, its failed job and a failed webhook attempt, by their ids', async (t) => {
  const { h, key, env, endpoint, receiverPort } = await failingEffects(t);
  const worker = await startWorkerProcess(t, env);
  const { invoiceId, recipient } = await sendInvoice(h, key);

  await failuresLogged(worker);
  const lines = linesOf(worker);
  for (const l of lines) {
    t.ok(Number.isInteger(l.level) && Number.isInteger(l.time) && typeof l.msg === 'string', `level, time and msg: ${l.msg}`);
  }

  const ready = lines.find((l) => l.msg === 'invoicing worker ready');
  t.equal(ready?.level, 30, 'the ready line is info');
  // The web's own line (Fastify's "Server listening at …") has the same fields in the same order.
  const web = await loggedApp(h, { LOG_LEVEL: 'info' });
  t.teardown(() => web.app.close());
  const listening = web.logs.lines().map((l) => JSON.parse(l) as Line).find((l) => l.msg.startsWith('Server listening'));
  t.same(Object.keys(ready ?? {}), Object.keys(listening ?? {}), 'the same base fields as the web\'s lines (level, time, pid, hostname, msg)');

  const [email] = await h.sql<{ id: string }[]>`SELECT id FROM emails WHERE invoice_id = ${invoiceId}`;
  const refused = lines.find((l) => l.msg === 'e-mail delivery failed');
  t.match(
    refused,
    { level: 40, email_id: email!.id, kind: 'invoice', invoice_id: invoiceId, recipient_domain: 'example.cl', attempt: 1, smtp_code: 451, error: /try again later/ },
    'the refused e-mail: its id, the recipient\'s domain, the SMTP code',
  );

  const [job] = await h.sql<{ id: string }[]>`SELECT id FROM pgboss.job WHERE name = 'email-send' AND data->>'email_id' = ${email!.id}`;
  const failedJob = lines.find((l) => l.msg === 'job failed, to be retried' && l.job_id === job!.id);
  t.match(failedJob, { level: 40, queue: 'email-send', retry_count: 0, retry_limit: 11, error: /try again later/ }, 'the failed job: queue, id, retry count, error');

  const [delivery] = await h.sql<{ id: string }[]>`SELECT id FROM webhook_deliveries WHERE endpoint_id = ${endpoint.id} AND event_type = 'invoice.sent'`;
  const attempt = lines.find((l) => l.msg === 'webhook attempt failed' && l.delivery_id === delivery!.id);
  t.match(
    attempt,
    { level: 40, endpoint_id: endpoint.id, event_type: 'invoice.sent', attempt: 1, max_attempts: 2, host: `localhost:${receiverPort}`, status: 500, error_category: 'http_error', error: 'HTTP 500' },
    'the failed attempt: delivery, endpoint, the receiver\'s host and status',
  );

  const output = worker.output();
  t.notOk(output.includes(endpoint.secret), 'no signing secret');
  t.notOk(output.includes('X-Webhook-Signature'), 'no signature header');
  t.notOk(output.includes(HOOK_PATH), 'not the endpoint\'s path, only its host');
  t.notOk(output.includes(recipient), 'not the recipient\'s address');
  t.notOk(output.includes(key), 'no API key');
});

t.test('LOG_LEVEL=warn: the failures still, and no info line', async (t) => {
  const { h, key, env, endpoint } = await failingEffects(t);
  // Not startWorkerProcess: it waits for the ready line, which warn suppresses.
  const worker = spawnApp(t, 'jobs/worker.ts', { ...env, LOG_LEVEL: 'warn' });
  await sendInvoice(h, key);

  await failuresLogged(worker);
  const lines = linesOf(worker);
  t.same(lines.filter((l) => l.level < 40), [], 'nothing below warn, not even the ready line');
  t.equal(lines.find((l) => l.msg === 'job failed, to be retried')?.level, 40, 'the failed job is a warning');
  t.notOk(worker.output().includes(endpoint.secret), 'no signing secret');
});

t.test('an SMTP refusal quoting the recipient is logged with the domain only', async (t) => {
  const refusal = new Error("Can't send mail - all recipients were rejected: 550 5.1.1 <ana.perez@losandes.cl>: Recipient address rejected");
  t.equal(redactedMessage(refusal), "Can't send mail - all recipients were rejected: 550 5.1.1 <*@losandes.cl>: Recipient address rejected");
});
