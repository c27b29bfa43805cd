-- Credit and debit notes through the API (docs/tax-documents.md): documents of their own, numbered
-- per merchant and kind without gaps (CN-000001, DN-000001), with a DTE (61, 56) when the document
-- they modify has one.

CREATE TABLE note_counters (
  merchant_id uuid NOT NULL REFERENCES merchants (id),
  kind        text NOT NULL CHECK (kind IN ('credit', 'debit')),
  last_number bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (merchant_id, kind)
);

CREATE TABLE invoice_notes (
  id              uuid PRIMARY KEY,
  merchant_id     uuid NOT NULL REFERENCES merchants (id),
  invoice_id      uuid NOT NULL REFERENCES invoices (id),
  kind            text NOT NULL CHECK (kind IN ('credit', 'debit')),
  number          text NOT NULL,
  -- credit: cancel (CodRef 1), correct_text (2), return (3); debit: cancel (1, of a credit note), charge (3).
  reason          text NOT NULL CHECK ((kind = 'credit' AND reason IN ('cancel', 'correct_text', 'return')) OR (kind = 'debit' AND reason IN ('cancel', 'charge'))),
  description     text NOT NULL,
  -- The debit note's: the credit note it cancels.
  cancels_note_id uuid REFERENCES invoice_notes (id),
  -- The credit note's: the debit note that cancelled it.
  cancelled_by_id uuid REFERENCES invoice_notes (id),
  global_discount_percent     numeric(5,2),
  global_discount_amount      numeric,
  global_discount_description text,
  subtotal        numeric NOT NULL,
  taxable_amount  numeric NOT NULL,
  exempt_amount   numeric NOT NULL,
  discount_total  numeric NOT NULL,
  tax_total       numeric NOT NULL,
  total           numeric NOT NULL,
  "references"    jsonb NOT NULL DEFAULT '[]',
  dte_type        smallint CHECK (dte_type IN (56, 61)),
  dte_folio       integer,
  dte_status      text CHECK (dte_status IN ('pending', 'sent', 'accepted', 'accepted_with_objections', 'rejected')),
  dte_track_id    text,
  -- The signed EnvioDTE of the note alone, ISO-8859-1: its dte.xml.
  envio_xml       bytea,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  UNIQUE (merchant_id, kind, number),
  CHECK ((dte_type IS NULL) = (dte_folio IS NULL)),
  CHECK ((kind = 'debit' AND reason = 'cancel') = (cancels_note_id IS NOT NULL))
);
CREATE INDEX invoice_notes_invoice ON invoice_notes (invoice_id, kind, created_at);

-- A note's lines. A returned line names the invoice's line it returns (its quantity counts
-- against what is left to return); a corrected text has neither quantity nor price.
CREATE TABLE invoice_note_items (
  id               uuid PRIMARY KEY,
  note_id          uuid NOT NULL REFERENCES invoice_notes (id) ON DELETE CASCADE,
  position         integer NOT NULL,
  invoice_item_id  uuid REFERENCES invoice_items (id),
  description      text NOT NULL,
  quantity         numeric,
  unit_price       numeric,
  discount_percent numeric(5,2),
  discount_amount  numeric NOT NULL DEFAULT 0,
  exempt           boolean NOT NULL DEFAULT false,
  line_total       numeric NOT NULL,
  UNIQUE (note_id, position)
);
CREATE INDEX invoice_note_items_invoice_item ON invoice_note_items (invoice_item_id) WHERE invoice_item_id IS NOT NULL;

-- A note's DTE is submitted like the invoice's, and its outcome shows on the note.
ALTER TABLE dte_documents ADD COLUMN note_id uuid REFERENCES invoice_notes (id);
