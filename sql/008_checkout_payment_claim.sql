-- A payment attempt claims its checkout session for the length of the gateway call, which runs
-- with no transaction open (docs/decisions.md §10). The claim names the attempt, so only that attempt
-- records the outcome; its lease lets a session whose web process died mid-call be paid again.
ALTER TABLE checkout_sessions
  ADD COLUMN payment_claim         uuid,
  ADD COLUMN payment_claimed_until timestamptz,
  ADD CONSTRAINT checkout_sessions_claim_has_lease CHECK ((payment_claim IS NULL) = (payment_claimed_until IS NULL)),
  ADD CONSTRAINT checkout_sessions_claim_while_pending CHECK (payment_claim IS NULL OR status = 'pending');
