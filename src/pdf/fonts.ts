import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { create, type Font } from 'fontkit';

/**
 * The PDF's typeface: DejaVu Sans, embedded (pdfkit subsets it to the glyphs a document uses). The
 * standard PDF fonts know only WinAnsi; DejaVu Sans has Latin Extended (Ł, Ő, Ș), Greek, Cyrillic,
 * arrows, typographic punctuation and €, so names, addresses and descriptions print as written.
 */
const FILES = {
  regular: 'DejaVuSans.ttf',
  bold: 'DejaVuSans-Bold.ttf',
  italic: 'DejaVuSans-Oblique.ttf',
} as const;

export type FontStyle = keyof typeof FILES;

let parsed: Record<FontStyle, Font> | null = null;

/**
 * The parsed fonts, read and parsed once per process: parsing (its kerning and layout tables
 * above all) costs several times the rest of a PDF's rendering. pdfkit takes a parsed font and
 * keeps what each document uses in a subset of its own, so one parse serves every document.
 */
export function pdfFonts(): Record<FontStyle, Font> {
  if (!parsed) {
    const dir = path.join(path.dirname(createRequire(import.meta.url).resolve('dejavu-fonts-ttf/package.json')), 'ttf');
    const load = (file: string) => create(readFileSync(path.join(dir, file)));
    parsed = { regular: load(FILES.regular), bold: load(FILES.bold), italic: load(FILES.italic) };
  }
  return parsed;
}

/** Whether text set in the regular and the bold face can show this character. */
export function printable(codePoint: number): boolean {
  const { regular, bold } = pdfFonts();
  return regular.hasGlyphForCodePoint(codePoint) && bold.hasGlyphForCodePoint(codePoint);
}
