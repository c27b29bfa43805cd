import type { LightMyRequestResponse } from 'fastify';
import * as merchants from '../../src/merchants/service.js';
import type { TestApp } from './app.js';

/** The legal profile the tests print: 76.086.428-5 is a RUT with a valid check digit. */
export const LEGAL = {
  rut: '76.086.428-5',
  razon_social: 'Librería Andes SpA',
  giro: 'Venta al por menor de libros',
  direccion: 'Av. Providencia 1234, oficina 56',
  comuna: 'Providencia',
  ciudad: 'Santiago',
};

/**
 * A merchant with a key: `sandbox` can charge, null cannot (it may have payment instructions);
 * with its legal profile unless told otherwise.
 */
export async function seller(
  h: TestApp,
  opts: { provider?: 'sandbox' | null; instructions?: string | null; legal?: boolean; name?: string } = {},
) {
  const m = await h.merchant({ name: opts.name ?? 'Librería Andes', payment_provider: opts.provider === undefined ? 'sandbox' : opts.provider });
  if (opts.legal !== false) await merchants.setTaxProfile(h.sql, m.id, LEGAL);
  if (opts.instructions) await merchants.setPaymentInstructions(h.sql, m.id, opts.instructions);
  const { key } = await h.key(['*'], { merchantId: m.id });
  return { merchantId: m.id, key };
}

let seq = 0;

export interface SentInvoice {
  invoice_id: string;
  invoice_number: string;
  public_url: string;
  status: string;
}

/** A sent invoice of 2 × 5000 + 19 % (total $11.900) for a client with a RUT. */
export async function sentInvoice(h: TestApp, key: string, extra: Record<string, unknown> = {}): Promise<SentInvoice> {
  seq += 1;
  const res = await h.api('POST', '/invoices', {
    key,
    body: {
      client: { name: `Lectora ${seq}`, email: `lectora${seq}@example.cl`, rut: '12345678-5' },
      due_date: '2099-12-31',
      items: [{ description: 'Libros de noviembre', quantity: 2, unit_price: 5000 }],
      send_immediately: true,
      ...extra,
    },
  });
  if (res.status !== 201) throw new Error(`invoice create: ${res.status} ${res.raw}`);
  return res.body as SentInvoice;
}

export const pathOf = (url: string) => new URL(url).pathname;

/** The Pay form of a hosted invoice page, or null when it has none. */
export function payFormOf(html: string): { action: string; csrf: string; label: string } | null {
  const m = /<form method="post" action="([^"]+\/pay)">\s*<input type="hidden" name="csrf_token" value="([^"]+)">\s*<button[^>]*>([^<]+)<\/button>/.exec(html);
  return m ? { action: m[1]!, csrf: m[2]!, label: m[3]! } : null;
}

/** Submits a page's form as a browser on our own page would (same-origin), or with the headers given. */
export async function submitForm(
  h: TestApp,
  form: { action: string; csrf: string },
  opts: { csrf?: string; headers?: Record<string, string> } = {},
): Promise<LightMyRequestResponse> {
  return h.app.inject({
    method: 'POST',
    url: pathOf(form.action),
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin', origin: 'null', ...opts.headers },
    payload: new URLSearchParams({ csrf_token: opts.csrf ?? form.csrf }).toString(),
  });
}

/** The text a person reads on a page: tags dropped, entities of our escaping decoded, spaces folded. */
export function visibleText(html: string): string {
  return html
    .replace(/<style>[\s\S]*?<\/style>/g, ' ')
    .replace(/<title>[\s\S]*?<\/title>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#x27;/g, "'")
    .replace(/&#x3D;/g, '=')
    .replace(/\s+/g, ' ')
    .trim();
}
