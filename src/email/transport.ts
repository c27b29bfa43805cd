import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Config } from '../config.js';

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

/** SMTP_URL when set; otherwise `.eml` files in $DATA_DIR/outbox, one per message. */
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
  const outbox = path.resolve(config.DATA_DIR, 'outbox');
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async deliver(message) {
      const info = await transport.sendMail(message);
      await mkdir(outbox, { recursive: true });
      const id = String(info.messageId ?? Date.now()).replace(/[^A-Za-z0-9.@_-]/g, '');
      const file = path.join(outbox, `${new Date().toISOString().replace(/[:.]/g, '-')}-${id}.eml`);
      await writeFile(file, info.message as Buffer);
      return file;
    },
    close: () => transport.close(),
  };
}
