-- Submitting tax documents to the SII (docs/decisions.md §15): every document a merchant issues (an
-- invoice's DTE, a credit note) with where its submission stands, and each upload of an EnvioDTE.

-- One upload: the EnvioDTE of one or more documents of a merchant. `uploading` is recorded before
-- the call, so an upload whose answer was lost is found and resolved (by asking SII about its
-- documents) before anything is uploaded again; `sent` once SII answered with a track id.
-- leased_until keeps two workers off the same submission while either calls SII.
CREATE TABLE dte_submissions (
  id            uuid PRIMARY KEY,
  merchant_id   uuid NOT NULL REFERENCES merchants (id),
  status        text NOT NULL CHECK (status IN ('uploading', 'sent', 'done', 'abandoned')),
  envio_xml     bytea NOT NULL,
  track_id      text,
  sii_status    text,
  leased_until  timestamptz,
  uploaded_at   timestamptz NOT NULL,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL
);
CREATE INDEX dte_submissions_open ON dte_submissions (merchant_id) WHERE status = 'uploading';

-- A document as SII is told of it: the DTE as signed (a combined EnvioDTE places it verbatim),
-- what SII's per-document query needs, and its status with SII's reason for an objection or a
-- rejection.
CREATE TABLE dte_documents (
  id            uuid PRIMARY KEY,
  merchant_id   uuid NOT NULL REFERENCES merchants (id),
  invoice_id    uuid NOT NULL REFERENCES invoices (id),
  dte_type      smallint NOT NULL CHECK (dte_type IN (33, 34, 61)),
  folio         integer NOT NULL,
  signed_dte    text NOT NULL,
  ted           text NOT NULL,
  receiver_rut  text NOT NULL,
  issue_date    date NOT NULL,
  total         bigint NOT NULL,
  status        text NOT NULL CHECK (status IN ('pending', 'uploading', 'sent', 'accepted', 'accepted_with_objections', 'rejected')),
  submission_id uuid REFERENCES dte_submissions (id),
  reason        text,
  created_at    timestamptz NOT NULL,
  updated_at    timestamptz NOT NULL,
  UNIQUE (merchant_id, dte_type, folio),
  CHECK ((status IN ('pending')) = (submission_id IS NULL))
);
CREATE INDEX dte_documents_pending ON dte_documents (merchant_id, created_at) WHERE status = 'pending';
CREATE INDEX dte_documents_submission ON dte_documents (submission_id);
CREATE INDEX dte_documents_invoice ON dte_documents (invoice_id);

-- The credit note (type 61) that cancelled the invoice's DTE, as the invoice shows it.
ALTER TABLE invoices
  ADD COLUMN credit_note_folio  integer,
  ADD COLUMN credit_note_status text CHECK (credit_note_status IN ('pending', 'sent', 'accepted', 'accepted_with_objections', 'rejected')),
  ADD CONSTRAINT invoices_credit_note_folio_with_status CHECK ((credit_note_folio IS NULL) = (credit_note_status IS NULL));
