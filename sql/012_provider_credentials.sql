-- docs/decisions.md §16: real gateways (Transbank Webpay Plus, Mercado Pago Checkout Pro).
--
-- A merchant's credentials for a gateway, sealed with ENCRYPTION_KEY (AES-256-GCM) as webhook
-- secrets are: a database dump holds no usable key. `fields` names what is set, so views and
-- `can_charge` need no key to tell a complete set from a partial one.
CREATE TABLE provider_credentials (
  merchant_id uuid NOT NULL REFERENCES merchants (id) ON DELETE CASCADE,
  provider    text NOT NULL,
  sealed      bytea NOT NULL,
  fields      text[] NOT NULL,
  updated_at  timestamptz NOT NULL,
  PRIMARY KEY (merchant_id, provider)
);

-- A gateway session the customer is sent to: where (the gateway's page and the form fields it
-- takes), our reference at the gateway (Webpay's buy order), which attempt of the session it is
-- (a gateway session that ended unpaid is replaced by the next), and when it ended (committed,
-- abandoned or expired at the gateway): an ended one is never committed again.
ALTER TABLE checkout_sessions
  ADD COLUMN provider_redirect jsonb,
  ADD COLUMN provider_reference text,
  ADD COLUMN provider_attempt integer NOT NULL DEFAULT 1,
  ADD COLUMN provider_session_ended_at timestamptz;

-- A gateway's payment is recorded once however often it is reported (a repeated return, a
-- replayed or duplicated notification).
CREATE UNIQUE INDEX payments_gateway_transaction ON payments (provider, transaction_id) WHERE provider IN ('webpay', 'mercadopago');
