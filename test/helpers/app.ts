import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { loadConfig } from '../../src/config.js';
import { buildApp } from '../../src/app.js';
import { ApiKeyStore } from '../../src/http/auth.js';
import { API_PREFIX } from '../../src/http/urls.js';
import type { AppContext } from '../../src/http/context.js';
import type { Sql } from '../../src/db/client.js';
import * as merchants from '../../src/merchants/service.js';
import type { Scope } from '../../src/http/scopes.js';
import { createTestDatabase } from './db.js';
import { createBoss } from '../../src/queue/boss.js';
import { loadSecretBox } from '../../src/secret-box.js';
import { startWorker, type Worker } from '../../jobs/worker.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface ApiResponse {
  status: number;
  headers: Record<string, string | string[] | number | undefined>;
  body: any;
  raw: string;
}

export interface TestApp {
  app: FastifyInstance;
  ctx: AppContext;
  sql: Sql;
  dbUrl: string;
  /** The real worker (every queue and schedule) in this process, stopped with the test. */
  startWorker(): Promise<Worker>;
  /** A merchant with defaults (CLP, 19 %, es) unless told otherwise. */
  merchant(opts?: { name?: string; base_currency?: string; payment_provider?: 'sandbox' | null }): Promise<{ id: string }>;
  /** A key for the merchant (a new merchant when none is given) with these scopes. */
  key(scopes?: Scope[], opts?: { merchantId?: string; allowed_ips?: string[]; rate_limit?: number }): Promise<{ key: string; id: string; merchantId: string }>;
  /** A request to the external API: path relative to the API prefix. */
  api(method: InjectOptions['method'], path: string, opts?: { key?: string; body?: unknown; headers?: Record<string, string>; raw?: string }): Promise<ApiResponse>;
}

export const TEST_ENV = {
  NODE_ENV: 'test',
  PUBLIC_BASE_URL: 'http://invoicing.test',
  LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
  ENCRYPTION_KEY: '0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0',
  // Tests deliver webhooks to receivers on this machine.
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
};

/** The real app on a database of its own; everything is closed and dropped when the test ends. */
export async function testApp(t: Teardown, env: Record<string, string> = {}, shared?: { sql: Sql; dbUrl: string }): Promise<TestApp> {
  const db = shared ? null : await createTestDatabase();
  const sql = shared?.sql ?? db!.sql;
  const dbUrl = shared?.dbUrl ?? db!.url;
  const config = loadConfig({ ...TEST_ENV, DATABASE_URL: dbUrl, ...env });
  const boss = createBoss(sql, { worker: false });
  boss.on('error', () => {});
  await boss.start();
  const ctx: AppContext = { config, sql, keys: new ApiKeyStore(sql), boss, secrets: loadSecretBox(config) };
  const app = await buildApp(ctx, { logger: process.env.TEST_LOG_LEVEL !== undefined });
  let worker: Worker | null = null;
  t.teardown(async () => {
    await app.close();
    await worker?.stop();
    await boss.stop({ graceful: false, close: false });
    await db?.drop();
  });

  const merchant: TestApp['merchant'] = async (opts = {}) =>
    sql.begin((tx) =>
      merchants.createMerchant(tx, {
        name: opts.name ?? 'Comercial Test SpA',
        email: 'facturacion@test.cl',
        base_currency: (opts.base_currency ?? 'CLP') as 'CLP',
        payment_provider: opts.payment_provider ?? null,
      }),
    );

  return {
    app,
    ctx,
    sql,
    dbUrl,
    merchant,
    async startWorker() {
      worker ??= await startWorker(config, sql);
      return worker;
    },
    async key(scopes = ['*'], opts = {}) {
      const merchantId = opts.merchantId ?? (await merchant()).id;
      const k = await merchants.createApiKey(sql, {
        merchant_id: merchantId,
        scopes,
        allowed_ips: opts.allowed_ips ?? [],
        rate_limit: opts.rate_limit ?? null,
      });
      return { key: k.key, id: k.id, merchantId };
    },
    async api(method, path, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (opts.key) headers['x-api-key'] = opts.key;
      const payload = opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
      if (payload !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
        headers['content-type'] = 'application/json';
      }
      return toApiResponse(await app.inject({ method, url: API_PREFIX + path, headers, ...(payload !== undefined ? { payload } : {}) }));
    },
  };
}

/** An injected response with its body parsed as JSON when it is JSON. */
export function toApiResponse(res: LightMyRequestResponse): ApiResponse {
  let body: unknown = null;
  try {
    body = res.body ? JSON.parse(res.body) : null;
  } catch {
    body = res.body;
  }
  return { status: res.statusCode, headers: res.headers, body, raw: res.body };
}

/** An injected request's answer, body parsed, for requests the `api` helper cannot make (raw URLs, other addresses). */
export async function inject(app: FastifyInstance, opts: InjectOptions): Promise<ApiResponse> {
  return toApiResponse(await app.inject(opts));
}

/** Asserts the one error envelope of the spec. */
export function isEnvelope(body: any): boolean {
  return (
    body !== null &&
    typeof body === 'object' &&
    typeof body.code === 'string' &&
    typeof body.message === 'string' &&
    /^(never|safe|after_seconds:\d+)$/.test(body.retry) &&
    'details' in body &&
    typeof body.request_id === 'string' &&
    typeof body.path === 'string' &&
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(body.timestamp)
  );
}
