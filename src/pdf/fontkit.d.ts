// fontkit (pdfkit's font engine) ships no type declarations: these are the parts the PDF uses.
declare module 'fontkit' {
  export interface Font {
    hasGlyphForCodePoint(codePoint: number): boolean;
  }
  /** Parses a TrueType/OpenType file (a single font, not a collection). */
  export function create(buffer: Uint8Array): Font;
}
