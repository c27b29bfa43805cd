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
  /** Resolves once `n` messages have arrived (rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedMail[]>;
  close(): Promise<void>;
}

function addresses(a: AddressObject | AddressObject[] | undefined): string {
  const list = Array.isArray(a) ? a : a ? [a] : [];
  return list.flatMap((x) => x.value.map((v) => v.address ?? '')).join(',');
}

/** A real SMTP server on 127.0.0.1 that parses what it receives; closed when the test ends. */
export async function startSmtpSink(t: { teardown(fn: () => unknown): void }, port = 0): Promise<SmtpSink> {
  const sink: SmtpSink = {
    url: '',
    port: 0,
    messages: [],
    refusing: false,
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
    onData(stream, _session, callback) {
      if (sink.refusing) {
        stream.resume();
        stream.on('end', () => callback(Object.assign(new Error('try again later'), { responseCode: 451 })));
        return;
      }
      simpleParser(stream).then(
        (m) => {
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
