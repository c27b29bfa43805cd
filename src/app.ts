import Fastify, { type ConnectionError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Writable } from 'node:stream';
import type { AppContext } from './http/context.js';
import { AppError } from './errors.js';
import { registerApi } from './http/api.js';
import { registerDrain } from './http/drain.js';
import { unstorableJson } from './http/validation.js';
import { envelopeOf, sendError, toAppError } from './http/envelope.js';
import { migrationsCurrent } from './migrate.js';
import { apiRoutes } from './routes.js';
import { registerDocs } from './docs/routes.js';
import { registerPublicPages } from './public/routes.js';
import { registerCheckoutPages } from './public/checkout-page.js';
import { registerProviderNotifications } from './checkout/notification-routes.js';
import { configureGateways } from './checkout/providers/registry.js';
import { registerHostedPageLimit } from './public/page-limit.js';
import { registerAdmin } from './admin/routes.js';
import { API_PREFIX, isApiPath, maskTokens } from './http/urls.js';
import { loggerOptions } from './logger.js';
import { SHUTDOWN_GRACE_MS } from './shutdown.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const ONE_MIB = 1024 * 1024;
// docs/decisions.md §8: a body dripped a byte at a time must not hold a connection for minutes.
export const REQUEST_TIMEOUT_MS = 30_000;
// Node looks for expired requests only this often (30 s by default, so a 30 s limit could
// fire at 60 s).
const TIMEOUT_CHECK_MS = 1_000;
// A year, the floor browsers' preload lists ask for.
const HSTS = 'max-age=31536000; includeSubDomains';
// Requests begun before a SIGTERM get this long to end; the rest of the grace period closes the
// pools and exits.
const DRAIN_CAP_MS = SHUTDOWN_GRACE_MS - 5_000;

export interface BuildOptions {
  logger?: boolean;
  /** Tests shorten the 30 s request timeout to watch it fire. */
  requestTimeoutMs?: number;
  /** Where log lines go instead of stdout: tests read them to prove no secret is ever logged. */
  logStream?: Writable;
}

/**
 * A request Node's HTTP parser refused before Fastify saw it: headers over 16 KiB (431) or
 * malformed framing (400). Fastify's default handler logs the bytes received (`rawPacket`, with
 * X-API-Key and Authorization in it) and answers outside the envelope; this logs only the error
 * code and answers with the envelope (docs/decisions.md §13). There is no request yet, so no route, key or
 * rate-limit window: the request id is a fresh one.
 */
function clientError(this: FastifyInstance, err: ConnectionError, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  this.log.debug({ code: err.code }, 'malformed request refused');
  const refused =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new AppError('request_timeout', `The request did not arrive within ${REQUEST_TIMEOUT_MS / 1000} s.`)
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? AppError.validation([{ path: 'headers', message: 'The request line and headers exceed 16 KiB.' }], 431, 'The request line and headers exceed 16 KiB.')
        : AppError.validation([{ path: 'request', message: 'Malformed HTTP request.' }], 400, 'Malformed HTTP request.');
  const status = refused.status;
  const requestId = randomUUID();
  const packet: unknown = err.rawPacket;
  const path = /^[A-Z]+ ([^?\s]*)/.exec(Buffer.isBuffer(packet) ? packet.toString('latin1', 0, 17 * 1024) : '')?.[1] ?? '';
  const body = JSON.stringify(envelopeOf(refused, requestId, path));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * The request as a log line shows it: the hosted pages' tokens are bearer secrets (whoever has
 * one sees the invoice or pays it), so `/i/{token}` and `/checkout/{token}` are logged masked.
 */
function requestLogLine(req: FastifyRequest) {
  return { method: req.method, url: maskTokens(req.url), host: req.host, remoteAddress: req.ip, remotePort: req.socket?.remotePort };
}

function trustHops(hops: number): false | ((addr: string, i: number) => boolean) {
  return hops === 0 ? false : (_addr, i) => i < hops;
}

export async function buildApp(ctx: AppContext, opts: BuildOptions = {}): Promise<FastifyInstance> {
  configureGateways(ctx.config);
  const https = ctx.config.publicBaseUrl.startsWith('https:');
  /** The headers every answer carries, whatever route or error produced it. */
  const answerHeaders = (request: FastifyRequest, reply: FastifyReply) => {
    // docs/decisions.md §19: no answer is read as anything but the type it declares.
    reply.header('X-Content-Type-Options', 'nosniff');
    // The create and rotate answers carry secrets, and every answer is one merchant's data.
    if (isApiPath(request.url) && !reply.hasHeader('cache-control')) reply.header('Cache-Control', 'no-store');
    if (https && String(reply.getHeader('content-type') ?? '').startsWith('text/html')) reply.header('Strict-Transport-Security', HSTS);
  };
  const app = Fastify({
    logger:
      opts.logger === false
        ? false
        : {
            ...loggerOptions(ctx.config),
            serializers: { req: requestLogLine },
            ...(opts.logStream ? { stream: opts.logStream } : {}),
          },
    bodyLimit: ONE_MIB,
    requestTimeout: opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
    http: { connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, opts.requestTimeoutMs ?? TIMEOUT_CHECK_MS), headersTimeout: opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS },
    // proxy-addr asks about the socket's peer (i = 0), then each X-Forwarded-For entry from the
    // right: trusting exactly `hops` of them makes the next one the client. (A number here would
    // trust no hop at all in this Fastify.)
    trustProxy: trustHops(ctx.config.TRUST_PROXY),
    return503OnClosing: false,
    clientErrorHandler: clientError,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    // Errors the router raises before any hook runs (bad percent-encoding, an over-long path
    // parameter) get the one envelope too (docs/decisions.md §13).
    frameworkErrors: (err, request, reply) => {
      // A URL the router could not read: no hook runs for it, so its headers are set here.
      reply.header('X-Request-Id', request.id);
      answerHeaders(request, reply);
      return sendError(reply, toAppError(err));
    },
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('X-Request-Id', request.id);
  });
  registerDrain(app, DRAIN_CAP_MS);
  app.addHook('onSend', async (request, reply, payload) => {
    answerHeaders(request, reply);
    return payload;
  });

  // An empty body is "no body" (POST /send has none); anything else must be valid JSON.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, raw, done) => {
    const text = String(raw);
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return done(AppError.validation([{ path: 'body', message: 'malformed JSON' }], 400, 'Malformed JSON body.'), undefined);
    }
    const unstorable = unstorableJson(parsed);
    if (unstorable) return done(AppError.validation([unstorable]), undefined);
    done(null, parsed);
  });

  app.setErrorHandler((err, request, reply) => {
    const appErr = toAppError(err);
    if (appErr.status >= 500) request.log.error({ err }, 'request failed');
    return sendError(reply, appErr);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new AppError('route_not_found', `No route ${request.method} ${request.url.split('?')[0]}.`)),
  );

  // Whoever opens the server's address in a browser wants the reference.
  app.get('/', async (_request, reply) => reply.redirect(`${API_PREFIX}/docs`, 302));
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ready = await migrationsCurrent(ctx.sql).catch(() => false);
    if (!ready) throw new AppError('service_unavailable', 'Database unreachable or migrations pending.');
    return reply.send({ status: 'ready' });
  });

  registerApi(app, ctx, apiRoutes);
  registerHostedPageLimit(app);
  registerDocs(app, ctx, apiRoutes);
  registerPublicPages(app, ctx);
  registerCheckoutPages(app, ctx);
  registerProviderNotifications(app, ctx);
  registerAdmin(app, ctx);
  return app;
}
