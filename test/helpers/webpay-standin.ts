import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody, sendJson } from './standin-http.js';

// The REST paths transbank-sdk calls (ApiConstants.WEBPAY_ENDPOINT), and the form the customer is sent to.
const API = '/rswebpaytransaction/api/webpay/v1.2/transactions';
const FORM = '/webpayserver/initTransaction';

export const WEBPAY_COMMERCE_CODE = '597055555532';
export const WEBPAY_API_KEY = 'stand-in-secret-key';

export interface WebpayTransaction {
  token: string;
  buy_order: string;
  session_id: string;
  amount: number;
  return_url: string;
  /** What the customer did on the form: nothing yet, paid (approved or declined at the bank), or left. */
  form: 'pending' | 'approved' | 'declined' | 'abandoned';
  /** Set once committed: AUTHORIZED or FAILED. */
  status: 'INITIALIZED' | 'AUTHORIZED' | 'FAILED';
  /** The form's time ran out, or the transaction is too old: commit answers 422. */
  expired: boolean;
  commits: number;
}

/**
 * Transbank's Webpay Plus, as far as the official SDK and a customer's browser see it: create,
 * commit (PUT) and status (GET) under its REST path with its key headers, and a form page where
 * the customer pays, is declined or leaves, sent back to the return URL by GET as Webpay does.
 * Scriptable: `down` answers 503, `credentials` are the only ones it accepts (else 401),
 * `commitGate` holds commits so tests can overlap them, and `loseCommitAnswers` commits and then
 * resets the connection instead of answering.
 */
export async function startWebpayStandIn(t: { teardown(fn: () => unknown): void }) {
  const transactions = new Map<string, WebpayTransaction>();
  const state = {
    down: false,
    credentials: { commerceCode: WEBPAY_COMMERCE_CODE, apiKey: WEBPAY_API_KEY },
    commitGate: null as Promise<void> | null,
    /** How many commits to make and then lose the answer of (the connection reset): a commit whose answer never came back. */
    loseCommitAnswers: 0,
    /** Every API call, as `METHOD path`. */
    calls: [] as string[],
    /** Runs as each API call arrives, before it is answered: a test looks at the database then. */
    onCall: null as null | (() => Promise<void>),
  };

  function answer(tx: WebpayTransaction) {
    const paid = tx.status === 'AUTHORIZED';
    return {
      vci: paid ? 'TSY' : 'TSN',
      amount: tx.amount,
      status: tx.status,
      buy_order: tx.buy_order,
      session_id: tx.session_id,
      card_detail: { card_number: '6623' },
      accounting_date: '1122',
      transaction_date: new Date().toISOString(),
      authorization_code: paid ? '1213' : '000000',
      payment_type_code: 'VN',
      response_code: paid ? 0 : -1,
      installments_number: 0,
    };
  }

  /** Where the form sends the customer back for what they did there (Webpay's GET return). */
  function returnUrl(tx: WebpayTransaction, what: 'paid' | 'abandoned' | 'timeout'): string {
    const url = new URL(tx.return_url);
    if (what === 'paid') url.searchParams.set('token_ws', tx.token);
    if (what === 'abandoned') url.searchParams.set('TBK_TOKEN', tx.token);
    url.searchParams.set('TBK_ORDEN_COMPRA', tx.buy_order);
    url.searchParams.set('TBK_ID_SESION', tx.session_id);
    if (what === 'paid') {
      url.searchParams.delete('TBK_ORDEN_COMPRA');
      url.searchParams.delete('TBK_ID_SESION');
    }
    return url.href;
  }

  async function api(req: IncomingMessage, res: ServerResponse, path: string) {
    state.calls.push(`${req.method} ${path}`);
    await state.onCall?.();
    if (state.down) return sendJson(res, 503, { error_message: 'Service Unavailable' });
    if (req.headers['tbk-api-key-id'] !== state.credentials.commerceCode || req.headers['tbk-api-key-secret'] !== state.credentials.apiKey) {
      return sendJson(res, 401, { error_message: 'Not Authorized' });
    }
    if (req.method === 'POST' && path === API) {
      const body = JSON.parse(await readBody(req)) as { buy_order: string; session_id: string; amount: number; return_url: string };
      if (!body.buy_order || body.buy_order.length > 26) return sendJson(res, 422, { error_message: 'Invalid value for parameter: buy_order' });
      const token = `01ab${randomBytes(30).toString('hex')}`;
      transactions.set(token, { token, ...body, form: 'pending', status: 'INITIALIZED', expired: false, commits: 0 });
      return sendJson(res, 200, { token, url: `${base}${FORM}` });
    }
    const tx = transactions.get(decodeURIComponent(path.slice(API.length + 1)));
    if (!tx) return sendJson(res, 422, { error_message: 'Invalid value for parameter: token' });
    if (req.method === 'GET') return sendJson(res, 200, answer(tx));
    if (req.method === 'PUT') {
      if (state.commitGate) await state.commitGate;
      if (tx.expired) return sendJson(res, 422, { error_message: 'The transactions\'s date has passed max time (7 days) to recover the status' });
      if (tx.status !== 'INITIALIZED' || (tx.form !== 'approved' && tx.form !== 'declined')) {
        return sendJson(res, 422, { error_message: `Invalid status '${tx.status}' for transaction while authorizing` });
      }
      tx.commits += 1;
      tx.status = tx.form === 'approved' ? 'AUTHORIZED' : 'FAILED';
      if (state.loseCommitAnswers > 0) {
        state.loseCommitAnswers -= 1;
        return void res.socket?.destroy();
      }
      return sendJson(res, 200, answer(tx));
    }
    return sendJson(res, 405, { error_message: 'Method not allowed' });
  }

  // The customer's side: the form (reached by our page's POST with token_ws) and its three buttons.
  async function form(req: IncomingMessage, res: ServerResponse, path: string) {
    const fields = new URLSearchParams(await readBody(req));
    const tx = transactions.get(fields.get('token_ws') ?? '');
    if (!tx) return res.writeHead(400, { 'content-type': 'text/html' }).end('<p>Token inválido</p>');
    if (path === FORM) {
      const button = (action: string, label: string) =>
        `<form method="post" action="/webpayserver/${action}"><input type="hidden" name="token_ws" value="${tx.token}"><button type="submit">${label}</button></form>`;
      return res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><title>Webpay</title><h1>Webpay: $${tx.amount}</h1>${button('pay', 'Pagar')}${button('decline', 'Tarjeta rechazada')}${button('abandon', 'Anular compra y volver')}`);
    }
    const what = path.endsWith('/pay') ? 'approved' : path.endsWith('/decline') ? 'declined' : 'abandoned';
    tx.form = what;
    return res.writeHead(303, { location: returnUrl(tx, what === 'abandoned' ? 'abandoned' : 'paid') }).end();
  }

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://standin').pathname;
    const handler = path.startsWith(API) ? api : path.startsWith('/webpayserver/') && req.method === 'POST' ? form : null;
    if (!handler) return sendJson(res, 404, { error_message: 'Not found' });
    handler(req, res, path).catch((err: unknown) => sendJson(res, 500, { error_message: String(err) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));

  return Object.assign(state, {
    url: base,
    transactions,
    /** The customer on the form: pays (approved or declined), and the URL Webpay sends them back to. */
    pay(token: string, approved = true): string {
      const tx = transactions.get(token)!;
      tx.form = approved ? 'approved' : 'declined';
      return returnUrl(tx, 'paid');
    },
    /** The customer presses "Anular" on the form. */
    abandon(token: string): string {
      const tx = transactions.get(token)!;
      tx.form = 'abandoned';
      return returnUrl(tx, 'abandoned');
    },
    /** The form's time ran out: Webpay sends back only the buy order and session id. */
    timeout(token: string): string {
      const tx = transactions.get(token)!;
      tx.expired = true;
      return returnUrl(tx, 'timeout');
    },
  });
}

export type WebpayStandIn = Awaited<ReturnType<typeof startWebpayStandIn>>;
