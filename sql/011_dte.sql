-- Chilean tax documents (docs/decisions.md §15): the signing certificate and the folio authorisations
-- (CAF) a merchant loads, the gapless folio counter per document type, and each invoice's DTE.

-- The PKCS#12 file and its password, sealed together (AES-256-GCM, like webhook secrets); what
-- support staff are shown of it sits beside it in the clear. One per merchant: adding replaces.
CREATE TABLE dte_certificates (
  id            uuid PRIMARY KEY,
  merchant_id   uuid NOT NULL UNIQUE REFERENCES merchants (id),
  sealed_pkcs12 bytea NOT NULL,
  subject_rut   text,
  subject_name  text NOT NULL,
  not_after     timestamptz NOT NULL,
  created_at    timestamptz NOT NULL
);

-- One row per merchant and document type with CAFs: the lock every folio assignment and every
-- CAF load of that type takes first, and the count of folios issued.
CREATE TABLE dte_folio_counters (
  merchant_id uuid NOT NULL REFERENCES merchants (id),
  dte_type    smallint NOT NULL CHECK (dte_type IN (33, 34, 61)),
  issued      integer NOT NULL DEFAULT 0,
  PRIMARY KEY (merchant_id, dte_type)
);

-- A CAF: folios folio_from..folio_to of one type; next_folio is the next one to issue.
-- caf_xml is the CAF element as the timbre copies it (no whitespace between tags); the private
-- key SII issued with it stamps documents, so it is sealed.
CREATE TABLE dte_cafs (
  id                 uuid PRIMARY KEY,
  merchant_id        uuid NOT NULL,
  dte_type           smallint NOT NULL,
  folio_from         integer NOT NULL CHECK (folio_from >= 1),
  folio_to           integer NOT NULL,
  next_folio         integer NOT NULL,
  authorized_on      date NOT NULL,
  caf_xml            text NOT NULL,
  sealed_private_key bytea NOT NULL,
  created_at         timestamptz NOT NULL,
  FOREIGN KEY (merchant_id, dte_type) REFERENCES dte_folio_counters (merchant_id, dte_type),
  CHECK (folio_to >= folio_from),
  CHECK (next_folio BETWEEN folio_from AND folio_to + 1)
);
CREATE INDEX dte_cafs_open ON dte_cafs (merchant_id, dte_type, authorized_on, folio_from) WHERE next_folio <= folio_to;

-- What the API shows of an invoice's tax document; null for a merchant that issues none.
ALTER TABLE invoices
  ADD COLUMN dte_type     smallint CHECK (dte_type IN (33, 34)),
  ADD COLUMN dte_folio    integer,
  ADD COLUMN dte_status   text CHECK (dte_status IN ('not_applicable', 'pending', 'sent', 'accepted', 'accepted_with_objections', 'rejected')),
  ADD COLUMN dte_track_id text,
  ADD CONSTRAINT invoices_dte_folio_with_type CHECK ((dte_type IS NULL) = (dte_folio IS NULL));

-- The issued document: the signed EnvioDTE as its ISO-8859-1 bytes, the timbre as signed (the
-- PDF prints it as a barcode) and the resolution it was issued under.
CREATE TABLE invoice_dtes (
  invoice_id        uuid PRIMARY KEY REFERENCES invoices (id),
  merchant_id       uuid NOT NULL REFERENCES merchants (id),
  dte_type          smallint NOT NULL,
  folio             integer NOT NULL,
  caf_id            uuid NOT NULL REFERENCES dte_cafs (id),
  ted               text NOT NULL,
  envio_xml         bytea NOT NULL,
  resolucion_numero integer NOT NULL,
  resolucion_fecha  date NOT NULL,
  created_at        timestamptz NOT NULL,
  UNIQUE (merchant_id, dte_type, folio)
);
