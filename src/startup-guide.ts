// What `npm start` tells a person, once, in plain words beside the JSON log: where to go next.
import path from 'node:path';
import type { Config } from './config.js';
import { API_PREFIX } from './http/urls.js';

export interface StartupFacts {
  config: Pick<Config, 'publicBaseUrl' | 'SMTP_URL' | 'DATA_DIR' | 'ADMIN_TOKEN'>;
  /** Where the embedded database keeps its data; null on DATABASE_URL's server. */
  embeddedDataDir: string | null;
  hasMerchant: boolean;
}

export function startupGuide({ config, embeddedDataDir, hasMerchant }: StartupFacts): string {
  const base = config.publicBaseUrl;
  const lines = [
    '',
    `Invoicing API ready at ${base}`,
    `  Reference:  ${base}${API_PREFIX}/docs (also …/docs/openapi.json and …/docs/llms.txt)`,
    `  Database:   ${embeddedDataDir ? `embedded PostgreSQL, its data in ${embeddedDataDir}` : 'the server of DATABASE_URL'}`,
    `  E-mails:    ${config.SMTP_URL ? 'sent through SMTP_URL' : `not sent: written to ${path.resolve(config.DATA_DIR, 'outbox')} (read them with npm run --silent cli -- outbox list)`}`,
    config.ADMIN_TOKEN
      ? `  Console:    ${base}/admin (sign in with ADMIN_TOKEN)`
      : '  Console:    off; set ADMIN_TOKEN (e.g. in .env) and restart to open it at /admin',
  ];
  if (!hasMerchant) {
    lines.push(
      '',
      'No merchant yet. Make the first one and its API key (the key is shown once):',
      '  npm run --silent cli -- merchants create --name "Comercial Andes SpA" --email facturacion@andes.cl',
      "  npm run --silent cli -- keys create --merchant MERCHANT_ID --scopes '*'",
    );
  }
  return `${lines.join('\n')}\n\n`;
}
