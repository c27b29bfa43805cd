// A document has a bounded size (docs/limits.md, "One tenant cannot hurt the others"): the
// description that once printed a draft of 11,202 pages is refused, the largest invoice the API
// takes prints at most one page per item, and a row taller than a page is split between pages by
// its lines instead of spilling over the footer. Rendering is shared: one merchant's many renders
// run one after another, and the same draft asked for at once is rendered once.
import t from 'tap';
import { API_PREFIX } from '../src/http/urls.js';
import { getInvoiceWithItems } from '../src/invoices/queries.js';
import { getMerchant } from '../src/merchants/queries.js';
import { DraftPdfCache } from '../src/pdf/draft-cache.js';
import { renderInvoicePdf } from '../src/pdf/render.js';
import { renderInvoicePdfInThread } from '../src/pdf/render-pool.js';
import { testApp } from './helpers/app.js';
import { invoiceBody } from './helpers/fixtures.js';
import { wordsOf, type PdfWord } from './helpers/pdftotext.js';

// A4's bottom margin is 50 pt; the footer prints 15 pt into it.
const BOTTOM_MARGIN = 50;

/** The words printed in the content area's bottom margin other than the page footer's line. */
function intoTheMargin(words: PdfWord[]): PdfWord[] {
  return words.filter((w) => w.yMax > w.pageHeight - BOTTOM_MARGIN && w.yMin < w.pageHeight - BOTTOM_MARGIN + 10);
}

t.test('PDF bounds', async (t) => {
  const h = await testApp(t);
  const { key, merchantId } = await h.key();
  const merchant = await getMerchant(h.sql, merchantId);

  t.test('200 items of 500 line breaks each are refused before anything is stored', async (t) => {
    const description = Array.from({ length: 501 }, (_, i) => `l${i}`).join('\n');
    const items = Array.from({ length: 200 }, () => ({ description, quantity: 1, unit_price: 1000 }));
    const res = await h.api('POST', '/invoices', { key, body: invoiceBody({ items, send_immediately: false }) });
    t.equal(res.status, 422);
    const errors = (res.body as { details: { errors: { path: string; message: string }[] } }).details.errors;
    t.match(errors[0], { path: 'items[0].description', message: 'at most 10 line breaks' });
    const [row] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM invoices WHERE merchant_id = ${merchantId}`;
    t.equal(row?.n, 0, 'no invoice was made');
  });

  t.test('the largest invoice the API takes prints at most a page per item, every row within its page', async (t) => {
    // 1,000 characters in 11 lines of one unbreakable word each: the widest rows a description can make.
    const items = Array.from({ length: 200 }, (_, i) => {
      const head = `Item-${String(i + 1).padStart(3, '0')} `;
      const description = [head + 'W'.repeat(80), ...Array.from({ length: 10 }, () => 'W'.repeat(89))].join('\n').slice(0, 1000);
      return { description, quantity: 999999.9999, unit_price: 999999999.9999 };
    });
    const res = await h.api('POST', '/invoices', { key, body: invoiceBody({ items, send_immediately: false }) });
    t.equal(res.status, 201, JSON.stringify(res.body).slice(0, 200));
    const id = (res.body as { invoice_id: string }).invoice_id;
    const pdf = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/invoices/${id}/pdf`, headers: { 'x-api-key': key } });
    t.equal(pdf.statusCode, 200);
    const words = await wordsOf(pdf.rawPayload);
    const pages = Math.max(...words.map((w) => w.page));
    t.ok(pages <= 201, `${pages} pages for 200 items`);
    const labels = words.filter((w) => /^Item-\d{3}$/.test(w.text)).map((w) => w.text);
    t.same(labels, items.map((_, i) => `Item-${String(i + 1).padStart(3, '0')}`), 'every item, once, in order');
    t.same(intoTheMargin(words), [], 'nothing printed into the bottom margin');
  });

  t.test("a legal description of the font's widest characters prints smaller, its row on one page", async (t) => {
    // U+2031 is the widest character the embedded font has: 1,000 of them make 91 lines at 9.5 pt.
    const description = ['Wide-item ' + '‱'.repeat(80), ...Array.from({ length: 10 }, () => '‱'.repeat(91))].join('\n').slice(0, 1000);
    const res = await h.api('POST', '/invoices', { key, body: invoiceBody({ send_immediately: false, items: [{ description, quantity: 1, unit_price: 1000 }] }) });
    t.equal(res.status, 201);
    const pdf = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/invoices/${(res.body as { invoice_id: string }).invoice_id}/pdf`, headers: { 'x-api-key': key } });
    const words = await wordsOf(pdf.rawPayload);
    const row = words.filter((w) => w.text.includes('‱'));
    t.equal(row.map((w) => w.text).join('').replace(/[^‱]/g, '').length, description.replace(/[^‱]/g, '').length, 'every character printed');
    t.same([...new Set(row.map((w) => w.page))], [1], 'all of it on the first page');
    t.same(intoTheMargin(words), [], 'nothing printed into the bottom margin');
  });

  t.test('a description taller than a page is split between pages by its lines, its amounts printed once', async (t) => {
    // Stored before today's limits, or a note's corrected text: the renderer takes any length.
    const res = await h.api('POST', '/invoices', {
      key,
      body: invoiceBody({ send_immediately: false, items: [{ description: 'short', quantity: 3, unit_price: 1234567 }, { description: 'after', quantity: 1, unit_price: 1000 }] }),
    });
    t.equal(res.status, 201);
    const invoice = await getInvoiceWithItems(h.sql, merchantId, (res.body as { invoice_id: string }).invoice_id);
    const lines = Array.from({ length: 150 }, (_, i) => `línea-${String(i + 1).padStart(3, '0')}`);
    invoice!.items[0]!.description = lines.join('\n');
    const pdf = await renderInvoicePdf(invoice!, merchant!, { draft: true, publicUrl: 'http://invoicing.test/i/x' });
    const words = await wordsOf(pdf);
    const printed = words.filter((w) => w.text.startsWith('línea-'));
    t.same(printed.map((w) => w.text), lines, 'every line, once, in order');
    const pagesOfRow = new Set(printed.map((w) => w.page));
    t.ok(pagesOfRow.size >= 2, `the row spans ${pagesOfRow.size} pages`);
    const price = words.filter((w) => w.text === '$1.234.567');
    t.equal(price.length, 1, 'the unit price printed once');
    t.equal(price[0]?.page, printed[0]?.page, 'with the first part');
    const after = words.find((w) => w.text === 'after');
    t.ok(after && after.page === Math.max(...pagesOfRow), 'the next item follows on the page where the row ends');
    t.same(intoTheMargin(words), [], 'nothing printed into the bottom margin');
  });

  t.test("one merchant's four renders at once do not hold another merchant's behind them", async (t) => {
    const other = await h.key();
    const big = await h.api('POST', '/invoices', {
      key,
      body: invoiceBody({ send_immediately: false, items: Array.from({ length: 200 }, (_, i) => ({ description: `Servicio ${i} `.repeat(60).slice(0, 900), quantity: 1, unit_price: 1000 })) }),
    });
    const small = await h.api('POST', '/invoices', { key: other.key, body: invoiceBody({ send_immediately: false }) });
    const bigInvoice = await getInvoiceWithItems(h.sql, merchantId, (big.body as { invoice_id: string }).invoice_id);
    const smallInvoice = await getInvoiceWithItems(h.sql, other.merchantId, (small.body as { invoice_id: string }).invoice_id);
    const otherMerchant = await getMerchant(h.sql, other.merchantId);
    const opts = { draft: true, publicUrl: 'http://invoicing.test/i/x' };
    // The render threads started first: what is measured is the order of renders, not of thread start-ups.
    await Promise.all([renderInvoicePdfInThread(smallInvoice!, otherMerchant!, opts), renderInvoicePdfInThread(bigInvoice!, merchant!, opts)]);
    const finished: string[] = [];
    const renders = [1, 2, 3, 4].map((n) => renderInvoicePdfInThread(bigInvoice!, merchant!, opts).then(() => finished.push(`large ${n}`)));
    renders.push(renderInvoicePdfInThread(smallInvoice!, otherMerchant!, opts).then(() => finished.push('other merchant')));
    await Promise.all(renders);
    // In the order asked, the other merchant's render would come after all four.
    t.ok(finished.indexOf('other merchant') < finished.indexOf('large 2'), `finished in the order ${finished.join(', ')}`);
  });

  t.test('the same draft asked for four times at once is rendered once', async (t) => {
    const cache = new DraftPdfCache();
    let renders = 0;
    const render = async () => {
      renders += 1;
      await new Promise((r) => setTimeout(r, 20));
      return Buffer.from('%PDF-1.7');
    };
    const answers = await Promise.all([1, 2, 3, 4].map(() => cache.get('draft', render)));
    t.equal(renders, 1, 'one render');
    t.ok(answers.every((a) => a.equals(Buffer.from('%PDF-1.7'))), 'every caller gets its bytes');
    await cache.get('draft', render);
    t.equal(renders, 1, 'and a later call is served from the cache');
  });
});
