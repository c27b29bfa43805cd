// Text broken into the lines a column prints, before pdfkit sees it. pdfkit's own wrapping lays a
// word that is wider than the column out again for every line it takes from it, so a description
// of one 1,000-character word costs ~55 layouts of the whole word; the table asks for each row's
// height and then draws it, three layouts of every description. Measuring each character once per
// font and size makes the breaking linear, and the lines it gives are what a row is split by when
// it would not fit on a page (docs/limits.md, "A document has a bounded size").
import type PDFDocument from 'pdfkit';

type Doc = InstanceType<typeof PDFDocument>;

// pdfkit measures a line with kerning; a sum of single characters can fall short of that by a
// little, so the lines are made this much narrower than the column and pdfkit never breaks them again.
const SAFETY = 0.98;

/** Widths of single characters, per font and size: a document measures each one once. */
export class CharWidths {
  private readonly fonts = new Map<string, Map<number, number>>();

  constructor(private readonly doc: Doc) {}

  /** A measure of text in the document's current font and size, which `key` names. */
  measure(key: string): (text: string) => number {
    let known = this.fonts.get(key);
    if (!known) this.fonts.set(key, (known = new Map()));
    const cache = known;
    return (text) => {
      let width = 0;
      for (let i = 0; i < text.length; i++) {
        const code = text.codePointAt(i)!;
        if (code > 0xffff) i++;
        let w = cache.get(code);
        if (w === undefined) {
          w = this.doc.widthOfString(String.fromCodePoint(code));
          cache.set(code, w);
        }
        width += w;
      }
      return width;
    };
  }
}

/** Splits a word wider than `max` into pieces that each fit, character by character. */
function pieces(word: string, max: number, measure: (s: string) => number): string[] {
  const out: string[] = [];
  let piece = '';
  let width = 0;
  for (const ch of word) {
    const w = measure(ch);
    if (piece && width + w > max) {
      out.push(piece);
      piece = '';
      width = 0;
    }
    piece += ch;
    width += w;
  }
  if (piece) out.push(piece);
  return out;
}

/**
 * The lines `text` prints as in a column `width` points wide, in the document's current font and
 * size: each `\n` starts a line, words go on a line while they fit, a word wider than the column
 * is broken where it reaches the edge. Spaces at a break are dropped, as pdfkit drops them.
 */
export function wrapLines(doc: Doc, widths: CharWidths, text: string, width: number): string[] {
  // pdfkit's font and size name the cache entry: the same character differs between them.
  const key = `${(doc as unknown as { _font: { name: string } })._font.name}@${(doc as unknown as { _fontSize: number })._fontSize}:`;
  const measure = widths.measure(key);
  // pdfkit measures each line with the line break that ends it, which the font draws as a glyph.
  const max = (width - measure('\n')) * SAFETY;
  const lines: string[] = [];
  for (const paragraph of text.split('\n')) {
    let line = '';
    let lineWidth = 0;
    let broken = false;
    const lineEnds = () => {
      lines.push(line.trimEnd());
      line = '';
      lineWidth = 0;
      broken = true;
    };
    for (const token of paragraph.split(/(\s+)/)) {
      if (token === '') continue;
      const w = measure(token);
      if (/^\s/.test(token)) {
        // Spaces at a break are dropped; a paragraph's leading spaces stay.
        if (broken && line === '') continue;
        if (lineWidth + w <= max) {
          line += token;
          lineWidth += w;
        } else lineEnds();
        continue;
      }
      if (lineWidth + w <= max) {
        line += token;
        lineWidth += w;
        continue;
      }
      if (line.trim() !== '') lineEnds();
      if (w <= max) {
        line = token;
        lineWidth = w;
        continue;
      }
      const parts = pieces(token, max, measure);
      lines.push(...parts.slice(0, -1));
      line = parts.at(-1) ?? '';
      lineWidth = measure(line);
      broken = true;
    }
    lines.push(line.trimEnd());
  }
  return lines;
}
