-- Webhooks: endpoints, one delivery per (event, endpoint), every attempt kept (docs/decisions.md §10).

CREATE TABLE webhook_endpoints (
  id                   uuid PRIMARY KEY,
  merchant_id          uuid NOT NULL REFERENCES merchants(id),
  url                  text NOT NULL,
  description          text,
  -- Empty means every event type.
  events               text[] NOT NULL DEFAULT '{}',
  enabled              boolean NOT NULL DEFAULT true,
  is_sandbox           boolean NOT NULL DEFAULT false,
  -- AES-256-GCM: 12-byte IV, 16-byte tag, then the ciphertext of the whole secret.
  secret_encrypted     bytea NOT NULL,
  secret_prefix        text NOT NULL,
  consecutive_failures integer NOT NULL DEFAULT 0,
  -- When the current failure streak began: auto-disable needs both a count and an age.
  failing_since        timestamptz,
  disabled_at          timestamptz,
  disabled_reason      text CHECK (disabled_reason IN ('consecutive_failures', 'gone')),
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_merchant ON webhook_endpoints (merchant_id, created_at, id);

-- json keeps the text as written (jsonb reorders keys): receivers get fields in the documented order.
ALTER TABLE events ALTER COLUMN payload TYPE json USING payload::json;
CREATE INDEX events_type_created ON events (type, created_at DESC);

CREATE TABLE webhook_deliveries (
  id                   uuid PRIMARY KEY,
  merchant_id          uuid NOT NULL REFERENCES merchants(id),
  endpoint_id          uuid NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  event_id             uuid NOT NULL,
  event_type           text NOT NULL,
  -- The exact body every attempt sends: retries and replays carry the same bytes.
  payload              text NOT NULL,
  status               text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'success', 'failed', 'retrying')),
  attempts             integer NOT NULL DEFAULT 0,
  max_attempts         integer NOT NULL,
  next_retry_at        timestamptz,
  -- A worker holds the delivery while its attempt is on the wire; a dead worker's hold runs out.
  leased_until         timestamptz,
  last_response_status integer,
  last_error           text,
  completed_at         timestamptz,
  is_test              boolean NOT NULL DEFAULT false,
  replay_of            uuid REFERENCES webhook_deliveries(id) ON DELETE SET NULL,
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL
);
-- Fan-out run twice creates each delivery once; replays are new deliveries of the same event.
CREATE UNIQUE INDEX webhook_deliveries_event_endpoint ON webhook_deliveries (event_id, endpoint_id) WHERE replay_of IS NULL;
CREATE INDEX webhook_deliveries_endpoint_created ON webhook_deliveries (endpoint_id, created_at DESC, id);
CREATE INDEX webhook_deliveries_merchant_created ON webhook_deliveries (merchant_id, created_at DESC, id);
CREATE INDEX webhook_deliveries_status_created ON webhook_deliveries (status, created_at DESC, id);
-- Replays of a delivery (support's view) and the foreign key's ON DELETE SET NULL.
CREATE INDEX webhook_deliveries_replay_of ON webhook_deliveries (replay_of) WHERE replay_of IS NOT NULL;

CREATE TABLE webhook_attempts (
  id               uuid PRIMARY KEY,
  delivery_id      uuid NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  attempt_number   integer NOT NULL,
  started_at       timestamptz NOT NULL,
  duration_ms      integer NOT NULL,
  request_url      text NOT NULL,
  request_headers  jsonb NOT NULL,
  response_status  integer,
  -- The first 4 KB of what the receiver answered.
  response_body    text,
  error            text,
  UNIQUE (delivery_id, attempt_number)
);
