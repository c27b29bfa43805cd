import type { AppContext } from '../context.js';
import type { Config } from '../config.js';

export const API_PREFIX = '/api/v1/external';

export function apiBase(ctx: AppContext): string {
  return `${ctx.config.publicBaseUrl}${API_PREFIX}`;
}

export function publicInvoiceUrl(ctx: AppContext, token: string): string {
  return `${ctx.config.publicBaseUrl}/i/${token}`;
}

/** The two bases resources link to, for code that has a Config but no request (jobs). */
export function invoiceUrls(config: Pick<Config, 'publicBaseUrl'>): { apiBase: string; publicBase: string } {
  return { apiBase: `${config.publicBaseUrl}${API_PREFIX}`, publicBase: config.publicBaseUrl };
}
