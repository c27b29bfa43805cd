import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import { createSql, type Sql } from '../src/db/client.js';
import { startEmbedded } from '../src/db/embedded.js';
import { migrate } from '../src/migrate.js';
import { jobQueues } from '../jobs/index.js';
import * as merchants from '../src/merchants/service.js';

export interface BenchDatabase {
  /** URL of the fresh database the benchmark runs against. */
  url: string;
  name: string;
  /** 'DATABASE_URL' or 'embedded (.data/bench)'. */
  source: string;
  serverVersion: string;
  /** Drops the database and stops the embedded server if we started it. Safe to call twice. */
  cleanup(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * A fresh, migrated database `invoicing_bench_<random>` on DATABASE_URL's server, or on the
 * embedded server of `.data/bench` when DATABASE_URL is not set. Given `teardown`, its drop is
 * registered there.
 */
export async function openBenchDatabase(log: (msg: string) => void, teardown?: (step: () => unknown) => void): Promise<BenchDatabase> {
  let base = process.env.DATABASE_URL;
  let source = 'DATABASE_URL';
  let stopEmbedded: (() => Promise<void>) | null = null;
  if (base) {
    const host = new URL(base).hostname;
    if (!LOOPBACK.has(host)) {
      throw new Error(`DATABASE_URL must point at this machine (127.0.0.1/localhost), not ${host}: the benchmark only targets 127.0.0.1.`);
    }
  } else {
    log('DATABASE_URL not set: starting the embedded server in .data/bench');
    const embedded = await startEmbedded('.data/bench');
    base = embedded.url;
    source = 'embedded (.data/bench)';
    stopEmbedded = () => embedded.stop();
  }

  const admin = postgres(base, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  const name = `invoicing_bench_${randomBytes(4).toString('hex')}`;
  let created = false;
  let done = false;
  const cleanup = async () => {
    if (done) return;
    done = true;
    try {
      if (created) await admin.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    } finally {
      await admin.end({ timeout: 5 }).catch(() => {});
      if (stopEmbedded) await stopEmbedded().catch(() => {});
    }
  };
  try {
    const [{ server_version: serverVersion }] = (await admin`SHOW server_version`) as unknown as [{ server_version: string }];
    await admin.unsafe(`CREATE DATABASE "${name}"`);
    created = true;
    const url = withDatabase(base, name);
    const sql = createSql(url, { max: 1, application: 'invoicing-bench-setup' });
    try {
      await migrate(sql, jobQueues);
    } finally {
      await sql.end({ timeout: 5 });
    }
    teardown?.(async () => {
      await cleanup();
      log(`dropped database ${name}`);
    });
    return { url, name, source, serverVersion, cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

export interface Seed {
  merchantId: string;
  apiKey: string;
}

/** A merchant and a '*' key whose own rate limit is far above what the run can reach. */
export async function seedMerchant(sql: Sql): Promise<Seed> {
  const merchant = await sql.begin((tx) =>
    merchants.createMerchant(tx, { name: 'Comercial Bench SpA', email: 'facturacion@bench.example' }),
  );
  const key = await merchants.createApiKey(sql, {
    merchant_id: merchant.id,
    scopes: ['*'],
    // The limit statement still runs on every request; it just never answers 429.
    rate_limit: 2_000_000_000,
  });
  return { merchantId: merchant.id, apiKey: key.key };
}
