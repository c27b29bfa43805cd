import type { FastifyInstance } from 'fastify';
import { secondsUntilReset } from '../http/rate-limit.js';
import { sendTooManyPage } from './routes.js';

// docs/decisions.md §8: a person opens an invoice or a payment page a few times; a script guessing
// tokens or hammering the PDF opens it thousands of times.
export const HOSTED_PAGES_PER_MINUTE = 120;

const HOSTED_PAGE = /^\/(i|checkout)\//;

/**
 * Hosted invoice and checkout pages are counted per client address in the API's shared
 * one-minute windows (a bucket of their own); over the limit a browser gets a plain 429 page.
 */
export function registerHostedPageLimit(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!HOSTED_PAGE.test(request.url)) return;
    const state = await app.rateLimiter.hit(`page:${request.ip}`, HOSTED_PAGES_PER_MINUTE);
    if (state.exceeded) return sendTooManyPage(request, reply, secondsUntilReset(state));
  });
}
