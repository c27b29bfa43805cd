import type { z } from 'zod';
import { AppError, type FieldError } from '../errors.js';

/** `['items', 0, 'unit_price']` → `items[0].unit_price` */
export function formatPath(path: readonly PropertyKey[], prefix = ''): string {
  let out = prefix;
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out;
}

export function fieldErrors(error: z.ZodError, prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: formatPath([...issue.path, key], prefix), message: 'unknown field' });
      continue;
    }
    const missing = issue.code === 'invalid_type' && /received undefined/.test(issue.message);
    out.push({ path: formatPath(issue.path, prefix), message: missing ? 'is required' : issue.message });
  }
  return out;
}

/** Parses input with a schema or throws a validation_error naming every bad field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, status = 422, prefix = ''): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw AppError.validation(fieldErrors(result.error, prefix), status);
  return result.data;
}
