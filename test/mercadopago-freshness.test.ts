// Mercado Pago notifications are fresh (docs/decisions.md §19): an x-signature whose ts (seconds, or
// milliseconds when it has 13 digits) is more than 10 minutes from our clock, past or future, is
// refused as a wrong signature is (401 invalid_signature, nothing looked up or applied), however
// correctly it is signed; within 10 minutes it is accepted, in either unit.
import t from 'tap';
import { testApp, type TestApp } from './helpers/app.js';
import { assertError } from './helpers/assertions.js';
import { checkoutBody } from './helpers/checkout.js';
import { MP_ACCESS_TOKEN, MP_WEBHOOK_SECRET, startMercadoPagoStandIn, type MercadoPagoStandIn } from './helpers/mercadopago-standin.js';
import { configureProvider } from '../src/checkout/provider-settings.js';
import { clock } from '../src/clock.js';

const local = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

async function paymentsOf(h: TestApp, invoiceId: string) {
  return h.sql<{ status: string }[]>`SELECT status FROM payments WHERE invoice_id = ${invoiceId}`;
}

t.test('mercadopago notification freshness', async (t) => {
  const mp: MercadoPagoStandIn = await startMercadoPagoStandIn(t);
  const h = await testApp(t, { MERCADOPAGO_BASE_URL: mp.url });
  t.teardown(() => clock.reset());
  let answer: Awaited<ReturnType<typeof h.api>> | null = null;
  mp.deliver = async (url, headers, body) => {
    const res = await h.app.inject({ method: 'POST', url: local(url), headers, payload: body });
    answer = { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body), raw: res.body };
    return res.statusCode;
  };

  const m = await h.merchant();
  await configureProvider(h.sql, h.ctx.secrets, m.id, 'mercadopago', { access_token: MP_ACCESS_TOKEN, webhook_secret: MP_WEBHOOK_SECRET });
  const { key } = await h.key(['*'], { merchantId: m.id });

  /** A session paid at Mercado Pago whose notification was lost: only a notification can pay it now. */
  async function unnotifiedPayment() {
    const res = await h.api('POST', '/checkout', { key, body: checkoutBody() });
    if (res.status !== 201) throw new Error(`checkout create: ${res.status} ${res.raw}`);
    const c = res.body as { checkout_id: string; invoice_id: string };
    const pref = [...mp.preferences.values()].find((p) => p.body.external_reference === c.checkout_id)!;
    const { payment } = await mp.pay(pref.id, true, { notify: false });
    return { ...c, paymentId: payment.id };
  }
  const status = async (id: string) => (await h.api('GET', `/checkout/${id}/status`, { key })).body as { status: string };

  const MIN = 60_000;
  const seconds = (ms: number) => String(Math.floor(ms / 1000));

  t.test('stale or future ts: 401 invalid_signature, nothing looked up or applied', async (t) => {
    const c = await unnotifiedPayment();
    const calls = mp.calls.length;
    const now = clock.now().getTime();
    for (const [what, ts] of [
      ['ts=1 (1970)', '1'],
      ['11 minutes old, in seconds', seconds(now - 11 * MIN)],
      ['11 minutes ahead, in seconds', seconds(now + 11 * MIN)],
      ['11 minutes old, in milliseconds', String(now - 11 * MIN)],
      ['11 minutes ahead, in milliseconds', String(now + 11 * MIN)],
      ['not a number', 'yesterday'],
    ] as const) {
      answer = null;
      t.equal(await mp.notify(c.paymentId, { ts }), 401, what);
      assertError(t, answer!, 401, 'invalid_signature');
    }
    t.equal(mp.calls.length, calls, 'Mercado Pago was not asked');
    t.same(await paymentsOf(h, c.invoice_id), [], 'nothing applied');
    t.equal((await status(c.checkout_id)).status, 'pending');
  });

  t.test('9 minutes old (seconds) is accepted and pays; a 13-digit millisecond ts of now is accepted', async (t) => {
    const c = await unnotifiedPayment();
    const now = clock.now().getTime();
    t.equal(await mp.notify(c.paymentId, { ts: seconds(now - 9 * MIN) }), 200, '9 minutes old');
    t.same(await paymentsOf(h, c.invoice_id), [{ status: 'succeeded' }]);
    t.equal((await status(c.checkout_id)).status, 'completed');

    const d = await unnotifiedPayment();
    t.equal(await mp.notify(d.paymentId, { ts: String(clock.now().getTime()) }), 200, 'milliseconds, now');
    t.same(await paymentsOf(h, d.invoice_id), [{ status: 'succeeded' }]);
  });

  t.test("the window is the app's clock, not the machine's", async (t) => {
    const c = await unnotifiedPayment();
    const machine = Date.now();
    clock.advance(30 * MIN);
    t.teardown(() => clock.advance(-30 * MIN));
    t.equal(await mp.notify(c.paymentId, { ts: String(machine) }), 401, "the machine's now is 30 minutes behind the app's clock");
    t.same(await paymentsOf(h, c.invoice_id), []);
    t.equal(await mp.notify(c.paymentId), 200, "signed at the app's now");
    t.same(await paymentsOf(h, c.invoice_id), [{ status: 'succeeded' }]);
  });
});
