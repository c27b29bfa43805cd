-- The issuer's legal profile, printed on its documents (PDF, hosted page, e-mails) and the tax
-- profile of docs/decisions.md §15: one profile. A merchant has none until support staff set it; the
-- printed fields come together (all or none), the SII fields are needed only for DTEs.
-- payment_instructions: what the hosted invoice page shows a customer when the merchant cannot
-- take payments online (docs/decisions.md §11).
ALTER TABLE merchants
  ADD COLUMN rut                  text,
  ADD COLUMN razon_social         text,
  ADD COLUMN giro                 text,
  ADD COLUMN acteco               text,
  ADD COLUMN direccion            text,
  ADD COLUMN comuna               text,
  ADD COLUMN ciudad               text,
  ADD COLUMN resolucion_numero    integer,
  ADD COLUMN resolucion_fecha     date,
  ADD COLUMN sii_env              text CHECK (sii_env IN ('certificacion', 'produccion')),
  ADD COLUMN payment_instructions text,
  ADD CONSTRAINT merchants_legal_profile_whole CHECK (
    num_nulls(rut, razon_social, giro, direccion, comuna, ciudad) IN (0, 6)
  ),
  ADD CONSTRAINT merchants_sii_fields_need_profile CHECK (
    rut IS NOT NULL OR num_nonnulls(acteco, resolucion_numero, resolucion_fecha, sii_env) = 0
  );
