// The hosted invoice page GET /i/{token} and its PDF (docs/decisions.md §1, §4, §14): HTML in the
// invoice's locale, the sent → viewed transition once with one invoice.viewed event, drafts and
// unknown tokens as 404 pages, security headers, and the same PDF bytes as the API.
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { clock } from '../src/clock.js';
import { API_PREFIX } from '../src/http/urls.js';
import { testApp, type TestApp } from './helpers/app.js';

const PUBLIC = 'http://invoicing.test';

let seq = 0;
function invoiceBody(extra: Record<string, unknown> = {}): Record<string, any> {
  seq += 1;
  return {
    client: { name: `Ana <script>alert("x")</script> & Pérez ${seq}`, email: `ana${seq}@example.cl`, rut: '12.345.678-5' },
    due_date: '2099-12-31',
    items: [{ description: 'Consultoría <b>noviembre</b>', quantity: 2, unit_price: 5000 }],
    send_immediately: true,
    ...extra,
  };
}

interface Created {
  invoice_id: string;
  invoice_number: string | null;
  public_url: string;
  status: string;
}

async function create(h: TestApp, key: string, extra: Record<string, unknown> = {}): Promise<Created> {
  const res = await h.api('POST', '/invoices', { key, body: invoiceBody(extra) });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.raw}`);
  return res.body as Created;
}

const tokenOf = (c: Created) => c.public_url.slice(`${PUBLIC}/i/`.length);

async function page(h: TestApp, path: string, headers: Record<string, string> = {}, method: 'GET' | 'HEAD' = 'GET') {
  const res = await h.app.inject({ method, url: path, headers });
  return { status: res.statusCode, headers: res.headers, body: res.body, bytes: res.rawPayload };
}

async function viewedEvents(h: TestApp, invoiceId: string): Promise<any[]> {
  const rows = await h.sql<{ payload: any }[]>`
    SELECT payload FROM events WHERE type = 'invoice.viewed' AND payload->'data'->'object'->>'id' = ${invoiceId}`;
  return rows.map((r) => r.payload);
}

async function dbRow(h: TestApp, invoiceId: string) {
  const [row] = await h.sql<{ status: string; last_viewed_at: Date | null; updated_at: Date }[]>`
    SELECT status, last_viewed_at, updated_at FROM invoices WHERE id = ${invoiceId}`;
  return row!;
}

type Tap = Test;

function assertSecurityHeaders(t: Tap, headers: Record<string, unknown>, what: string) {
  const csp = String(headers['content-security-policy'] ?? '');
  t.match(csp, /default-src 'none'/, `${what}: CSP default-src 'none'`);
  t.match(csp, /style-src ('unsafe-inline'|'sha256-[A-Za-z0-9+/=]+')/, `${what}: CSP style-src`);
  t.match(csp, /img-src 'self' data:/, `${what}: CSP img-src`);
  t.match(csp, /frame-ancestors 'none'/, `${what}: CSP frame-ancestors`);
  t.match(csp, /base-uri 'none'/, `${what}: CSP base-uri`);
  t.match(csp, /form-action 'self'/, `${what}: CSP form-action`);
  t.notMatch(csp, /script-src/, `${what}: no script allowed`);
  t.equal(headers['x-frame-options'], 'DENY', `${what}: X-Frame-Options`);
  t.equal(headers['referrer-policy'], 'no-referrer', `${what}: Referrer-Policy`);
  t.equal(headers['x-content-type-options'], 'nosniff', `${what}: nosniff`);
  t.match(String(headers['cache-control']), /no-store/, `${what}: Cache-Control no-store`);
}

function assertNotFoundPage(t: Tap, res: { status: number; headers: Record<string, unknown>; body: string }, what: string) {
  t.equal(res.status, 404, `${what}: 404`);
  t.match(String(res.headers['content-type']), /^text\/html/, `${what}: HTML, never JSON`);
  t.match(res.body, /^<!doctype html>/i, `${what}: an HTML document`);
  t.notMatch(res.body, /"code"\s*:/, `${what}: not the API envelope`);
  assertSecurityHeaders(t, res.headers, what);
}

t.test('hosted invoice page', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);

  t.test('renders the invoice as HTML in Spanish, with the client name escaped', async (t) => {
    const inv = await create(h, key);
    const res = await page(h, `/i/${tokenOf(inv)}`);
    t.equal(res.status, 200);
    t.match(String(res.headers['content-type']), /^text\/html; charset=utf-8/);
    t.match(res.body, /<html lang="es">/);
    t.match(res.body, /<meta name="viewport" content="width=device-width, initial-scale=1">/, 'mobile-friendly');
    t.match(res.body, inv.invoice_number!, 'invoice number');
    t.match(res.body, 'Comercial Test SpA', 'merchant');
    t.match(res.body, '$11.900', 'total as es-CL');
    t.match(res.body, '$10.000', 'subtotal');
    t.match(res.body, '$1.900', 'tax');
    t.match(res.body, 'IVA (19 %)');
    t.match(res.body, '$0', 'amount paid');
    t.match(res.body, 'Pendiente de pago', 'status for the customer');
    t.match(res.body, '31 de diciembre de 2099', 'due date');
    t.match(res.body, '12.345.678-5', 'RUT, printed with its dots');
    t.match(res.body, 'Ana &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Pérez', 'client name escaped, shown as text');
    t.match(res.body, 'Consultoría &lt;b&gt;noviembre&lt;/b&gt;', 'item description escaped');
    t.notMatch(res.body, /<script/i, 'no script element at all');
    t.notMatch(res.body, '<b>noviembre', 'no injected markup');
    t.match(res.body, `href="${PUBLIC}/i/${tokenOf(inv)}/pdf"`, 'links the PDF');
    assertSecurityHeaders(t, res.headers, 'page');

    // The CSP's style hash is the hash of the page's one inline style, so the style applies.
    const style = /<style>([\s\S]*?)<\/style>/.exec(res.body)?.[1] ?? '';
    const hash = createHash('sha256').update(style, 'utf8').digest('base64');
    t.match(String(res.headers['content-security-policy']), `'sha256-${hash}'`, 'CSP allows exactly the inline style');
  });

  t.test('an English invoice renders in English', async (t) => {
    const inv = await create(h, key, { locale: 'en' });
    const res = await page(h, `/i/${tokenOf(inv)}`);
    t.equal(res.status, 200);
    t.match(res.body, /<html lang="en">/);
    t.match(res.body, 'CLP 11,900');
    t.match(res.body, 'Awaiting payment');
    t.match(res.body, 'Download PDF');
    t.match(res.body, 'December 31, 2099');
    t.notMatch(res.body, 'Descargar PDF');
  });

  t.test('the first view moves sent → viewed once; every view sets last_viewed_at', async (t) => {
    t.teardown(() => clock.reset());
    const inv = await create(h, key);
    const before = await dbRow(h, inv.invoice_id);
    t.equal(before.status, 'sent');
    t.equal(before.last_viewed_at, null);

    clock.advance(1_000);
    const first = await page(h, `/i/${tokenOf(inv)}`);
    t.equal(first.status, 200);
    const afterFirst = await dbRow(h, inv.invoice_id);
    t.equal(afterFirst.status, 'viewed');
    t.ok(afterFirst.last_viewed_at, 'last_viewed_at set');
    t.ok(afterFirst.updated_at > before.updated_at, 'updated_at moves with the status change');

    const events = await viewedEvents(h, inv.invoice_id);
    t.equal(events.length, 1, 'one invoice.viewed');
    t.equal(events[0].type, 'invoice.viewed');
    t.equal(events[0].api_version, 'v1');
    t.equal(events[0].data.object.id, inv.invoice_id);
    t.equal(events[0].data.object.status, 'viewed', 'the event carries the invoice as it now is');
    t.equal(events[0].data.object.public_url, inv.public_url);
    t.equal(events[0].data.object._links.self.href, `${PUBLIC}${API_PREFIX}/invoices/${inv.invoice_id}`);

    clock.advance(5_000);
    const second = await page(h, `/i/${tokenOf(inv)}`);
    t.equal(second.status, 200);
    const afterSecond = await dbRow(h, inv.invoice_id);
    t.equal(afterSecond.status, 'viewed');
    t.ok(afterSecond.last_viewed_at! > afterFirst.last_viewed_at!, 'last_viewed_at moves on every view');
    t.equal(afterSecond.updated_at.getTime(), afterFirst.updated_at.getTime(), 'updated_at only moves with the status');
    t.equal((await viewedEvents(h, inv.invoice_id)).length, 1, 'still one invoice.viewed');

    // The API sees it too.
    const status = await h.api('GET', `/invoices/${inv.invoice_id}/status`, { key });
    t.equal(status.body.status, 'viewed');
    t.equal(status.body.last_viewed_at, afterSecond.last_viewed_at!.toISOString());
  });

  t.test('concurrent first views emit exactly one invoice.viewed', async (t) => {
    const inv = await create(h, key);
    const results = await Promise.all(Array.from({ length: 8 }, () => page(h, `/i/${tokenOf(inv)}`)));
    for (const r of results) t.equal(r.status, 200);
    t.equal((await dbRow(h, inv.invoice_id)).status, 'viewed');
    t.equal((await viewedEvents(h, inv.invoice_id)).length, 1);
  });

  t.test('a HEAD request does not count as a view', async (t) => {
    const inv = await create(h, key);
    const res = await page(h, `/i/${tokenOf(inv)}`, {}, 'HEAD');
    t.equal(res.status, 200);
    const row = await dbRow(h, inv.invoice_id);
    t.equal(row.status, 'sent');
    t.equal(row.last_viewed_at, null);
    t.equal((await viewedEvents(h, inv.invoice_id)).length, 0);
  });

  t.test('a paid invoice stays paid when viewed, and shows what was paid', async (t) => {
    const inv = await create(h, key);
    const paid = await h.api('POST', `/invoices/${inv.invoice_id}/mark-paid`, { key, body: {} });
    t.equal(paid.status, 200, `mark-paid: ${paid.raw}`);
    const res = await page(h, `/i/${tokenOf(inv)}`);
    t.equal(res.status, 200);
    t.match(res.body, 'Pagada');
    const row = await dbRow(h, inv.invoice_id);
    t.equal(row.status, 'paid');
    t.ok(row.last_viewed_at, 'the view is still recorded');
    t.equal((await viewedEvents(h, inv.invoice_id)).length, 0, 'no invoice.viewed for a paid invoice');
  });

  t.test('a draft has no public page; unknown tokens get a 404 page, never JSON', async (t) => {
    const draft = await create(h, key, { send_immediately: false });
    t.equal(draft.status, 'draft');
    const token = tokenOf(draft);
    assertNotFoundPage(t, await page(h, `/i/${token}`), 'draft page');
    assertNotFoundPage(t, await page(h, `/i/${token}/pdf`), 'draft PDF');
    const row = await dbRow(h, draft.invoice_id);
    t.equal(row.status, 'draft', 'a draft is not viewed');
    t.equal(row.last_viewed_at, null);

    const unknown = await page(h, '/i/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    assertNotFoundPage(t, unknown, 'unknown token');
    t.match(unknown.body, 'Factura no encontrada');
    t.match(unknown.body, /<html lang="es">/);
    const english = await page(h, '/i/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', { 'accept-language': 'en-US,en;q=0.9' });
    t.match(english.body, 'Invoice not found', 'in the browser language when it prefers English');
    assertNotFoundPage(t, await page(h, '/i/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/pdf'), 'unknown token PDF');
    assertNotFoundPage(t, await page(h, '/i/x'), 'malformed token');
    assertNotFoundPage(t, await page(h, `/i/${'%3Cscript%3E'.repeat(3)}`), 'hostile token');
    assertNotFoundPage(t, await page(h, '/i/abc/def/ghi'), 'unknown path under /i');
    // Byte for byte the same answer: a draft's token cannot be told from an unknown one.
    t.equal((await page(h, `/i/${token}`)).body, unknown.body, 'draft page equals unknown page');
  });

  t.test('/i/{token}/pdf serves the same stored bytes as the API', async (t) => {
    const inv = await create(h, key);
    const viaPage = await page(h, `/i/${tokenOf(inv)}/pdf`);
    t.equal(viaPage.status, 200);
    t.equal(viaPage.headers['content-type'], 'application/pdf');
    t.equal(viaPage.headers['content-disposition'], `inline; filename="${inv.invoice_number}.pdf"`);
    t.equal(viaPage.headers['referrer-policy'], 'no-referrer');
    t.equal(viaPage.headers['x-content-type-options'], 'nosniff');
    t.equal(viaPage.headers['x-frame-options'], 'DENY');
    t.match(String(viaPage.headers['cache-control']), /no-store/);

    const viaApi = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/invoices/${inv.invoice_id}/pdf`, headers: { 'x-api-key': key } });
    t.equal(viaApi.statusCode, 200);
    t.ok(viaApi.rawPayload.equals(viaPage.bytes), 'byte-identical');
    t.equal(viaPage.headers['x-content-sha256'], viaApi.headers['x-content-sha256']);
    t.equal(viaPage.headers['x-content-sha256'], createHash('sha256').update(viaPage.bytes).digest('hex'));

    // Opening the PDF is not opening the page.
    t.equal((await dbRow(h, inv.invoice_id)).status, 'sent');
  });
});
