// What a tax document reads of the invoice it documents, field for field as the invoice keeps it
// (src/invoices/queries.ts's rows satisfy these). A DTE names only what it states, so src/dte
// depends on no invoice module and the invoices can issue their documents through it.

export interface SourceItem {
  description: string;
  quantity: string;
  unit_price: string;
  /** Percent off the line's gross amount, or null; discount_amount is what was taken off either way. */
  discount_percent: string | null;
  discount_amount: string;
  exempt: boolean;
  line_total: string;
}

export interface SourceReference {
  /** The SII's TpoDocRef: 801 (orden de compra), 802, 803, HES, SET or a DTE type. */
  type: string;
  folio: string;
  /** YYYY-MM-DD. */
  date: string;
  reason: string | null;
}

/** The invoice's receiver, as its client was when it was created. */
export interface SourceClient {
  client_name: string;
  client_email: string;
  client_phone: string | null;
  client_address: string | null;
  client_giro: string | null;
  client_comuna: string | null;
  client_ciudad: string | null;
}

export interface SourceInvoice extends SourceClient {
  issue_date: string;
  is_tax_exempt: boolean;
  tax_inclusive: boolean;
  tax_rate: string;
  taxable_amount: string;
  exempt_amount: string;
  discount_total: string;
  global_discount_percent: string | null;
  global_discount_amount: string | null;
  global_discount_description: string | null;
  references: SourceReference[];
  tax_total: string;
  total: string;
  items: SourceItem[];
}
