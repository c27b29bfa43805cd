-- Credit and debit notes are e-mailed to the client with their PDF and XML (docs/decisions.md §17).
ALTER TABLE emails DROP CONSTRAINT emails_kind_check;
ALTER TABLE emails ADD CONSTRAINT emails_kind_check
  CHECK (kind IN ('invoice', 'reminder', 'receipt', 'endpoint_disabled', 'credit_note', 'debit_note'));
