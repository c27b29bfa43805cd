// The "CEDIBLE" copy of a factura (docs/decisions.md §17): the copy the receiver signs on delivery, which
// the issuer can then assign (ceder) to a factoring company. The SII asks for the receipt box of
// Ley 19.983 and the word CEDIBLE at the bottom right of the document. Their texts are the SII's
// and the law's, so they stay Spanish in a document of any language.

const INK = '#000000';
// Two to a row but the name, so that the box is no taller than the timbre beside it.
const RECEIPT_ROWS = [['Nombre'], ['R.U.T.', 'Fecha'], ['Recinto', 'Firma']];
const LEY_19983 =
  'El acuse de recibo que se declara en este acto, de acuerdo a lo dispuesto en la letra b) del Art. 4°, y la letra c) del ' +
  'Art. 5° de la Ley 19.983, acredita que la entrega de mercaderías o servicio(s) prestado(s) ha(n) sido recibido(s).';

const PAD = 7;
const BORDER = 0.8;
const TITLE_SIZE = 9;
const FIELD_SIZE = 8.5;
// Room to write a name or sign by hand above each field's rule.
const FIELD_HEIGHT = 17;
const LAW_SIZE = 7;
const FIELD_GAP = 10;
const CEDIBLE_SIZE = 16;
const CEDIBLE_GAP = 4;

export interface CedibleBlock {
  height: number;
  /** Draws the receipt box and CEDIBLE under it with the top left corner at (x, y). */
  draw(x: number, y: number): void;
}

/** A label at the foot of its row, and a rule from it to the field's end to write on. */
function drawField(doc: PDFKit.PDFDocument, label: string, x: number, y: number, width: number): void {
  const baseline = y + FIELD_HEIGHT - 3;
  doc.font('bold').fontSize(FIELD_SIZE).fillColor(INK).text(label, x, baseline - FIELD_SIZE, { width, lineBreak: false });
  const ruleX = x + doc.widthOfString(label) + 3;
  doc.moveTo(ruleX, baseline + 1).lineTo(x + width, baseline + 1).lineWidth(0.5).strokeColor(INK).stroke();
}

/** The receipt box, `width` wide, and under it CEDIBLE, right-aligned. */
export function cedibleBlock(doc: PDFKit.PDFDocument, width: number): CedibleBlock {
  const inner = width - 2 * PAD;
  const titleH = doc.font('bold').fontSize(TITLE_SIZE).heightOfString('ACUSE DE RECIBO', { width: inner });
  const lawH = doc.font('regular').fontSize(LAW_SIZE).heightOfString(LEY_19983, { width: inner });
  const boxH = PAD + titleH + RECEIPT_ROWS.length * FIELD_HEIGHT + 4 + lawH + PAD;
  const cedibleH = doc.font('bold').fontSize(CEDIBLE_SIZE).heightOfString('CEDIBLE', { width });

  return {
    // Rounded up: text whose last line ends a hair past the page's bottom margin opens a new page.
    height: Math.ceil(boxH + CEDIBLE_GAP + cedibleH),
    draw(x, y) {
      doc.rect(x + BORDER / 2, y + BORDER / 2, width - BORDER, boxH - BORDER).lineWidth(BORDER).strokeColor(INK).stroke();
      doc.font('bold').fontSize(TITLE_SIZE).fillColor(INK).text('ACUSE DE RECIBO', x + PAD, y + PAD, { width: inner });
      let fieldY = y + PAD + titleH;
      for (const fields of RECEIPT_ROWS) {
        const fieldW = (inner - (fields.length - 1) * FIELD_GAP) / fields.length;
        fields.forEach((field, i) => drawField(doc, `${field}:`, x + PAD + i * (fieldW + FIELD_GAP), fieldY, fieldW));
        fieldY += FIELD_HEIGHT;
      }
      doc.font('regular').fontSize(LAW_SIZE).text(LEY_19983, x + PAD, fieldY + 4, { width: inner });
      doc.font('bold').fontSize(CEDIBLE_SIZE).text('CEDIBLE', x, y + boxH + CEDIBLE_GAP, { width, align: 'right', lineBreak: false });
    },
  };
}
