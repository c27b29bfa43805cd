import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from './config.js';
import { openDatabase, type Database } from './db/open.js';
import { migrate } from './migrate.js';
import { jobQueues } from '../jobs/index.js';
import { AppError } from './errors.js';
import * as merchants from './merchants/service.js';
import * as dte from './dte/service.js';
import { configureProvider } from './checkout/provider-settings.js';
import { loadSecretBox } from './secret-box.js';
import { setRate } from './rates/service.js';
import { clock, dateInZone } from './clock.js';
import { CURRENCY_RULE, isCurrency } from './money.js';
import type { Sql } from './db/client.js';
import { readEnvFile } from './env-file.js';
import { listOutbox, NO_OUTBOX, outboxDir, outboxListText, outboxMessageText, showOutboxMessage } from './email/outbox-files.js';

const USAGE = `Usage: npm run --silent cli -- <command>

  migrate
  merchants create --name N --email E [--base-currency CLP] [--payment-provider sandbox]
  merchants list
  merchants set-provider --merchant ID --payment-provider sandbox|none
  merchants set-provider --merchant ID --payment-provider webpay --commerce-code C --api-key-env VAR
  merchants set-provider --merchant ID --payment-provider mercadopago --access-token-env VAR --webhook-secret-env VAR
  merchants set-tax-profile --merchant ID --rut R --razon-social S --giro G --direccion D --comuna C --ciudad C
                            [--acteco N] [--resolucion-numero N --resolucion-fecha YYYY-MM-DD] [--sii-env certificacion|produccion]
  merchants set-tax-profile --merchant ID --clear
  merchants set-payment-instructions --merchant ID (--text T | --clear)
  keys create --merchant ID --scopes LIST [--allow-ip CIDR]... [--rate-limit N]
  keys list [--merchant ID]
  keys revoke KEY_ID
  rates set --merchant ID --currency USD --rate 950.25 [--date YYYY-MM-DD]
  dte certificate add --merchant ID --file F.p12 --password-env VAR
  dte caf add --merchant ID --file caf.xml
  outbox list [--json]         development's e-mails ($DATA_DIR/outbox, no SMTP_URL), newest first
  outbox show ID [--json]      one of them: From, To, Subject, Date, attachments, text, HTML,
                               and the .html page to open in a browser

Every command prints JSON; outbox prints text a person reads, or JSON with --json.`;

const options = {
  name: { type: 'string' },
  email: { type: 'string' },
  'base-currency': { type: 'string' },
  'payment-provider': { type: 'string' },
  'commerce-code': { type: 'string' },
  'api-key-env': { type: 'string' },
  'access-token-env': { type: 'string' },
  'webhook-secret-env': { type: 'string' },
  merchant: { type: 'string' },
  scopes: { type: 'string' },
  'allow-ip': { type: 'string', multiple: true },
  'rate-limit': { type: 'string' },
  currency: { type: 'string' },
  rate: { type: 'string' },
  date: { type: 'string' },
  rut: { type: 'string' },
  'razon-social': { type: 'string' },
  giro: { type: 'string' },
  acteco: { type: 'string' },
  direccion: { type: 'string' },
  comuna: { type: 'string' },
  ciudad: { type: 'string' },
  'resolucion-numero': { type: 'string' },
  'resolucion-fecha': { type: 'string' },
  'sii-env': { type: 'string' },
  text: { type: 'string' },
  file: { type: 'string' },
  'password-env': { type: 'string' },
  clear: { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

/** A secret named by the environment variable an option gives: secrets never travel in argv (ps, shell history). */
function fromEnv(values: Values, name: 'api-key-env' | 'access-token-env' | 'webhook-secret-env'): string | undefined {
  const variable = values[name];
  if (variable === undefined) return undefined;
  const value = process.env[variable];
  if (!value) throw AppError.validation([{ path: `--${name}`, message: `the environment variable ${variable} is not set` }]);
  return value;
}

function required(values: Values, name: keyof Values): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw AppError.validation([{ path: `--${name}`, message: 'is required' }]);
  return v;
}

async function run(sql: Sql, [group, action, ...rest]: string[], values: Values): Promise<unknown> {
  switch (`${group} ${action ?? ''}`.trim()) {
    case 'migrate':
      return { applied: await migrate(sql, jobQueues) };
    case 'merchants create':
      return sql.begin((tx) =>
        merchants.createMerchant(tx, {
          name: required(values, 'name'),
          email: required(values, 'email'),
          base_currency: (values['base-currency'] ?? 'CLP') as 'CLP',
          payment_provider: (values['payment-provider'] ?? null) as 'sandbox' | null,
        }),
      );
    case 'merchants list':
      return merchants.listMerchants(sql);
    case 'merchants set-provider': {
      const provider = required(values, 'payment-provider');
      const credentials = {
        commerce_code: values['commerce-code'],
        api_key: fromEnv(values, 'api-key-env'),
        access_token: fromEnv(values, 'access-token-env'),
        webhook_secret: fromEnv(values, 'webhook-secret-env'),
      };
      const given = Object.fromEntries(Object.entries(credentials).filter(([, v]) => v !== undefined));
      return configureProvider(sql, loadSecretBox(loadConfig()), required(values, 'merchant'), provider === 'none' ? null : provider, given);
    }
    case 'merchants set-tax-profile': {
      const merchantId = required(values, 'merchant');
      if (values.clear) return merchants.setTaxProfile(sql, merchantId, null);
      const numero = values['resolucion-numero'];
      return merchants.setTaxProfile(sql, merchantId, {
        rut: required(values, 'rut'),
        razon_social: required(values, 'razon-social'),
        giro: required(values, 'giro'),
        acteco: values.acteco ?? null,
        direccion: required(values, 'direccion'),
        comuna: required(values, 'comuna'),
        ciudad: required(values, 'ciudad'),
        // A number only when it is one: anything else reaches the schema as text and is refused by name.
        resolucion_numero: numero === undefined ? null : /^\d+$/.test(numero) ? Number(numero) : (numero as unknown as number),
        resolucion_fecha: values['resolucion-fecha'] ?? null,
        sii_env: (values['sii-env'] ?? null) as 'certificacion' | null,
      });
    }
    case 'merchants set-payment-instructions': {
      const merchantId = required(values, 'merchant');
      return merchants.setPaymentInstructions(sql, merchantId, values.clear ? null : required(values, 'text'));
    }
    case 'keys create':
      return merchants.createApiKey(sql, {
        merchant_id: required(values, 'merchant'),
        scopes: required(values, 'scopes').split(',').map((s) => s.trim()).filter(Boolean) as ['*'],
        allowed_ips: values['allow-ip'] ?? [],
        rate_limit: values['rate-limit'] === undefined ? null : Number(values['rate-limit']),
      });
    case 'keys list':
      return merchants.listApiKeys(sql, values.merchant);
    case 'keys revoke': {
      const id = rest[0];
      if (!id) throw AppError.validation([{ path: 'KEY_ID', message: 'is required' }]);
      return merchants.revokeApiKey(sql, id);
    }
    case 'rates set': {
      const merchantId = required(values, 'merchant');
      const currency = required(values, 'currency').toUpperCase();
      const rate = required(values, 'rate');
      if (!isCurrency(currency)) throw AppError.validation([{ path: '--currency', message: CURRENCY_RULE }]);
      if (!/^\d+(\.\d+)?$/.test(rate) || Number(rate) <= 0) throw AppError.validation([{ path: '--rate', message: 'must be a positive decimal' }]);
      const merchant = (await merchants.listMerchants(sql)).find((m) => m.id === merchantId);
      if (!merchant) throw AppError.validation([{ path: '--merchant', message: 'no such merchant' }]);
      const date = values.date ?? dateInZone(clock.now(), merchant.timezone);
      if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw AppError.validation([{ path: '--date', message: 'must be YYYY-MM-DD' }]);
      await setRate(sql, merchantId, currency, date, rate);
      return { merchant_id: merchantId, currency, date, rate };
    }
    case 'dte certificate':
    case 'dte caf': {
      if (rest[0] !== 'add') throw AppError.validation([{ path: 'command', message: `unknown command "dte ${action} ${rest[0] ?? ''}"` }], 400, USAGE);
      const merchantId = required(values, 'merchant');
      const file = await readFile(required(values, 'file')).catch(() => {
        throw AppError.validation([{ path: '--file', message: `cannot read ${values.file}` }], 400);
      });
      const config = loadConfig();
      if (action === 'caf') return dte.addCaf(sql, config, loadSecretBox(config), merchantId, file);
      // The password comes from the environment: argv shows in ps and in shell history.
      const variable = required(values, 'password-env');
      const password = process.env[variable];
      if (password === undefined) throw AppError.validation([{ path: '--password-env', message: `the environment variable ${variable} is not set` }], 400);
      return dte.addCertificate(sql, loadSecretBox(config), merchantId, file, password);
    }
    default:
      throw AppError.validation([{ path: 'command', message: `unknown command "${[group, action].filter(Boolean).join(' ')}"` }], 400, USAGE);
  }
}

async function outbox(dir: string, [action, id]: string[], json: boolean): Promise<string> {
  const print = <T>(value: T, text: (v: T) => string) => (json ? `${JSON.stringify(value, null, 2)}\n` : text(value));
  if (action === 'list') return print(await listOutbox(dir), outboxListText);
  if (action === 'show') {
    if (!id) throw AppError.validation([{ path: 'ID', message: 'is required' }]);
    return print(await showOutboxMessage(dir, id), outboxMessageText);
  }
  throw AppError.validation([{ path: 'command', message: `unknown command "${['outbox', action].filter(Boolean).join(' ')}"` }], 400, USAGE);
}

// Async, so a configuration error is a rejection the caller prints as one line, like a database that cannot start.
async function openCliDatabase(): Promise<Database> {
  return openDatabase(loadConfig(), 'invoicing-cli');
}

async function main(): Promise<number> {
  readEnvFile();
  const { values, positionals } = parseArgs({ args: process.argv.slice(2), options, allowPositionals: true, strict: true });
  if (values.help || positionals.length === 0) {
    process.stdout.write(`${USAGE}\n`);
    return values.help ? 0 : 1;
  }
  // The outbox is files: no database to open or migrate for it.
  if (positionals[0] === 'outbox') {
    const config = loadConfig();
    if (config.SMTP_URL) {
      process.stderr.write(`${NO_OUTBOX}\n`);
      return 1;
    }
    process.stdout.write(await outbox(outboxDir(config), positionals.slice(1), values.json === true));
    return 0;
  }
  // A database that cannot start is no command's error: its one line says what to do, as `npm start` prints it.
  const db = await openCliDatabase().catch((err: Error) => {
    process.stderr.write(`${err.message}\n`);
    return null;
  });
  if (!db) return 1;
  try {
    if (positionals[0] !== 'migrate') await migrate(db.sql, jobQueues);
    const out = await run(db.sql, positionals, values);
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  } finally {
    await db.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    const e = err instanceof AppError ? { code: err.code, message: err.message, details: err.details } : { code: 'error', message: (err as Error).message };
    process.stderr.write(`${JSON.stringify({ error: e }, null, 2)}\n`);
    process.exit(1);
  },
);
