import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { clock } from '../../src/clock.js';
import { readBody, sendJson } from './standin-http.js';

export const MP_ACCESS_TOKEN = 'APP_USR-stand-in-access-token';
export const MP_WEBHOOK_SECRET = 'stand-in-webhook-secret';

export interface MpPreference {
  id: string;
  body: {
    items: { title: string; unit_price: number; currency_id: string }[];
    external_reference: string;
    back_urls: { success: string; failure: string; pending: string };
    auto_return?: string;
    notification_url: string;
    expiration_date_to?: string;
  };
}

export interface MpPayment {
  id: number;
  status: 'approved' | 'rejected' | 'pending' | 'in_process';
  external_reference: string;
  transaction_amount: number;
  currency_id: string;
  preference_id: string;
}

/** How a notification is handed to our app: over HTTP by default, or injected by the test. */
export type Deliver = (url: string, headers: Record<string, string>, body: string) => Promise<number>;

const overHttp: Deliver = async (url, headers, body) => (await fetch(url, { method: 'POST', headers, body })).status;

/**
 * Mercado Pago's Checkout Pro, as far as the official SDK and a customer's browser see it:
 * preferences (POST /checkout/preferences/), payments (GET /v1/payments/{id}, and GET
 * /v1/payments/search by external_reference and status) behind the Bearer access token, and the
 * init_point page where the customer pays, is declined or is left in review; each payment is
 * notified, signed as Mercado Pago signs (x-signature over id, request-id and ts), to the
 * preference's notification_url before the browser is sent to the back URL of its status (as
 * `auto_return: "all"` does). Scriptable: `down` answers 503,
 * `accessToken` is the only token accepted (else 401), `notify` replays.
 */
export async function startMercadoPagoStandIn(t: { teardown(fn: () => unknown): void }) {
  const preferences = new Map<string, MpPreference>();
  const payments = new Map<number, MpPayment>();
  let nextPayment = 1_310_000_000 + Math.floor(Math.random() * 1000) * 1000;
  const state = {
    down: false,
    accessToken: MP_ACCESS_TOKEN,
    webhookSecret: MP_WEBHOOK_SECRET,
    deliver: overHttp,
    /** Every notification sent, with our app's answer. */
    notifications: [] as { paymentId: number; status: number }[],
    calls: [] as string[],
    /** Runs as each API call arrives, before it is answered: a test looks at the database then. */
    onCall: null as null | (() => Promise<void>),
  };

  /** A payment as the API answers it. */
  function resource(p: MpPayment) {
    const detail = { approved: 'accredited', rejected: 'cc_rejected_other_reason', pending: 'pending_waiting_payment', in_process: 'pending_review_manual' }[p.status];
    return { ...p, status_detail: detail, payment_type_id: 'credit_card', payment_method_id: 'visa' };
  }

  /**
   * Sends the payment's notification, signed with `secret` at `ts` (default: now on our app's clock,
   * in milliseconds, as Mercado Pago sends it); our app's HTTP status.
   */
  async function notify(paymentId: number, opts: { secret?: string; ts?: string } = {}): Promise<number> {
    const p = payments.get(paymentId)!;
    const pref = preferences.get(p.preference_id)!;
    const url = new URL(pref.body.notification_url);
    url.searchParams.set('data.id', String(paymentId));
    url.searchParams.set('type', 'payment');
    const requestId = randomUUID();
    const ts = opts.ts ?? String(clock.now().getTime());
    const manifest = `id:${paymentId};request-id:${requestId};ts:${ts};`;
    const v1 = createHmac('sha256', opts.secret ?? state.webhookSecret).update(manifest).digest('hex');
    const body = JSON.stringify({
      action: 'payment.updated',
      api_version: 'v1',
      data: { id: String(paymentId) },
      date_created: new Date().toISOString(),
      id: Date.now(),
      live_mode: false,
      type: 'payment',
      user_id: '123456',
    });
    const status = await state.deliver(url.href, { 'content-type': 'application/json', 'x-signature': `ts=${ts},v1=${v1}`, 'x-request-id': requestId }, body);
    state.notifications.push({ paymentId, status });
    return status;
  }

  /**
   * The customer pays the preference (approved, declined, or left pending / in_process for
   * Mercado Pago to decide later: set the payment's status and `notify` then); the payment is
   * notified (unless `notify` is false: a notification lost on the way), then the back URL of its
   * status returned.
   */
  async function pay(
    preferenceId: string,
    outcome: boolean | MpPayment['status'] = true,
    opts: { notify?: boolean } = {},
  ): Promise<{ payment: MpPayment; notified: number | null; backUrl: string }> {
    const status: MpPayment['status'] = outcome === true ? 'approved' : outcome === false ? 'rejected' : outcome;
    const pref = preferences.get(preferenceId)!;
    const item = pref.body.items[0]!;
    const payment: MpPayment = {
      id: nextPayment++,
      status,
      external_reference: pref.body.external_reference,
      transaction_amount: item.unit_price,
      currency_id: item.currency_id,
      preference_id: preferenceId,
    };
    payments.set(payment.id, payment);
    const notified = opts.notify === false ? null : await notify(payment.id);
    const urls = pref.body.back_urls;
    const back = new URL(status === 'approved' ? urls.success : status === 'rejected' ? urls.failure : urls.pending);
    for (const [k, v] of Object.entries({
      collection_id: String(payment.id),
      collection_status: payment.status,
      payment_id: String(payment.id),
      status: payment.status,
      external_reference: payment.external_reference,
      preference_id: preferenceId,
    })) {
      back.searchParams.set(k, v);
    }
    return { payment, notified, backUrl: back.href };
  }

  async function api(req: IncomingMessage, res: ServerResponse, path: string) {
    state.calls.push(`${req.method} ${path}`);
    await state.onCall?.();
    if (state.down) return sendJson(res, 503, { message: 'service unavailable', error: 'internal_error', status: 503, cause: [] });
    if (req.headers.authorization !== `Bearer ${state.accessToken}`) {
      return sendJson(res, 401, { message: 'invalid access token', error: 'unauthorized', status: 401, cause: [] });
    }
    if (req.method === 'POST' && /^\/checkout\/preferences\/?$/.test(path)) {
      const body = JSON.parse(await readBody(req)) as MpPreference['body'];
      const id = `123456-${randomBytes(8).toString('hex')}`;
      preferences.set(id, { id, body });
      return sendJson(res, 201, { id, ...body, init_point: `${base}/checkout/v1/redirect?pref_id=${id}`, sandbox_init_point: `${base}/checkout/v1/redirect?pref_id=${id}` });
    }
    if (req.method === 'GET' && path === '/v1/payments/search') {
      // The filters the SDK's Payment.search passes as the query; unknown ones are ignored, as Mercado Pago does.
      const query = new URL(req.url ?? '/', base).searchParams;
      const results = [...payments.values()].filter(
        (p) => (!query.has('external_reference') || p.external_reference === query.get('external_reference')) && (!query.has('status') || p.status === query.get('status')),
      );
      return sendJson(res, 200, { paging: { total: results.length, limit: 30, offset: 0 }, results: results.map(resource) });
    }
    const m = /^\/v1\/payments\/(\d+)$/.exec(path);
    if (req.method === 'GET' && m) {
      const p = payments.get(Number(m[1]));
      if (!p) return sendJson(res, 404, { message: 'Payment not found', error: 'not_found', status: 404, cause: [] });
      return sendJson(res, 200, resource(p));
    }
    return sendJson(res, 404, { message: 'not found', error: 'not_found', status: 404, cause: [] });
  }

  // The customer's side: the init_point page and its buttons (approved, rejected, left in review).
  async function page(req: IncomingMessage, res: ServerResponse, _path: string) {
    if (req.method === 'GET') {
      const id = new URL(req.url ?? '/', base).searchParams.get('pref_id') ?? '';
      const pref = preferences.get(id);
      if (!pref) return res.writeHead(404, { 'content-type': 'text/html' }).end('<p>Preferencia no encontrada</p>');
      const item = pref.body.items[0]!;
      const button = (outcome: string, label: string) =>
        `<form method="post" action="/checkout/v1/pay"><input type="hidden" name="pref_id" value="${id}"><input type="hidden" name="outcome" value="${outcome}"><button type="submit">${label}</button></form>`;
      return res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><title>Mercado Pago</title><h1>${item.title}: $${item.unit_price}</h1>${button('approved', 'Pagar')}${button('rejected', 'Pagar con tarjeta rechazada')}${button('in_process', 'Pagar con tarjeta en revisión')}`);
    }
    const fields = new URLSearchParams(await readBody(req));
    const id = fields.get('pref_id') ?? '';
    if (!preferences.has(id)) return res.writeHead(404).end();
    const chosen = fields.get('outcome');
    const { backUrl } = await pay(id, chosen === 'approved' ? true : chosen === 'in_process' || chosen === 'pending' ? chosen : false);
    return res.writeHead(303, { location: backUrl }).end();
  }

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://standin').pathname;
    const handler = path.startsWith('/checkout/v1/') ? page : api;
    handler(req, res, path).catch((err: unknown) => sendJson(res, 500, { message: String(err), status: 500 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));

  return Object.assign(state, { url: base, preferences, payments, pay, notify });
}

export type MercadoPagoStandIn = Awaited<ReturnType<typeof startMercadoPagoStandIn>>;
