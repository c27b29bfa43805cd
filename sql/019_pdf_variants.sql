-- An issued invoice's other renderings than its document in invoice_pdfs: a boleta's ticket, the
-- same boleta on a receipt printer's 80 mm roll (docs/decisions.md §20). Stored once as that document is,
-- so that every reprint at the counter is the same bytes, with the issuer as it was when issued;
-- kept apart from invoice_pdfs, whose one row per invoice is the document the e-mail attaches.
CREATE TABLE invoice_pdf_variants (
  invoice_id  uuid NOT NULL REFERENCES invoices(id) ON DELETE CASCADE,
  variant     text NOT NULL CHECK (variant IN ('ticket')),
  content     bytea NOT NULL,
  sha256      text NOT NULL,
  created_at  timestamptz NOT NULL,
  PRIMARY KEY (invoice_id, variant)
);
-- Deflated already, as invoice_pdfs' content is (014_pdf_storage.sql).
ALTER TABLE invoice_pdf_variants ALTER COLUMN content SET STORAGE EXTERNAL;
