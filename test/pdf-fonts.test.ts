// The embedded faces leave out TrueType hinting (fonts.ts): every table a PDF's subset takes is
// still there and still read, and the sfnt header agrees with the shorter table directory.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { create } from 'fontkit';
import { pdfFonts, withoutTables } from '../src/pdf/fonts.js';

const dir = path.join(path.dirname(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/package.json')), 'ttf');
// What the test reads of a parsed font (src/pdf/fontkit.d.ts declares only what the PDF uses).
interface FontView {
  postscriptName: string;
  numGlyphs: number;
  layout(text: string): { glyphs: { id: number }[]; positions: { xAdvance: number }[] };
  directory: { tables: Record<string, unknown> };
}
const open = (font: Buffer) => create(font) as unknown as FontView;
const tagsOf = (font: Buffer) => Array.from({ length: font.readUInt16BE(4) }, (_, i) => font.toString('latin1', 12 + 16 * i, 16 + 16 * i));

t.test('withoutTables drops the named tables from the directory and keeps the rest readable', async (t) => {
  const original = readFileSync(path.join(dir, 'DejaVuSans.ttf'));
  const stripped = withoutTables(original, new Set(['fpgm', 'prep', 'cvt ']));
  const before = tagsOf(original);
  const after = tagsOf(stripped);
  t.ok(['fpgm', 'prep', 'cvt '].every((tag) => before.includes(tag)), 'the original has hinting tables');
  t.same(after, before.filter((tag) => !['fpgm', 'prep', 'cvt '].includes(tag)), 'every other table kept, in its order');
  const n = after.length;
  const power = 2 ** Math.floor(Math.log2(n));
  t.same([stripped.readUInt16BE(6), stripped.readUInt16BE(8), stripped.readUInt16BE(10)], [power * 16, Math.log2(power), (n - power) * 16], 'searchRange, entrySelector, rangeShift');
  const a = open(original);
  const b = open(stripped);
  t.equal(b.postscriptName, a.postscriptName);
  t.equal(b.numGlyphs, a.numGlyphs);
  const text = 'Łukasz Müller → Ñuñoa 2.500 €';
  t.same(b.layout(text).glyphs.map((g) => g.id), a.layout(text).glyphs.map((g) => g.id), 'the same glyphs for the same text');
  t.same(b.layout(text).positions.map((p) => p.xAdvance), a.layout(text).positions.map((p) => p.xAdvance), 'with the same advances');
  t.equal(original.readUInt16BE(4), before.length, 'the original buffer is left as it was');
});

t.test("the PDF's faces are the stripped ones", async (t) => {
  for (const [style, font] of Object.entries(pdfFonts())) {
    const tags = Object.keys((font as unknown as FontView).directory.tables);
    t.notOk(tags.includes('fpgm') || tags.includes('prep') || tags.includes('cvt '), `${style}: no hinting tables`);
    t.ok(tags.includes('glyf') && tags.includes('hmtx') && tags.includes('GPOS'), `${style}: outlines, metrics and kerning kept`);
  }
});

// What the tests read of a subset and a glyph (fontkit's own API, beyond src/pdf/fontkit.d.ts).
interface Subset {
  includeGlyph(id: number): number;
  encode(): Uint8Array;
}
interface GlyphView {
  id: number;
  path: { toSVG(): string };
  _decode(): { numberOfContours: number } | null;
}
type FullFont = FontView & { createSubset(): Subset; glyphForCodePoint(c: number): GlyphView; getGlyph(id: number): GlyphView };

t.test("a subset copies simple glyphs as they are and remaps a compound glyph's components", async (t) => {
  const font = open(readFileSync(path.join(dir, 'DejaVuSans.ttf'))) as unknown as FullFont;
  const chars = ['A', 'Ñ', 'é', ' ', '€'];
  const glyphs = chars.map((c) => font.glyphForCodePoint(c.codePointAt(0)!));
  t.ok((glyphs[1]!._decode()?.numberOfContours ?? 0) < 0, 'Ñ is a compound glyph in DejaVu Sans');
  t.ok((glyphs[0]!._decode()?.numberOfContours ?? 0) > 0, 'A is a simple one');
  const subset = font.createSubset();
  const ids = glyphs.map((g) => subset.includeGlyph(g.id));
  const sub = open(Buffer.from(subset.encode())) as unknown as FullFont;
  chars.forEach((c, i) => t.equal(sub.getGlyph(ids[i]!).path.toSVG(), glyphs[i]!.path.toSVG(), `${JSON.stringify(c)}: the same outline in the subset`));
});

t.test('shaping kept across documents: the same runs, and each caller scales its own copy', async (t) => {
  type Shaper = { layout(text: string): { positions: Record<string, number>[]; glyphs: { id: number }[]; advanceWidth: number } };
  const plain = open(readFileSync(path.join(dir, 'DejaVuSans.ttf'))) as unknown as Shaper;
  const shared = pdfFonts().regular as unknown as Shaper;
  for (const word of ['Total', 'Ñuñoa', 'AVTA', '2.500,00']) {
    const first = shared.layout(word);
    const expected = plain.layout(word);
    t.same(first.glyphs.map((g) => g.id), expected.glyphs.map((g) => g.id), `${word}: the same glyphs`);
    t.same(first.positions.map((p) => p.xAdvance), expected.positions.map((p) => p.xAdvance), `${word}: the same advances (kerning included)`);
    // What pdfkit does to a run: its positions scaled in place.
    for (const p of first.positions) for (const k of Object.keys(p)) p[k]! *= 0.5;
    const again = shared.layout(word);
    t.same(again.positions.map((p) => p.xAdvance), expected.positions.map((p) => p.xAdvance), `${word}: a later caller gets unscaled positions`);
    t.equal(again.advanceWidth, expected.positions.reduce((s, p) => s + (p.xAdvance ?? 0), 0), `${word}: and the run's width from them`);
  }
});
