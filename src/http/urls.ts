import type { AppContext } from '../context.js';

export const API_PREFIX = '/api/v1/external';

export function apiBase(ctx: AppContext): string {
  return `${ctx.config.publicBaseUrl}${API_PREFIX}`;
}

export function publicInvoiceUrl(ctx: AppContext, token: string): string {
  return `${ctx.config.publicBaseUrl}/i/${token}`;
}
