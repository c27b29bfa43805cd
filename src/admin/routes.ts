import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { fastifyTRPCPlugin, type FastifyTRPCPluginOptions } from '@trpc/server/adapters/fastify';
import type { AppContext } from '../context.js';
import { templatesDir } from '../paths.js';
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

// The browser script sits beside this module: console.ts under tsx, console.js in the compiled
// dist/ build. Either way esbuild bundles it with @trpc/client from node_modules.
const here = fileURLToPath(import.meta.url);
const consoleEntry = path.join(path.dirname(here), `console${path.extname(here)}`);

let script: Promise<string> | null = null;

/**
 * Bundled on first request and kept: `npm start` and the Procfile's `node dist/...` serve it with
 * no build step of their own, and a process nobody opens the console on never loads esbuild.
 */
function consoleScript(): Promise<string> {
  script ??= (async () => {
    const { build } = await import('esbuild');
    const out = await build({
      entryPoints: [consoleEntry],
      bundle: true,
      write: false,
      format: 'iife',
      platform: 'browser',
      target: 'es2020',
      minify: true,
      legalComments: 'none',
      logLevel: 'silent',
    });
    return out.outputFiles[0]!.text;
  })().catch((err: unknown) => {
    script = null;
    throw err;
  });
  return script;
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
 * tRPC at /admin/trpc and the support console at /admin (decisions §1). Without ADMIN_TOKEN
 * nothing is registered: every /admin path is the app's ordinary 404, as if it did not exist.
 */
export function registerAdmin(app: FastifyInstance, ctx: AppContext): void {
  if (!ctx.config.ADMIN_TOKEN) return;
  app.register(
    async (admin) => {
      admin.addHook('onSend', async (_request, reply) => {
        reply.headers(SECURITY_HEADERS);
      });

      await admin.register(fastifyTRPCPlugin, {
        prefix: '/trpc',
        trpcOptions: {
          router: appRouter,
          createContext: ({ req }) => ({ app: ctx, authorization: req.headers.authorization }),
          onError: ({ error, path: procedure, req }) => {
            if (appErrorOf(error).status >= 500) req.log.error({ err: error.cause ?? error, procedure }, 'admin procedure failed');
          },
        } satisfies FastifyTRPCPluginOptions<AppRouter>['trpcOptions'],
      });

      admin.get('/', async (_request, reply) => reply.type('text/html; charset=utf-8').send(await template('index.html')));
      admin.get('/console.css', async (_request, reply) => reply.type('text/css; charset=utf-8').send(await template('console.css')));
      admin.get('/console.js', async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(await consoleScript()));
    },
    { prefix: '/admin' },
  );
}
