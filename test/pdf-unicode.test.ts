// The invoice PDF prints names, addresses and descriptions as written (issue 19): an embedded
// Unicode font (DejaVu Sans, subset by pdfkit) instead of the standard fonts, which know only
// WinAnsi and printed "Łukasz Müller → Ñuñoa" as "?ukasz Müller ? Ñuñoa". Read back by poppler's
// pdftotext, a reader independent of the renderer.
import t from 'tap';
import { API_PREFIX } from '../src/http/urls.js';
import { pdfFonts } from '../src/pdf/fonts.js';
import { testApp, type TestApp } from './helpers/app.js';
import { fontsOf, pdfToText } from './helpers/pdftotext.js';

const CLIENT = 'Łukasz Müller → Ñuñoa';
const ADDRESS = 'Calle Łódź 12 — Ñuñoa';
const ITEMS = ['Diseño “Ñandú” → fase 2: 2.500 €', 'Revisión ‘final’ – Gdańsk…', 'Ærøskøbing Straße, Şişli, Čapek'];

async function pdfOf(h: TestApp, key: string, body: Record<string, unknown>): Promise<Buffer> {
  const created = await h.api('POST', '/invoices', { key, body: { due_date: '2099-12-31', send_immediately: true, ...body } });
  if (created.status !== 201) throw new Error(`create failed: ${created.status} ${created.raw}`);
  const res = await h.app.inject({ method: 'GET', url: `${API_PREFIX}/invoices/${created.body.invoice_id}/pdf`, headers: { 'x-api-key': key } });
  if (res.statusCode !== 200) throw new Error(`pdf failed: ${res.statusCode} ${res.body}`);
  return res.rawPayload;
}

t.test('invoice PDF in Unicode', async (t) => {
  const h = await testApp(t);
  const { key } = await h.key(['*']);

  t.test('names, addresses and descriptions print every character, in both locales', async (t) => {
    for (const locale of ['es', 'en']) {
      const pdf = await pdfOf(h, key, {
        locale,
        client: { name: CLIENT, email: `lukasz.${locale}@example.pl`, address: ADDRESS },
        items: ITEMS.map((description) => ({ description, quantity: 1, unit_price: 1000 })),
      });
      const text = await pdfToText(pdf);
      for (const s of [CLIENT, ADDRESS, ...ITEMS]) t.ok(text.includes(s), `${locale}: "${s}" appears exactly`);
      t.notOk(text.includes('?'), `${locale}: no character was replaced`);
    }
  });

  t.test('a character the font lacks degrades, a soft hyphen goes; a control character never reaches it', async (t) => {
    const pdf = await pdfOf(h, key, {
      client: { name: 'Zoë Őrs 東京 Ltd.', email: 'zoe@example.com' },
      items: [{ description: 'Line with – “quotes” € ½ x\u00ADy', quantity: 1, unit_price: 1000 }],
    });
    const text = await pdfToText(pdf);
    t.ok(text.includes('Zoë Őrs ?? Ltd.'), 'letters the font has print; CJK (not in DejaVu Sans) is "?"');
    t.ok(text.includes('Line with – “quotes” € ½ xy'), 'a soft hyphen goes');
    // docs/decisions.md §19: text fields carry text, so a tab is refused before any document has it.
    const refused = await h.api('POST', '/invoices', {
      key,
      body: { client: { name: 'Tab', email: 'tab@example.com' }, due_date: '2099-12-31', items: [{ description: 'Line\twith tab', unit_price: 1000 }] },
    });
    t.equal(refused.status, 422);
    t.equal(refused.body.details.errors[0].path, 'items[0].description');
  });

  t.test('the font is embedded as a subset: the document stays small', async (t) => {
    const pdf = await pdfOf(h, key, {
      client: { name: CLIENT, email: 'size@example.pl', address: ADDRESS },
      items: ITEMS.map((description) => ({ description, quantity: 1, unit_price: 1000 })),
    });
    const fonts = await fontsOf(pdf);
    t.ok(fonts.length > 0, 'the document has fonts');
    for (const f of fonts) {
      t.match(f.name, /^[A-Z]{6}\+DejaVuSans/, `${f.name}: DejaVu Sans`);
      t.ok(f.embedded && f.subset, `${f.name}: an embedded subset`);
    }
    // DejaVu Sans and its bold are 740 KB and 690 KB whole; a one-page invoice carries the glyphs it uses.
    t.ok(pdf.length < 60_000, `one page is ${pdf.length} bytes`);
  });

  t.test('the fonts are read and parsed once per process', async (t) => {
    t.equal(pdfFonts(), pdfFonts(), 'the same parsed fonts serve every document');
  });
});
