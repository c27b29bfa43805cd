-- Tax documents as the SII certifies them (docs/tax-documents.md): the receiver's giro, comuna and
-- ciudad; line discounts and exempt lines; a global discount; references to other documents; the
-- totals split into their taxable and exempt parts.

ALTER TABLE clients
  ADD COLUMN giro   text,
  ADD COLUMN comuna text,
  ADD COLUMN ciudad text;

-- The invoice keeps the client as it was when the invoice was made, these three included.
ALTER TABLE invoices
  ADD COLUMN client_giro   text,
  ADD COLUMN client_comuna text,
  ADD COLUMN client_ciudad text,
  ADD COLUMN taxable_amount numeric,
  ADD COLUMN exempt_amount  numeric,
  ADD COLUMN discount_total numeric NOT NULL DEFAULT 0,
  -- The global discount as asked: a percent or an amount (never both), and its text.
  ADD COLUMN global_discount_percent     numeric(5,2),
  ADD COLUMN global_discount_amount      numeric,
  ADD COLUMN global_discount_description text,
  ADD COLUMN "references" jsonb NOT NULL DEFAULT '[]',
  ADD CONSTRAINT invoices_global_discount_one CHECK (global_discount_percent IS NULL OR global_discount_amount IS NULL);

-- Invoices made before: no discount, every line taxable unless the invoice is exempt.
UPDATE invoices SET taxable_amount = CASE WHEN is_tax_exempt THEN 0 ELSE subtotal END,
                    exempt_amount  = CASE WHEN is_tax_exempt THEN subtotal ELSE 0 END;
ALTER TABLE invoices
  ALTER COLUMN taxable_amount SET NOT NULL,
  ALTER COLUMN exempt_amount SET NOT NULL;

ALTER TABLE invoice_items
  ADD COLUMN discount_percent numeric(5,2),
  ADD COLUMN discount_amount  numeric NOT NULL DEFAULT 0,
  ADD COLUMN exempt           boolean NOT NULL DEFAULT false;

-- What the invoice's credit and debit notes add up to (§17): amount_due is total + debited −
-- credited − paid.
ALTER TABLE invoices
  ADD COLUMN amount_credited numeric NOT NULL DEFAULT 0,
  ADD COLUMN amount_debited  numeric NOT NULL DEFAULT 0;

-- Debit notes (type 56) are issued too.
ALTER TABLE dte_folio_counters DROP CONSTRAINT dte_folio_counters_dte_type_check;
ALTER TABLE dte_folio_counters ADD CONSTRAINT dte_folio_counters_dte_type_check CHECK (dte_type IN (33, 34, 56, 61));
ALTER TABLE dte_documents DROP CONSTRAINT dte_documents_dte_type_check;
ALTER TABLE dte_documents ADD CONSTRAINT dte_documents_dte_type_check CHECK (dte_type IN (33, 34, 56, 61));
