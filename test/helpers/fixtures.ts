/** RFC 3339 UTC with milliseconds, the only timestamp form the API writes. */
export const TS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let seq = 0;

/** A POST /invoices body for a new client each call: CLP, 2 × 5000 + 19 % tax, total 11900. */
export function invoiceBody(extra: Record<string, unknown> = {}): Record<string, any> {
  seq += 1;
  return {
    client: { name: `Cliente ${seq}`, email: `cliente${seq}@example.cl` },
    due_date: '2099-12-31',
    items: [{ description: 'Consultoría', quantity: 2, unit_price: 5000 }],
    ...extra,
  };
}

/**
 * A POST /invoices body for a new company client each call, as a factura needs its receiver
 * (docs/decisions.md §17): a Chilean RUT, giro, address and comuna. CLP, 2 × 5000 + 19 % tax, total 11900.
 */
export function facturaBody(extra: Record<string, unknown> = {}): Record<string, any> {
  const body = invoiceBody(extra);
  return {
    ...body,
    client: {
      ...body.client,
      rut: '77.123.456-9',
      giro: 'Comercio al por mayor',
      address: 'Av. Vicuña Mackenna 4860',
      comuna: 'Macul',
      ciudad: 'Santiago',
      ...(extra.client as object | undefined),
    },
  };
}

/** A merchant's legal profile (docs/decisions.md §15) as the documents print it. */
export const LEGAL_PROFILE = {
  rut: '76.086.428-5',
  razon_social: 'Comercial Los Andes SpA',
  giro: 'Servicios de consultoría',
  direccion: 'Av. Providencia 1234, of. 56',
  comuna: 'Ñuñoa',
  ciudad: 'Santiago',
};
