// What SII's documents need of XML text: ISO-8859-1 characters only, SII's field lengths, and
// elements written with no whitespace between tags (the form SII signs and checks).
import { create } from 'xmlbuilder2';
import type { XMLBuilder } from 'xmlbuilder2/lib/interfaces.js';

// Characters ISO-8859-1 lacks.
const BEYOND_LATIN1 = /[\u0100-\u{10ffff}]/gu;

/** XML 1.0 refuses C0 controls other than tab, line feed and carriage return. */
function isControl(c: string): boolean {
  const code = c.codePointAt(0)!;
  return code < 0x20 && c !== '\t' && c !== '\n' && c !== '\r';
}

// Typographic characters people paste from word processors, as ISO-8859-1 writes them.
const PLAIN: Record<string, string> = {
  '\u2018': "'", '\u2019': "'", '\u201a': "'", '\u201c': '"', '\u201d': '"', '\u201e': '"',
  '\u2013': '-', '\u2014': '-', '\u2212': '-', '\u2022': '-', '\u20ac': 'EUR',
};

/**
 * The text in ISO-8859-1, the documents' encoding: a character outside it becomes its plain
 * form (typographic quotes and dashes, a compatibility decomposition such as "ﬁ" → "fi"), else "?".
 */
export function latin1(text: string): string {
  let out = '';
  for (const c of text.normalize('NFC')) {
    if (isControl(c)) continue;
    if (c.codePointAt(0)! <= 0xff) out += c;
    else out += PLAIN[c] ?? (c.normalize('NFKD').replace(BEYOND_LATIN1, '') || '?');
  }
  return out;
}

/** At most `max` characters of the text, for a field of SII's schema. */
export function cut(text: string, max: number): string {
  const chars = [...text.trim()];
  return chars.length <= max ? chars.join('') : chars.slice(0, max).join('').trimEnd();
}

/** The document of an XML text, whitespace between tags dropped. */
export function parseFlat(xml: string): XMLBuilder {
  return create({ skipWhitespaceOnlyText: true }, xml);
}

/** The first element of that name inside `doc` (the root included), or null. */
export function findElement(doc: XMLBuilder, name: string): XMLBuilder | null {
  return doc.root().find((n) => n.node.nodeName === name, true, true) ?? null;
}

/** The element as SII signs it: no declaration, no whitespace between tags. */
export function flat(element: XMLBuilder): string {
  return element.toString({ prettyPrint: false });
}

/** The bytes SII's signatures cover: the text in ISO-8859-1. */
export function latin1Bytes(text: string): Buffer {
  if (text.replace(BEYOND_LATIN1, '') !== text) throw new Error('text outside ISO-8859-1 cannot be signed as SII signs it');
  return Buffer.from(text, 'latin1');
}
