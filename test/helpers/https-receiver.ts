import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { until } from './until.js';

const tlsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'tls');

export interface ReceivedRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  at: number;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Answer only after this long (a slow or hung receiver). */
  delayMs?: number;
}

export interface HttpsReceiver {
  /** `https://localhost:<port><path>`: a name, so the certificate and the SSRF lookup both apply. */
  url(pathname?: string): string;
  received: ReceivedRequest[];
  /** How to answer the n-th request (0-based); 200 "ok" by default. */
  reply(fn: (req: ReceivedRequest, n: number) => Reply): void;
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
}

/**
 * A real HTTPS server with the self-signed certificate of test/helpers/tls, which the test runner
 * trusts through NODE_EXTRA_CA_CERTS, recording every request it gets.
 */
export async function startHttpsReceiver(t: { teardown(fn: () => unknown): void }): Promise<HttpsReceiver> {
  const received: ReceivedRequest[] = [];
  let answer: (req: ReceivedRequest, n: number) => Reply = () => ({ status: 200, body: 'ok' });
  const server = https.createServer(
    { key: readFileSync(path.join(tlsDir, 'receiver.key')), cert: readFileSync(path.join(tlsDir, 'receiver.crt')) },
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const got: ReceivedRequest = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
        const n = received.length;
        received.push(got);
        const r = answer(got, n);
        const send = () => {
          if (res.destroyed) return;
          res.writeHead(r.status, { 'content-type': 'text/plain', ...r.headers });
          res.end(r.body ?? '');
        };
        if (r.delayMs) setTimeout(send, r.delayMs).unref();
        else send();
      });
    },
  );
  await new Promise<void>((resolve) => server.listen(0, resolve));
  const port = (server.address() as AddressInfo).port;
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    url: (pathname = '/hook') => `https://localhost:${port}${pathname}`,
    received,
    reply(fn) {
      answer = fn;
    },
    waitFor: (count, timeoutMs = 20_000) => until(`${count} requests at the receiver`, () => received.length >= count && received, timeoutMs),
  };
}
