import type { z } from 'zod';
import { AppError, type FieldError } from '../errors.js';
// Installs the error map that words every message (src/http/zod-errors.ts); the CLI gets it here too.
import './zod-errors.js';

/** `['items', 0, 'unit_price']` → `items[0].unit_price` */
export function formatPath(path: readonly PropertyKey[], prefix = ''): string {
  let out = prefix;
  for (const seg of path) {
    if (typeof seg === 'number' || seg === '') out += `[${JSON.stringify(seg)}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out;
}

/**
 * One message per field, the first issue zod found for it: a value that is not a number has no
 * range to report, and a client fixes one rule at a time. The words come from the error map in
 * zod-errors.ts or from the schema's own message; `{ path, message }` is the whole shape.
 */
export function fieldErrors(error: z.ZodError, prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  const add = (path: string, message: string) => {
    if (seen.has(path)) return;
    seen.add(path);
    out.push({ path, message });
  };
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add(formatPath([...issue.path, key], prefix), 'unknown field');
      continue;
    }
    add(formatPath(issue.path, prefix), issue.message);
  }
  return out;
}

/**
 * Parses input with a schema or throws a validation_error naming every bad field; `whole` names
 * the input itself when the problem is its shape (a body that is not an object).
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, status = 422, prefix = '', whole = 'body'): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) {
    throw AppError.validation(
      fieldErrors(result.error, prefix).map((e) => (e.path === '' ? { ...e, path: whole } : e)),
      status,
    );
  }
  return result.data;
}

// Deeper than any request of this API needs; bounds the work every later walk of a body does.
const MAX_JSON_DEPTH = 32;

/**
 * What JSON allows but no field of ours can hold: NUL characters and lone UTF-16 surrogates
 * (`"\ud800"`: PostgreSQL text and JSON refuse both)
 * and nesting deeper than MAX_JSON_DEPTH. Iterative, so no input can exhaust the stack.
 */
export function unstorableJson(value: unknown, root = 'body'): FieldError | null {
  const stack: { v: unknown; path: PropertyKey[]; depth: number }[] = [{ v: value, path: [], depth: 0 }];
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    const where = () => formatPath(path) || root;
    if (typeof v === 'string' && v.includes('\u0000')) return { path: where(), message: 'must not contain NUL characters' };
    if (typeof v === 'string' && !v.isWellFormed()) return { path: where(), message: 'must be well-formed Unicode (a lone surrogate such as \\ud800 is not)' };
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return { path: where(), message: `is nested more than ${MAX_JSON_DEPTH} levels deep` };
    if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push({ v: item, path: [...path, i], depth: depth + 1 }));
      continue;
    }
    for (const [k, item] of Object.entries(v)) {
      if (k.includes('\u0000') || !k.isWellFormed()) return { path: where(), message: 'has a field name with a NUL character or a lone surrogate' };
      stack.push({ v: item, path: [...path, k], depth: depth + 1 });
    }
  }
  return null;
}
