-- Checkout sessions (docs/decisions.md §11): a hosted payment page for one invoice, created and sent at once.

CREATE TABLE checkout_sessions (
  id                  uuid PRIMARY KEY,
  merchant_id         uuid NOT NULL REFERENCES merchants(id),
  invoice_id          uuid NOT NULL UNIQUE REFERENCES invoices(id),
  -- The secret of checkout_url. Not the id: the merchant's systems see and log ids.
  token               text NOT NULL UNIQUE,
  -- Rendered into the hosted page's forms; a POST without it is refused (cross-site submissions).
  csrf_token          text NOT NULL,
  status              text NOT NULL CHECK (status IN ('pending', 'completed', 'expired')),
  payment_status      text NOT NULL CHECK (payment_status IN ('unpaid', 'paid', 'failed')),
  amount              numeric NOT NULL CHECK (amount > 0),
  currency            text NOT NULL,
  description         text NOT NULL,
  customer_name       text NOT NULL,
  customer_email      text NOT NULL,
  success_url         text NOT NULL,
  cancel_url          text NOT NULL,
  external_reference  text,
  locale              text NOT NULL CHECK (locale IN ('es', 'en')),
  -- The provider the session was opened with: changing the merchant's provider later must not
  -- send a customer halfway through a payment to another gateway.
  provider            text NOT NULL,
  provider_session_id text NOT NULL,
  expires_at          timestamptz NOT NULL,
  completed_at        timestamptz,
  created_at          timestamptz NOT NULL,
  updated_at          timestamptz NOT NULL,
  -- Completed means paid, and only a completed session has completed_at.
  CHECK ((status = 'completed') = (payment_status = 'paid')),
  CHECK ((status = 'completed') = (completed_at IS NOT NULL))
);

-- The expiry sweep reads only sessions still open, oldest deadline first.
CREATE INDEX checkout_sessions_pending_expiry ON checkout_sessions (expires_at) WHERE status = 'pending';
