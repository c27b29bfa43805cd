-- docs/decisions.md §11: the hosted invoice page's Pay button opens a checkout session for an invoice the
-- API created. Such a session that expires leaves its invoice open, and the customer's next Pay
-- opens another: an invoice may have several sessions over time, but at most one pending, so two
-- clicks at once share one (the second insert meets this index and takes the first one's row).
ALTER TABLE checkout_sessions DROP CONSTRAINT checkout_sessions_invoice_id_key;
CREATE UNIQUE INDEX checkout_sessions_one_pending_per_invoice ON checkout_sessions (invoice_id) WHERE status = 'pending';
-- The unique constraint was also the index behind lookups by invoice (a payment in flight).
CREATE INDEX checkout_sessions_invoice ON checkout_sessions (invoice_id);
