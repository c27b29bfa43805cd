import type { FastifyInstance, FastifyRequest } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../errors.js';

/**
 * A stopping web process (docs/decisions.md §13): once close() begins, the requests already
 * begun run to their end while the server keeps listening, and every new one, on a new connection
 * or a kept-alive one, is answered 503 `service_unavailable` with `Connection: close`. The server
 * stops listening when the last begun request has ended, or after `capMs`, within the platform's
 * grace period.
 */
export function registerDrain(app: FastifyInstance, capMs: number): void {
  let closing = false;
  const begun = new Set<FastifyRequest>();
  let drained: (() => void) | null = null;
  const ended = (request: FastifyRequest) => {
    if (begun.delete(request) && begun.size === 0) drained?.();
  };

  app.addHook('onRequest', async (request, reply) => {
    if (closing) {
      reply.header('Connection', 'close');
      throw new AppError('service_unavailable', 'The server is restarting; retry shortly.');
    }
    begun.add(request);
  });
  app.addHook('onResponse', async (request) => ended(request));
  app.addHook('onRequestAbort', async (request) => ended(request));
  app.addHook('preClose', async () => {
    closing = true;
    if (begun.size === 0) return;
    const idle = new Promise<void>((resolve) => (drained = resolve));
    const cap = new AbortController();
    await Promise.race([idle, sleep(capMs, undefined, { signal: cap.signal }).catch(() => {})]);
    cap.abort();
  });
}
