import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const positiveInt = z.coerce.number().int().positive();

const retrySchedule = z
  .string()
  .regex(/^\d+(,\d+)*$/, 'comma-separated whole seconds, e.g. 5,300,1800')
  .transform((s) => s.split(',').map(Number));

// The only reader of process.env: everything else receives a Config.
export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  PUBLIC_BASE_URL: z.url().optional(),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  DATABASE_POOL_SIZE: positiveInt.default(10),
  DATA_DIR: z.string().default('./.data'),
  EMBEDDED_PG_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  TRUST_PROXY: bool.default(false),
  RATE_LIMIT_PER_MINUTE: positiveInt.default(600),
  SMTP_URL: z.string().regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL').optional(),
  EMAIL_FROM: z.string().default('Facturas <facturas@localhost>'),
  ADMIN_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  ENCRYPTION_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters (32 bytes)')
    .optional(),
  EXCHANGE_RATES_URL: z.url().optional(),
  WEBHOOK_RETRY_SCHEDULE: retrySchedule.optional(),
  WEBHOOK_DISABLE_AFTER_FAILURES: positiveInt.default(20),
  WEBHOOK_DISABLE_AFTER_SECONDS: z.coerce.number().int().min(0).default(86400),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: bool.default(false),
  CHECKOUT_TTL_SECONDS: positiveInt.default(86400),
});

export type Config = z.infer<typeof configSchema> & { publicBaseUrl: string };

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = configSchema.safeParse(
    Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')),
  );
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const c = parsed.data;
  const publicBaseUrl = (c.PUBLIC_BASE_URL ?? `http://localhost:${c.PORT}`).replace(/\/+$/, '');
  return { ...c, publicBaseUrl };
}
