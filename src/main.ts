import { loadConfig } from './config.js';
import { openDatabase } from './db/open.js';
import { migrate } from './db/migrate.js';
import { createContext, onShutdown, startWeb } from './server.js';

/** `npm start`: one process for one machine: database (embedded unless DATABASE_URL), migrations, web. */
async function main(): Promise<void> {
  const config = loadConfig();
  const db = await openDatabase(config, 'invoicing');
  await migrate(db.sql);
  const ctx = createContext(config, db);
  const app = await startWeb(ctx);
  app.log.info({ url: config.publicBaseUrl, embeddedDatabase: db.embedded }, 'invoicing API ready');
  onShutdown(async () => {
    await app.close();
    await db.close();
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
