-- An e-mail that lost its reason before its job ran (a reminder of an invoice paid or cancelled
-- meanwhile, the invoice e-mail of a cancelled invoice) is never sent; `skipped` records that it
-- was dropped on purpose, with the reason in last_error, unlike `failed`.
ALTER TABLE emails DROP CONSTRAINT emails_status_check;
ALTER TABLE emails ADD CONSTRAINT emails_status_check CHECK (status IN ('queued', 'sent', 'failed', 'skipped'));
