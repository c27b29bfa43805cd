import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { simpleParser, type ParsedMail, type AddressObject } from 'mailparser';

export interface ReceivedMail {
  to: string;
  from: string;
  subject: string;
  text: string;
  html: string;
  messageId: string;
  headers: ParsedMail['headers'];
  attachments: ParsedMail['attachments'];
}

export interface SmtpSink {
  url: string;
  port: number;
  messages: ReceivedMail[];
  /** While set, every message is refused with a temporary error (451). */
  refusing: boolean;
  /** How many message transfers (DATA) have begun, accepted or not. */
  receiving: number;
  /** Resolves once `n` messages have arrived (rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

function addresses(a: AddressObject | AddressObject[] | undefined): string {
  const list = Array.isArray(a) ? a : a ? [a] : [];
  return list.flatMap((x) => x.value.map((v) => v.address ?? '')).join(',');
}

export interface SmtpSinkOptions {
  port?: number;
  /**
   * Holds every message this long after its data arrived before answering. Like a real server,
   * the sink takes responsibility for a message only with its 250 reply (RFC 5321 §6.1): a client
   * that disconnects during the delay never got that reply, so the message is dropped.
   */
  delayMs?: number;
}

/** A real SMTP server on 127.0.0.1 that parses what it receives; closed when the test ends. */
export async function startSmtpSink(t: { teardown(fn: () => unknown): void }, opts: number | SmtpSinkOptions = 0): Promise<SmtpSink> {
  const { port = 0, delayMs = 0 } = typeof opts === 'number' ? { port: opts } : opts;
  const closed = new Set<string>();
  const sink: SmtpSink = {
    url: '',
    port: 0,
    messages: [],
    refusing: false,
    receiving: 0,
    async waitFor(n, timeoutMs = 15_000) {
      const until = Date.now() + timeoutMs;
      while (sink.messages.length < n) {
        if (Date.now() > until) throw new Error(`expected ${n} e-mails, got ${sink.messages.length}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      return sink.messages;
    },
    close: async () => {},
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onClose(session) {
      closed.add(session.id);
    },
    onData(stream, session, callback) {
      sink.receiving += 1;
      if (sink.refusing) {
        stream.resume();
        stream.on('end', () => callback(Object.assign(new Error('try again later'), { responseCode: 451 })));
        return;
      }
      simpleParser(stream).then(
        async (m) => {
          if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
          if (closed.has(session.id)) return callback(new Error('client went away before the reply'));
          sink.messages.push({
            to: addresses(m.to),
            from: addresses(m.from),
            subject: m.subject ?? '',
            text: m.text ?? '',
            html: typeof m.html === 'string' ? m.html : '',
            messageId: m.messageId ?? '',
            headers: m.headers,
            attachments: m.attachments,
          });
          callback();
        },
        (err: Error) => callback(err),
      );
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  sink.port = (server.server.address() as AddressInfo).port;
  sink.url = `smtp://127.0.0.1:${sink.port}`;
  sink.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  t.teardown(() => sink.close());
  return sink;
}
