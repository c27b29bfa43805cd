import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Config } from '../config.js';
import { outboxDir, summarize } from './outbox-files.js';

export interface Mailer {
  /** Hands the message over; resolves with the provider's message id (or the outbox file). */
  deliver(message: Mail.Options): Promise<string>;
  close(): void;
}

// Together shorter than an e-mail run's 45 s claim (src/email/deliver.ts), so a slow server fails
// the attempt instead of outliving the claim.
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 };
// Messages go over a pool of open connections, many per connection, instead of one SMTP
// conversation (connect, greet, authenticate, quit) per message. The pool's size is the e-mail
// worker's concurrency; a server that rate-limits per connection sees at most this many.
export const SMTP_POOL = { pool: true, maxConnections: 8, maxMessages: 500 };

/** SMTP_URL when set; otherwise `.eml` files in $DATA_DIR/outbox, one per message, each with a `.json` summary and its HTML as a `.html` page. */
export function createMailer(config: Pick<Config, 'SMTP_URL' | 'DATA_DIR'>): Mailer {
  if (config.SMTP_URL) {
    const transport = nodemailer.createTransport({ url: config.SMTP_URL, ...SMTP_POOL, ...SMTP_TIMEOUTS } as never);
    return {
      async deliver(message) {
        const info = await transport.sendMail(message);
        return String(info.messageId ?? info.response ?? '');
      },
      close: () => transport.close(),
    };
  }
  const outbox = outboxDir(config);
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async deliver(message) {
      // One instant for the Date header, the file name and the summary.
      const given = message.date === undefined ? null : new Date(message.date);
      const date = given && !Number.isNaN(given.getTime()) ? given : new Date();
      const info = await transport.sendMail({ ...message, date });
      await mkdir(outbox, { recursive: true });
      const id = String(info.messageId ?? Date.now()).replace(/[^A-Za-z0-9.@_-]/g, '');
      const base = path.join(outbox, `${date.toISOString().replace(/[:.]/g, '-')}-${id}`);
      // The summary first: an .eml in the outbox has its summary (src/email/outbox-files.ts reads both).
      const summary = summarize(message, date);
      await writeFile(`${base}.json`, `${JSON.stringify(summary, null, 2)}\n`);
      // The HTML part alone, as a page a browser opens: the e-mail as its reader sees it.
      if (summary.html !== null) await writeFile(`${base}.html`, summary.html);
      await writeFile(`${base}.eml`, info.message as Buffer);
      return `${base}.eml`;
    },
    close: () => transport.close(),
  };
}
