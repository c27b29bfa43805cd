-- The events API (docs/decisions.md §18). GET /events reads a merchant's events newest first by id, and
-- each asked type the same way; events_merchant_created (001) serves created_at windows and
-- recover. delivery_success=false starts from the deliveries that did not succeed, which only
-- webhook_deliveries_undelivered holds (a small part of the table); their replays are found
-- through webhook_deliveries_replay_of (004).
CREATE INDEX events_merchant_id ON events (merchant_id, id);
CREATE INDEX events_merchant_type_id ON events (merchant_id, type, id);
CREATE INDEX webhook_deliveries_undelivered ON webhook_deliveries (merchant_id, event_id) WHERE replay_of IS NULL AND status <> 'success';
