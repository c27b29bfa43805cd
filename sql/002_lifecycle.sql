-- Invoice lifecycle: stored PDFs, payments, e-mails, reminders.

-- Checkout invoices get no automated reminders and no invoice e-mail.
ALTER TABLE invoices ADD COLUMN source text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'checkout'));

-- Open invoices by due date: the overdue sweep and the reminder planner read only these.
CREATE INDEX invoices_open_due ON invoices (due_date) WHERE status IN ('sent', 'viewed', 'overdue');

-- An issued document never changes: rendered once, served as the same bytes ever after.
CREATE TABLE invoice_pdfs (
  invoice_id  uuid PRIMARY KEY REFERENCES invoices(id) ON DELETE CASCADE,
  content     bytea NOT NULL,
  sha256      text NOT NULL,
  created_at  timestamptz NOT NULL
);

CREATE TABLE payments (
  id             uuid PRIMARY KEY,
  merchant_id    uuid NOT NULL REFERENCES merchants(id),
  invoice_id     uuid NOT NULL REFERENCES invoices(id),
  amount         numeric NOT NULL,
  currency       text NOT NULL,
  method         text,
  notes          text,
  provider       text NOT NULL,
  transaction_id text NOT NULL,
  status         text NOT NULL CHECK (status IN ('succeeded', 'failed')),
  paid_at        timestamptz,
  created_at     timestamptz NOT NULL
);
-- However requests race, an invoice is paid once.
CREATE UNIQUE INDEX payments_one_success ON payments (invoice_id) WHERE status = 'succeeded';
CREATE INDEX payments_merchant_created ON payments (merchant_id, created_at DESC, id DESC);
CREATE INDEX payments_invoice ON payments (invoice_id);

-- Every message the service sends, written in the transaction that caused it; the job delivers it.
CREATE TABLE emails (
  id                  uuid PRIMARY KEY,
  merchant_id         uuid NOT NULL REFERENCES merchants(id),
  invoice_id          uuid REFERENCES invoices(id) ON DELETE SET NULL,
  kind                text NOT NULL CHECK (kind IN ('invoice', 'reminder', 'receipt', 'endpoint_disabled')),
  -- One message per cause: a second send of the same cause finds this row and does nothing.
  dedupe_key          text NOT NULL UNIQUE,
  to_address          text NOT NULL,
  locale              text NOT NULL CHECK (locale IN ('es', 'en')),
  data                jsonb NOT NULL DEFAULT '{}',
  status              text NOT NULL CHECK (status IN ('queued', 'sent', 'failed')),
  subject             text,
  attempts            integer NOT NULL DEFAULT 0,
  provider_message_id text,
  last_error          text,
  created_at          timestamptz NOT NULL,
  sent_at             timestamptz
);
CREATE INDEX emails_invoice ON emails (invoice_id, created_at);
CREATE INDEX emails_merchant_created ON emails (merchant_id, created_at DESC);

CREATE TABLE reminders (
  id              uuid PRIMARY KEY,
  merchant_id     uuid NOT NULL REFERENCES merchants(id),
  invoice_id      uuid NOT NULL REFERENCES invoices(id) ON DELETE CASCADE,
  reminder_number integer NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('manual', 'automated')),
  -- For automated reminders: which point of the schedule (-3, 0, +7 days) this one is.
  schedule_offset integer,
  custom_message  text,
  sent_at         timestamptz NOT NULL,
  UNIQUE (invoice_id, reminder_number),
  UNIQUE (invoice_id, schedule_offset)
);
