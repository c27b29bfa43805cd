// A real logger's output, and requests written byte for byte to a listening app: what the
// security and hardening tests read to prove what reaches the logs and the wire.
import net from 'node:net';
import { Writable } from 'node:stream';
import { TEST_ENV, type TestApp } from './app.js';
import { ApiKeyStore } from '../../src/http/auth.js';
import { buildApp, type BuildOptions } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { AppContext } from '../../src/http/context.js';

/** Captures a real pino logger's output: each line parsed, Buffers turned back into their text. */
export function logCapture() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const lines = () => chunks.join('').split('\n').filter(Boolean);
  /** Every string a reader of the logs could recover: the text, decoded Buffers, URL-decoded text. */
  const readable = (): string => {
    const out: string[] = [];
    for (const line of lines()) {
      out.push(line);
      try {
        out.push(decodeURIComponent(line));
      } catch {
        /* not URL-encoded text */
      }
      JSON.parse(line, (_k, v) => {
        if (v && typeof v === 'object' && v.type === 'Buffer' && Array.isArray(v.data)) out.push(Buffer.from(v.data).toString('latin1'));
        return v;
      });
    }
    return out.join('\n');
  };
  return { stream, lines, readable };
}

/** The app as `npm start` builds it (a pino logger, at trace: everything it can say), on a real port. */
export async function loggedApp(h: TestApp, env: Record<string, string> = {}, opts: BuildOptions = {}) {
  const logs = logCapture();
  const config = loadConfig({ ...TEST_ENV, DATABASE_URL: h.dbUrl, LOG_LEVEL: 'trace', ...env });
  const ctx: AppContext = { ...h.ctx, config, keys: new ApiKeyStore(h.sql) };
  const app = await buildApp(ctx, { ...opts, logStream: logs.stream });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as net.AddressInfo).port;
  return { app, port, logs };
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** One request written byte for byte to a socket: for what no HTTP client would send. */
export function rawRequest(port: number, request: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no answer within 10 s'));
    }, 10_000);
    socket.on('data', (d) => chunks.push(d));
    // The server may close while the request is still being written: what it answered counts.
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const head = split === -1 ? text : text.slice(0, split);
      const [statusLine, ...headerLines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const l of headerLines) {
        const i = l.indexOf(':');
        if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1] ?? 0), headers, body: split === -1 ? '' : text.slice(split + 4) });
    });
    socket.write(request);
  });
}
