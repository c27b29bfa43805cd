// A value is a Chilean RUT when it has this shape (docs/decisions.md §14); other tax ids are kept as given.
const RUT_SHAPE = /^[0-9]{1,2}(\.?[0-9]{3}){2}-[0-9kK]$/;

export function looksLikeRut(value: string): boolean {
  return RUT_SHAPE.test(value);
}

/** Modulo-11 check digit of the numeric body. */
export function rutCheckDigit(body: string): string {
  let sum = 0;
  let factor = 2;
  for (let i = body.length - 1; i >= 0; i--) {
    sum += Number(body[i]) * factor;
    factor = factor === 7 ? 2 : factor + 1;
  }
  const dv = 11 - (sum % 11);
  return dv === 11 ? '0' : dv === 10 ? 'K' : String(dv);
}

export type RutResult = { ok: true; value: string } | { ok: false; message: string };

/** RUT-shaped values must check out and are stored as `12345678-5`; anything else is kept. */
export function normaliseTaxId(value: string): RutResult {
  if (!looksLikeRut(value)) return { ok: true, value };
  const [rawBody, dv] = value.split('-') as [string, string];
  const body = rawBody.replace(/\./g, '').replace(/^0+(?=\d)/, '');
  if (rutCheckDigit(body) !== dv.toUpperCase()) return { ok: false, message: 'RUT check digit is not valid' };
  return { ok: true, value: `${body}-${dv.toUpperCase()}` };
}

/** `76086428-5` → `76.086.428-5`, as RUTs are printed; anything not a stored RUT as given. */
export function formatRut(value: string): string {
  const m = /^(\d{1,8})-([\dK])$/.exec(value);
  if (!m) return value;
  return `${m[1]!.replace(/\B(?=(\d{3})+$)/g, '.')}-${m[2]}`;
}
