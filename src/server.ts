import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { loadConfig, type Config } from './config.js';
import { openDatabase, type Database } from './db/open.js';
import { buildApp } from './app.js';
import { ApiKeyStore } from './http/auth.js';
import type { AppContext } from './http/context.js';
import { createBoss } from './queue/boss.js';
import { loadSecretBox } from './secret-box.js';
import { createLogger } from './logger.js';
import { onShutdown } from './shutdown.js';
import { readEnvFile } from './env-file.js';

/** The web side's context: a pg-boss handle that only sends (no workers, no timers). */
export async function createContext(config: Config, db: Database): Promise<AppContext> {
  const secrets = loadSecretBox(config);
  const boss = createBoss(db.sql, { worker: false });
  // Before Fastify's logger exists, and with the same settings: one JSON line like any other.
  const log = createLogger(config);
  boss.on('error', (err) => log.error({ err }, 'pg-boss error'));
  await boss.start();
  return { config, sql: db.sql, keys: new ApiKeyStore(db.sql), boss, secrets };
}

export async function closeContext(ctx: AppContext): Promise<void> {
  await ctx.boss.stop({ graceful: false, close: false });
}

export async function startWeb(ctx: AppContext): Promise<FastifyInstance> {
  const app = await buildApp(ctx);
  await app.listen({ port: ctx.config.PORT, host: ctx.config.HOST });
  return app;
}

async function main(): Promise<void> {
  readEnvFile();
  const config = loadConfig();
  const db = await openDatabase(config, 'invoicing-web');
  const ctx = await createContext(config, db);
  const app = await startWeb(ctx);
  onShutdown(async () => {
    await app.close();
    await closeContext(ctx);
    await db.close();
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
