import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { fastifyTRPCPlugin, type FastifyTRPCPluginOptions } from '@trpc/server/adapters/fastify';
import type { AppContext } from '../http/context.js';
import { templatesDir } from '../paths.js';
import { consoleBundlePath } from './console-bundle.js';
import { appErrorOf } from './errors.js';
import { appRouter, type AppRouter } from './router.js';

// The page runs only its own script and style from this origin and talks only to this origin; no
// other site may frame it, and no URL of it is handed on as a referrer.
const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'X-Robots-Tag': 'noindex, nofollow',
} as const;

/** The console's bundled browser script; a start without it says how to make it rather than serving a broken page. */
async function consoleScript(): Promise<string> {
  try {
    return await readFile(consoleBundlePath, 'utf8');
  } catch {
    throw new Error(`ADMIN_TOKEN is set but the admin console is not built (${path.relative(process.cwd(), consoleBundlePath)}): run \`npm run build\``);
  }
}

const files = new Map<string, Promise<string>>();

function template(name: string): Promise<string> {
  let file = files.get(name);
  if (!file) {
    file = readFile(path.join(templatesDir, 'admin', name), 'utf8');
    files.set(name, file);
  }
  return file;
}

/**
 * tRPC at /admin/trpc and the support console at /admin (docs/decisions.md §1). Without ADMIN_TOKEN
 * nothing is registered: every /admin path is the app's ordinary 404, as if it did not exist.
 */
export function registerAdmin(app: FastifyInstance, ctx: AppContext): void {
  if (!ctx.config.ADMIN_TOKEN) return;
  app.register(
    async (admin) => {
      const script = await consoleScript();
      admin.addHook('onSend', async (_request, reply) => {
        reply.headers(SECURITY_HEADERS);
      });

      await admin.register(fastifyTRPCPlugin, {
        prefix: '/trpc',
        trpcOptions: {
          router: appRouter,
          createContext: ({ req, res }) => ({
            app: ctx,
            authorization: req.headers.authorization,
            http: { address: req.ip, log: req.log, header: (name: string, value: string) => void res.header(name, value), refusalCounted: false },
          }),
          onError: ({ error, path: procedure, req }) => {
            if (appErrorOf(error).status >= 500) req.log.error({ err: error.cause ?? error, procedure }, 'admin procedure failed');
          },
        } satisfies FastifyTRPCPluginOptions<AppRouter>['trpcOptions'],
      });

      admin.get('/', async (_request, reply) => reply.type('text/html; charset=utf-8').send(await template('index.html')));
      admin.get('/console.css', async (_request, reply) => reply.type('text/css; charset=utf-8').send(await template('console.css')));
      admin.get('/console.js', async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(script));
    },
    { prefix: '/admin' },
  );
}
