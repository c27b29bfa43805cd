-- Webhook limits and error categories (docs/decisions.md §10).

-- What the API shows of a failed attempt is a category; the raw error beside it is for support
-- staff only (it told merchants which ports of a host answer). Rows written before this have no
-- category: the API shows null for them.
ALTER TABLE webhook_deliveries ADD COLUMN last_error_category text CHECK (last_error_category IN
  ('timeout', 'connection_refused', 'connection_reset', 'tls_error', 'dns_error', 'address_not_allowed', 'redirect', 'http_error'));
ALTER TABLE webhook_attempts ADD COLUMN error_category text CHECK (error_category IN
  ('timeout', 'connection_refused', 'connection_reset', 'tls_error', 'dns_error', 'address_not_allowed', 'redirect', 'http_error'));

-- Deliveries made by POST .../test, told apart from a sandbox endpoint's (also is_test), because
-- only they count toward the two a merchant may have in flight. The index holds only those in
-- flight, so counting them stays cheap however many deliveries a merchant has.
ALTER TABLE webhook_deliveries ADD COLUMN from_test_route boolean NOT NULL DEFAULT false;
CREATE INDEX webhook_deliveries_test_route_pending ON webhook_deliveries (merchant_id, created_at)
  WHERE from_test_route AND status = 'pending';

-- One URL once per merchant, enforced by a unique index so that two requests at once cannot both
-- register it. A database may already hold duplicates, which a plain unique index would refuse to
-- build (failing the deploy), and deleting them would silently drop a merchant's endpoint with its
-- secret and deliveries. So the oldest endpoint of each URL keeps it; the later copies are marked
-- and left out of the index. They go on working until deleted, and changing one's URL unmarks it
-- (webhooks/queries.ts updateEndpoint). Every endpoint created from now on is unmarked, so it can
-- share its URL with no endpoint but such a leftover copy.
ALTER TABLE webhook_endpoints ADD COLUMN duplicate_url boolean NOT NULL DEFAULT false;
UPDATE webhook_endpoints e SET duplicate_url = true
 WHERE EXISTS (SELECT 1 FROM webhook_endpoints o
                WHERE o.merchant_id = e.merchant_id AND o.url = e.url AND (o.created_at, o.id) < (e.created_at, e.id));
CREATE UNIQUE INDEX webhook_endpoints_merchant_url ON webhook_endpoints (merchant_id, url) WHERE NOT duplicate_url;
