-- Boletas (docs/decisions.md §20): types 39 (boleta electrónica) and 41 (boleta no afecta o exenta) are
-- issued to consumers, and uploaded through the SII's boleta REST service rather than §15's SOAP
-- upload.
ALTER TABLE dte_folio_counters DROP CONSTRAINT dte_folio_counters_dte_type_check;
ALTER TABLE dte_folio_counters ADD CONSTRAINT dte_folio_counters_dte_type_check CHECK (dte_type IN (33, 34, 39, 41, 56, 61));
ALTER TABLE dte_documents DROP CONSTRAINT dte_documents_dte_type_check;
ALTER TABLE dte_documents ADD CONSTRAINT dte_documents_dte_type_check CHECK (dte_type IN (33, 34, 39, 41, 56, 61));
ALTER TABLE invoices DROP CONSTRAINT invoices_dte_type_check;
ALTER TABLE invoices ADD CONSTRAINT invoices_dte_type_check CHECK (dte_type IN (33, 34, 39, 41));

-- Which of the SII's services an upload went through: an EnvioDTE to the SOAP upload, or an
-- EnvioBOLETA to the boleta service. Its track id is polled, and a lost answer settled, with that
-- same service; an envelope never mixes the two.
ALTER TABLE dte_submissions ADD COLUMN channel text NOT NULL DEFAULT 'soap' CHECK (channel IN ('soap', 'boleta'));
ALTER TABLE dte_submissions ALTER COLUMN channel DROP DEFAULT;
DROP INDEX dte_submissions_open;
CREATE INDEX dte_submissions_open ON dte_submissions (merchant_id, channel) WHERE status = 'uploading';
