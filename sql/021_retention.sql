-- The daily purge of what is older than the retention (docs/decisions.md §18) finds its oldest rows by
-- creation time: without these it would scan each table whole, every day.
CREATE INDEX IF NOT EXISTS events_created ON events (created_at);
CREATE INDEX IF NOT EXISTS webhook_deliveries_created ON webhook_deliveries (created_at);
CREATE INDEX IF NOT EXISTS emails_created ON emails (created_at);
