import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const positiveInt = z.coerce.number().int().positive();

/** libpq's sslmode values, weakest first (src/db/tls.ts reads them from DATABASE_URL too). */
export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;

// The only reader of process.env (besides libpq's PG* variables, which createSql applies to every
// connection): everything else receives a Config.
export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().default('0.0.0.0'),
  PUBLIC_BASE_URL: z.url().optional(),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  DATABASE_POOL_SIZE: positiveInt.default(10),
  DATA_DIR: z.string().default('./.data'),
  EMBEDDED_PG_PORT: z.coerce.number().int().min(1).max(65535).optional(),
  // Checked here with the rest at start-up; src/db/tls.ts applies them (libpq's names and values).
  PGSSLMODE: z.enum(SSL_MODES).optional(),
  PGSSLROOTCERT: z.string().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // docs/decisions.md §9: the number of proxies in front of the web process (`true` is Heroku's one
  // router); the client address is the X-Forwarded-For entry that many places from the right.
  TRUST_PROXY: z
    .union([bool, z.string().regex(/^\d+$/, 'must be true, false or a number of proxy hops').transform(Number)])
    .transform((v) => (v === true ? 1 : v === false ? 0 : v))
    .pipe(z.number().int().min(0).max(10))
    .default(0),
  RATE_LIMIT_PER_MINUTE: positiveInt.default(600),
  // docs/decisions.md §8: requests of one key in flight at once in a web process; one more is a 429.
  API_CONCURRENCY_PER_KEY: positiveInt.default(10),
  SMTP_URL: z.string().regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL').optional(),
  EMAIL_FROM: z.string().default('Facturas <facturas@localhost>'),
  EXCHANGE_RATES_URL: z.url().optional(),
  // docs/decisions.md §16: the gateways' REST APIs, Transbank's production host and Mercado Pago's API
  // unless told otherwise (Transbank's integration host, or a test's stand-in).
  WEBPAY_BASE_URL: z.url().optional(),
  MERCADOPAGO_BASE_URL: z.url().optional(),
  // 32 bytes as 64 hex characters or base64: it seals webhook secrets at rest.
  ENCRYPTION_KEY: z
    .string()
    .refine((v) => decodeKey(v) !== null, 'must be 32 bytes as 64 hex characters or base64')
    .optional(),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\s*\d+(\s*,\s*\d+)*\s*$/, 'must be seconds separated by commas, e.g. 5,300,1800')
    .transform((v) => v.split(',').map((n) => Number(n.trim())))
    .optional(),
  WEBHOOK_DISABLE_AFTER_FAILURES: positiveInt.default(20),
  WEBHOOK_DISABLE_AFTER_SECONDS: z.coerce.number().int().min(0).default(86_400),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: bool.default(false),
  // docs/decisions.md §18: how long events, their deliveries and attempts are kept; recover reaches no
  // further back.
  EVENT_RETENTION_DAYS: z.coerce.number().int().min(7).default(30),
  // docs/decisions.md §11: a checkout session can be paid for 24 hours unless told otherwise.
  CHECKOUT_TTL_SECONDS: positiveInt.default(86_400),
  // docs/decisions.md §15: the SII certificate whose key signs CAFs (PEM or DER). Unset: the SII's
  // published certificate of the CAF's environment (src/dte/sii-certs).
  SII_CERT_FILE: z.string().min(1).optional(),
  // docs/decisions.md §15: where SII's web services are. Unset: each merchant's environment picks
  // maullin.sii.cl (certificación) or palena.sii.cl (producción); tests point it at a stand-in.
  SII_BASE_URL: z.url().optional(),
  // docs/decisions.md §20: the SII's boleta REST service (seed, token, status) and its upload host. Unset:
  // apicert.sii.cl and pangal.sii.cl (certificación) or api.sii.cl and rahue.sii.cl (producción).
  SII_BOLETA_API_URL: z.url().optional(),
  SII_BOLETA_UPLOAD_URL: z.url().optional(),
  // Unset: the admin router and console answer 404, as if they did not exist.
  ADMIN_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
});

/** ENCRYPTION_KEY's bytes, or null when it is not exactly 32 bytes in hex or base64. */
export function decodeKey(value: string): Buffer | null {
  const bytes = /^[0-9a-fA-F]{64}$/.test(value) ? Buffer.from(value, 'hex') : Buffer.from(value, 'base64');
  return bytes.length === 32 ? bytes : null;
}

export type Config = z.infer<typeof configSchema> & { publicBaseUrl: string };

export class ConfigError extends Error {
  override name = 'ConfigError';
}

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
