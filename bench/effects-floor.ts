/**
 * The floor of `npm run bench:effects` (bench/effects.ts): a plain Node process, started by the
 * bench with `node --import tsx bench/effects-floor.ts` and an IPC channel, that sends the same
 * effects the worker sends, to the same receivers, as fast as it can, with no database, queue,
 * claim or bookkeeping: HMAC-SHA256 signed webhook bodies of the worker's shape and size over a
 * keep-alive https.Agent, and e-mails with the worker's text, HTML and PDF through a pooled
 * nodemailer transport with the app's pool settings (src/email/transport.ts). What the receivers
 * see of it is the most any sender reaches on this machine; bench/effects.ts measures it there.
 *
 * Protocol: the parent sends one FloorRun; the child answers with one FloorDone (or FloorFailed)
 * and exits.
 */
import { createHmac, randomUUID } from 'node:crypto';
import https from 'node:https';
import nodemailer from 'nodemailer';
import { SMTP_POOL } from '../src/email/transport.js';

export interface FloorRun {
  type: 'run';
  webhooks: {
    url: string;
    secret: string;
    count: number;
    /** Requests in flight at once (sockets of the keep-alive agent). */
    concurrency: number;
    /** The `data` of an event the worker delivered: the floor's bodies carry the same. */
    data: unknown;
    eventType: string;
  };
  emails: {
    smtpUrl: string;
    count: number;
    from: string;
    to: string;
    subject: string;
    text: string;
    html: string;
    /** The PDF the worker attached, base64. */
    pdfBase64: string;
    filename: string;
  };
}

export interface FloorSide {
  ok: number;
  failed: number;
  /** From the first request begun to the last one answered, as the sender saw it. */
  ms: number;
  firstError?: string;
}

export type FloorReply = { type: 'done'; webhooks: FloorSide; emails: FloorSide } | { type: 'failed'; error: string };

const USER_AGENT = 'Invoicing-Webhooks/1.0 (+https://github.com/invoicing)';

function postOnce(agent: https.Agent, url: URL, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: 'POST', agent, headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
      res.on('error', reject);
    });
    req.setTimeout(15_000, () => req.destroy(new Error('no answer within 15 s')));
    req.on('error', reject);
    req.end(body);
  });
}

async function sendWebhooks(w: FloorRun['webhooks']): Promise<FloorSide> {
  const agent = new https.Agent({ keepAlive: true, maxSockets: w.concurrency, timeout: 4_000 });
  const url = new URL(w.url);
  let next = 0;
  let ok = 0;
  let failed = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const loop = async () => {
    while (next < w.count) {
      next += 1;
      const event = { id: randomUUID(), type: w.eventType, created_at: new Date().toISOString(), api_version: 'v1', is_test: false, data: w.data };
      const body = JSON.stringify(event);
      const t = Math.floor(Date.now() / 1000);
      const signature = createHmac('sha256', w.secret).update(`${t}.${body}`, 'utf8').digest('hex');
      try {
        const status = await postOnce(agent, url, body, {
          'Content-Type': 'application/json',
          'User-Agent': USER_AGENT,
          'X-Webhook-Id': event.id,
          'X-Webhook-Event': w.eventType,
          'X-Webhook-Signature': `t=${t},v1=${signature}`,
        });
        if (status >= 200 && status < 300) ok += 1;
        else {
          failed += 1;
          firstError ??= `HTTP ${status}`;
        }
      } catch (err) {
        failed += 1;
        firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  };
  await Promise.all(Array.from({ length: w.concurrency }, loop));
  const ms = performance.now() - started;
  agent.destroy();
  return { ok, failed, ms, ...(firstError ? { firstError } : {}) };
}

async function sendEmails(e: FloorRun['emails']): Promise<FloorSide> {
  const transport = nodemailer.createTransport({ url: e.smtpUrl, ...SMTP_POOL } as never);
  const pdf = Buffer.from(e.pdfBase64, 'base64');
  let ok = 0;
  let failed = 0;
  let firstError: string | undefined;
  const started = performance.now();
  // Every message handed to the pool at once: it sends them over its connections as fast as they go.
  await Promise.all(
    Array.from({ length: e.count }, async (_, n) => {
      try {
        await transport.sendMail({
          from: e.from,
          to: e.to,
          subject: e.subject,
          text: e.text,
          html: e.html,
          attachments: [{ filename: e.filename, content: pdf, contentType: 'application/pdf' }],
          messageId: `<floor-${n}-${randomUUID()}@bench>`,
          headers: { 'X-Bench-Floor': '1' },
        });
        ok += 1;
      } catch (err) {
        failed += 1;
        firstError ??= err instanceof Error ? err.message : String(err);
      }
    }),
  );
  const ms = performance.now() - started;
  transport.close();
  return { ok, failed, ms, ...(firstError ? { firstError } : {}) };
}

const reply = (msg: FloorReply) => new Promise<void>((resolve) => process.send!(msg, () => resolve()));

if (!process.send) {
  process.stderr.write('bench/effects-floor.ts is started by bench/effects.ts with an IPC channel\n');
  process.exit(2);
}
// The parent going away ends the floor too.
process.on('disconnect', () => process.exit(0));
process.once('message', (msg: FloorRun) => {
  // Webhooks and e-mails at once, as the worker sends them during a burst.
  Promise.all([sendWebhooks(msg.webhooks), sendEmails(msg.emails)]).then(
    async ([webhooks, emails]) => {
      await reply({ type: 'done', webhooks, emails });
      process.exit(0);
    },
    async (err: unknown) => {
      await reply({ type: 'failed', error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      process.exit(1);
    },
  );
});
