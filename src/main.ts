import { loadConfig } from './config.js';
import { readEnvFile } from './env-file.js';
import { anyMerchant } from './merchants/queries.js';
import { startupGuide } from './startup-guide.js';
import { openDatabase, openQueuePool } from './db/open.js';
import { migrate } from './migrate.js';
import { closeContext, createContext, startWeb } from './server.js';
import { onShutdown } from './shutdown.js';
import { startWorker } from '../jobs/worker.js';
import { jobQueues } from '../jobs/index.js';

/** `npm start`: one process for one machine: database (embedded unless DATABASE_URL), migrations, web and worker. */
async function main(): Promise<void> {
  readEnvFile();
  const config = loadConfig();
  const db = await openDatabase(config, 'invoicing');
  await migrate(db.sql, jobQueues);
  const ctx = await createContext(config, db);
  const queueSql = openQueuePool(db, config, 'invoicing-queue');
  const worker = await startWorker(config, db.sql, { queueSql });
  const app = await startWeb(ctx);
  app.log.info({ url: config.publicBaseUrl, embeddedDatabase: db.embeddedDataDir, outbox: config.SMTP_URL ? null : `${config.DATA_DIR}/outbox` }, 'invoicing API ready');
  process.stdout.write(startupGuide({ config, embeddedDataDir: db.embeddedDataDir, hasMerchant: await anyMerchant(db.sql) }));
  onShutdown(async () => {
    await app.close();
    await worker.stop();
    await queueSql.end({ timeout: 5 });
    await closeContext(ctx);
    await db.close();
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
