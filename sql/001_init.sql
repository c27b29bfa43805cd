-- Core schema: merchants, keys, clients, invoices, rates, idempotency, rate limits, events.

CREATE TABLE merchants (
  id               uuid PRIMARY KEY,
  name             text NOT NULL,
  email            text NOT NULL,
  base_currency    text NOT NULL DEFAULT 'CLP',
  default_tax_rate numeric(5,2) NOT NULL DEFAULT 19,
  default_locale   text NOT NULL DEFAULT 'es' CHECK (default_locale IN ('es', 'en')),
  timezone         text NOT NULL DEFAULT 'America/Santiago',
  invoice_prefix   text NOT NULL DEFAULT 'INV-',
  payment_provider text,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);

CREATE TABLE api_keys (
  id          uuid PRIMARY KEY,
  merchant_id uuid NOT NULL REFERENCES merchants(id),
  prefix      text NOT NULL,
  key_hash    bytea NOT NULL UNIQUE,
  scopes      text[] NOT NULL,
  allowed_ips cidr[] NOT NULL DEFAULT '{}',
  rate_limit  integer,
  created_at  timestamptz NOT NULL,
  revoked_at  timestamptz
);
CREATE INDEX api_keys_merchant ON api_keys (merchant_id, created_at);

-- One row per merchant; the UPDATE that takes the next number is what makes numbers gapless.
CREATE TABLE invoice_counters (
  merchant_id uuid PRIMARY KEY REFERENCES merchants(id),
  last_number bigint NOT NULL DEFAULT 0
);

CREATE TABLE clients (
  id          uuid PRIMARY KEY,
  merchant_id uuid NOT NULL REFERENCES merchants(id),
  name        text NOT NULL,
  email       text NOT NULL,
  rut         text,
  phone       text,
  address     text,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);
CREATE UNIQUE INDEX clients_merchant_email ON clients (merchant_id, lower(email));
CREATE INDEX clients_merchant_name ON clients (merchant_id, lower(name), id);

CREATE TABLE invoices (
  id                 uuid PRIMARY KEY,
  merchant_id        uuid NOT NULL REFERENCES merchants(id),
  client_id          uuid NOT NULL REFERENCES clients(id),
  -- Snapshot of the client when the invoice was created: issued documents never change.
  client_name        text NOT NULL,
  client_email       text NOT NULL,
  client_rut         text,
  client_phone       text,
  client_address     text,
  invoice_number     text,
  external_reference text,
  status             text NOT NULL CHECK (status IN ('draft','sent','viewed','paid','overdue','cancelled')),
  currency           text NOT NULL,
  exchange_rate      numeric,
  base_currency      text,
  issue_date         date NOT NULL,
  due_date           date NOT NULL,
  is_tax_exempt      boolean NOT NULL,
  tax_inclusive      boolean NOT NULL,
  tax_rate           numeric(5,2) NOT NULL,
  subtotal           numeric NOT NULL,
  tax_total          numeric NOT NULL,
  total              numeric NOT NULL,
  amount_paid        numeric NOT NULL DEFAULT 0,
  public_token       text NOT NULL UNIQUE,
  locale             text NOT NULL CHECK (locale IN ('es', 'en')),
  sent_at            timestamptz,
  paid_at            timestamptz,
  cancelled_at       timestamptz,
  cancel_reason      text,
  last_viewed_at     timestamptz,
  reminders_sent     integer NOT NULL DEFAULT 0,
  payment_provider   text,
  payment_transaction_id text,
  created_at         timestamptz NOT NULL,
  updated_at         timestamptz NOT NULL,
  UNIQUE (merchant_id, invoice_number)
);
CREATE INDEX invoices_merchant_created ON invoices (merchant_id, created_at DESC, id DESC);
CREATE INDEX invoices_merchant_status_created ON invoices (merchant_id, status, created_at DESC, id DESC);
CREATE INDEX invoices_merchant_client ON invoices (merchant_id, client_id, created_at DESC);
CREATE INDEX invoices_merchant_extref ON invoices (merchant_id, external_reference) WHERE external_reference IS NOT NULL;
CREATE INDEX invoices_merchant_updated ON invoices (merchant_id, updated_at);

CREATE TABLE invoice_items (
  id          uuid PRIMARY KEY,
  invoice_id  uuid NOT NULL REFERENCES invoices(id) ON DELETE CASCADE,
  position    integer NOT NULL,
  product_id  text,
  description text NOT NULL,
  quantity    numeric NOT NULL,
  unit_price  numeric NOT NULL,
  line_total  numeric NOT NULL,
  UNIQUE (invoice_id, position)
);

CREATE TABLE exchange_rates (
  merchant_id uuid NOT NULL REFERENCES merchants(id),
  currency    text NOT NULL,
  rate_date   date NOT NULL,
  rate        numeric NOT NULL CHECK (rate > 0),
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (merchant_id, currency, rate_date)
);

CREATE TABLE idempotency_keys (
  merchant_id     uuid NOT NULL,
  route           text NOT NULL,
  key             text NOT NULL,
  request_hash    text NOT NULL,
  status          text NOT NULL CHECK (status IN ('running', 'done')),
  -- A claim whose process died is reclaimable after this instant.
  locked_until    timestamptz NOT NULL,
  response_status integer,
  response_body   text,
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz NOT NULL,
  PRIMARY KEY (merchant_id, route, key)
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);

-- Counted outside business transactions; losing it on a crash only resets a minute's window.
CREATE UNLOGGED TABLE rate_limit_windows (
  bucket       text NOT NULL,
  window_start bigint NOT NULL,
  hits         integer NOT NULL,
  PRIMARY KEY (bucket, window_start)
);

CREATE TABLE events (
  id          uuid PRIMARY KEY,
  merchant_id uuid NOT NULL REFERENCES merchants(id),
  type        text NOT NULL,
  payload     jsonb NOT NULL,
  created_at  timestamptz NOT NULL
);
CREATE INDEX events_merchant_created ON events (merchant_id, created_at DESC);
