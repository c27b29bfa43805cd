// fontkit (pdfkit's font engine) ships no type declarations: these are the parts the PDF uses.
declare module 'fontkit' {
  export interface GlyphPosition {
    xAdvance: number;
    yAdvance: number;
    xOffset: number;
    yOffset: number;
  }
  export interface GlyphRun {
    glyphs: object[];
    positions: GlyphPosition[];
  }
  export interface Font {
    hasGlyphForCodePoint(codePoint: number): boolean;
    /** Shapes `text`: its glyphs and their positions in font units (pdfkit scales them in place). */
    layout(text: string, features?: unknown): GlyphRun;
  }
  /** Parses a TrueType/OpenType file (a single font, not a collection). */
  export function create(buffer: Uint8Array): Font;
}
