import type { AppContext } from './context.js';
import type { Config } from '../config.js';

export const API_PREFIX = '/api/v1/external';

export function apiBase(ctx: AppContext): string {
  return `${ctx.config.publicBaseUrl}${API_PREFIX}`;
}

/** The two bases resources link to, for code that has a Config but no request (jobs). */
export function invoiceUrls(config: Pick<Config, 'publicBaseUrl'>): { apiBase: string; publicBase: string } {
  return { apiBase: `${config.publicBaseUrl}${API_PREFIX}`, publicBase: config.publicBaseUrl };
}

/** True for the external API's paths (the query string, if any, is ignored). */
export function isApiPath(url: string): boolean {
  return url === API_PREFIX || url.startsWith(`${API_PREFIX}/`) || url.startsWith(`${API_PREFIX}?`);
}

// The hosted pages' tokens, wherever a URL carries one (`/i/{token}/pdf`, `/checkout/{token}/pay`).
const TOKEN_IN_PATH = /^\/(i|checkout)\/[^/?#]+/;

/** A URL fit for a log line: a hosted page's token is a bearer secret, so it is masked. */
export function maskTokens(url: string): string {
  return url.replace(TOKEN_IN_PATH, '/$1/[token]');
}
