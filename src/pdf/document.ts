import PDFDocument from 'pdfkit';
import type { Locale } from '../invoices/schemas.js';
import { pdfFonts, type FontStyle } from './fonts.js';

/** What a document's info dictionary says; its creation date is the document's, not the clock's, so the same document gives the same bytes. */
export interface DocumentInfo {
  title: string;
  author: string;
  subject: string;
  created: Date;
}

/**
 * A PDFKit document with the embedded fonts registered ('regular' set) and its pages buffered, and
 * the promise of its bytes once ended: what an A4 sheet and a receipt's ticket both print on.
 */
export function openDocument(page: { size: [number, number] | 'A4'; margin: number }, locale: Locale, info: DocumentInfo) {
  const doc = new PDFDocument({
    size: page.size,
    margin: page.margin,
    // No first font: pdfkit's default would load and parse Helvetica's metrics for every document,
    // and an unregistered embedded face, once registered under a name too, would be compared with
    // itself by serialising its name tables. The registered regular face is set below.
    font: null as unknown as string,
    bufferPages: true,
    lang: locale === 'es' ? 'es-CL' : 'en-US',
    info: {
      // pdfkit writes these as UTF-16 text strings: any character is kept.
      Title: info.title,
      Author: info.author,
      Subject: info.subject,
      Creator: 'invoicing-api',
      Producer: 'invoicing-api (PDFKit)',
      CreationDate: info.created,
    },
  });
  const fonts = pdfFonts();
  for (const style of Object.keys(fonts) as FontStyle[]) {
    // @types/pdfkit lags pdfkit 0.20, which takes a parsed fontkit font (CHANGELOG 0.20.0).
    doc.registerFont(style, fonts[style] as unknown as Buffer);
  }
  doc.font('regular');
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    doc.on('data', (c: Buffer) => chunks.push(c));
    doc.on('end', () => resolve(Buffer.concat(chunks)));
    doc.on('error', reject);
  });
  return { doc, done };
}
