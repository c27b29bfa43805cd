-- A run of the e-mail job claims its row for a while instead of holding a row lock: the SMTP
-- conversation happens with no transaction open (docs/decisions.md §10, an outbound call never holds
-- one). Until sending_until another run finds the row taken; a run that died leaves a claim that
-- runs out, so the job's retry can take the row. NULL when no run holds it.
ALTER TABLE emails ADD COLUMN sending_until timestamptz;
