// "Can charge" decided one way (docs/decisions.md §11 and §16): a provider that is known and has its
// credentials complete (the sandbox needs none). GET /me `can_charge`, the hosted invoice page's
// Pay button (or the merchant's payment instructions), the PDF's "Ver y pagar" and the e-mails'
// "Ver y pagar la factura" all follow it, so a merchant whose Webpay credentials are missing never
// shows a Pay button that leads to an error. PDFs are read by pdftotext; e-mails as the real SMTP
// server received them, sent by the real worker.
import t from 'tap';
import { API_PREFIX } from '../src/http/urls.js';
import { configureProvider } from '../src/checkout/provider-settings.js';
import { setPaymentInstructions } from '../src/merchants/service.js';
import { testApp, type TestApp } from './helpers/app.js';
import { payFormOf, sentInvoice, submitForm, visibleText } from './helpers/invoice-pay.js';
import { pdfToText } from './helpers/pdftotext.js';
import { startSmtpSink, type ReceivedMail, type SmtpSink } from './helpers/smtp.js';
import { until } from './helpers/until.js';
import { WEBPAY_API_KEY, WEBPAY_COMMERCE_CODE } from './helpers/webpay-standin.js';

const INSTRUCTIONS = 'Transferencia a la cuenta corriente 123-456 del Banco Andes';

const local = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

type Setup = (h: TestApp, merchantId: string) => Promise<unknown>;

const webpay: Setup = (h, id) => configureProvider(h.sql, h.ctx.secrets, id, 'webpay', { commerce_code: WEBPAY_COMMERCE_CODE, api_key: WEBPAY_API_KEY });

const cases: { name: string; setup: Setup; canCharge: boolean }[] = [
  { name: 'webpay with its credentials', setup: webpay, canCharge: true },
  { name: 'the sandbox, which needs none', setup: (h, id) => configureProvider(h.sql, h.ctx.secrets, id, 'sandbox'), canCharge: true },
  {
    name: 'webpay whose credentials are missing',
    setup: async (h, id) => {
      await webpay(h, id);
      await h.sql`DELETE FROM provider_credentials WHERE merchant_id = ${id}`;
    },
    canCharge: false,
  },
  {
    name: 'webpay with only its commerce code set',
    setup: async (h, id) => {
      await webpay(h, id);
      await h.sql`UPDATE provider_credentials SET fields = '{commerce_code}' WHERE merchant_id = ${id}`;
    },
    canCharge: false,
  },
  { name: 'no provider', setup: async () => {}, canCharge: false },
  { name: 'a provider no gateway answers to', setup: (h, id) => h.sql`UPDATE merchants SET payment_provider = 'paypal' WHERE id = ${id}`, canCharge: false },
];

function mailOf(smtp: SmtpSink, invoiceId: string, kind: string): Promise<ReceivedMail> {
  return until(`the ${kind} e-mail of ${invoiceId}`, () =>
    smtp.messages.find((m) => m.headers.get('x-invoice-id') === invoiceId && m.headers.get('x-email-kind') === kind),
  );
}

/** The HTML e-mail's button: the link to the hosted page and its text. */
function button(mail: ReceivedMail): string | undefined {
  return /<a href="http:\/\/invoicing\.test\/i\/[^"]+"[^>]*>([^<]*)<\/a>/.exec(mail.html)?.[1];
}

t.test('can charge, decided one way everywhere', async (t) => {
  const smtp = await startSmtpSink(t);
  const h = await testApp(t, { SMTP_URL: smtp.url });
  await h.startWorker();

  async function merchantWith(setup: Setup) {
    const m = await h.merchant();
    await setPaymentInstructions(h.sql, m.id, INSTRUCTIONS);
    await setup(h, m.id);
    const { key } = await h.key(['*'], { merchantId: m.id });
    return { merchantId: m.id, key };
  }

  for (const c of cases) {
    t.test(`${c.name}: ${c.canCharge ? 'Pay, "Ver y pagar"' : 'payment instructions, "Ver la factura"'}`, async (t) => {
      const { key } = await merchantWith(c.setup);
      t.equal((await h.api('GET', '/me', { key })).body.can_charge, c.canCharge, 'GET /me can_charge');

      const inv = await sentInvoice(h, key);
      const page = (await h.app.inject({ url: local(inv.public_url) })).body;
      t.equal(payFormOf(page) !== null, c.canCharge, c.canCharge ? 'the invoice page has a Pay button' : 'the invoice page has no Pay button');
      t.equal(visibleText(page).includes(INSTRUCTIONS), !c.canCharge, c.canCharge ? 'no instructions' : 'the payment instructions instead');

      const mail = await mailOf(smtp, inv.invoice_id, 'invoice');
      t.equal(button(mail), c.canCharge ? 'Ver y pagar la factura' : 'Ver la factura', "the e-mail's button");
      t.match(mail.text, c.canCharge ? /^Ver y pagar la factura: http/m : /^Ver la factura: http/m, "the e-mail's plain-text link");

      const pdf = await h.app.inject({ url: `${API_PREFIX}/invoices/${inv.invoice_id}/pdf`, headers: { 'x-api-key': key } });
      t.equal(pdf.statusCode, 200);
      const text = await pdfToText(pdf.rawPayload);
      t.equal(text.includes('Ver y pagar en línea:'), c.canCharge, 'the PDF says "Ver y pagar" only when the page takes payments');
      t.equal(text.includes('Ver la factura en línea:'), !c.canCharge);
    });
  }

  t.test('credentials removed after the page was opened: its Pay leads back to the page, now with the instructions; nothing opened', async (t) => {
    const { merchantId, key } = await merchantWith(webpay);
    const inv = await sentInvoice(h, key);
    const pay = payFormOf((await h.app.inject({ url: local(inv.public_url) })).body);
    t.ok(pay, 'Pay while the credentials are complete');
    await h.sql`DELETE FROM provider_credentials WHERE merchant_id = ${merchantId}`;
    const res = await submitForm(h, pay!);
    t.equal(res.statusCode, 303);
    t.equal(res.headers.location, inv.public_url, 'back to the invoice page, not to an error');
    t.equal((await h.sql`SELECT 1 FROM checkout_sessions WHERE merchant_id = ${merchantId}`).length, 0, 'no session opened');
    const page = (await h.app.inject({ url: local(inv.public_url) })).body;
    t.equal(payFormOf(page), null);
    t.ok(visibleText(page).includes(INSTRUCTIONS));
  });
});
