import { z } from 'zod';
// Every schema's messages come from this error map: "must be between 1 and 100", never zod's words.
import './zod-errors.js';

export const uuid = z.uuid({ message: 'must be a UUID' });

export const pagingQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(50),
  offset: z.coerce.number().int().min(0).default(0),
};

export const timestamp = z.string().meta({ format: 'date-time', example: '2026-11-22T03:16:13.123Z' });

export const link = z.object({
  href: z.string(),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).optional(),
  rel: z.string().optional(),
  title: z.string().optional(),
});

export function listOf<T extends z.ZodType>(item: T) {
  return z.object({ data: z.array(item), limit: z.number().int(), offset: z.number().int(), has_more: z.boolean() });
}

/** Fetch one more row than asked to learn whether another page exists. */
export function page<T>(rows: T[], limit: number, offset: number): { data: T[]; limit: number; offset: number; has_more: boolean } {
  return { data: rows.slice(0, limit), limit, offset, has_more: rows.length > limit };
}

/** RFC 3339 UTC with milliseconds; text already in that form (written so by PostgreSQL) passes as is. */
export function iso(d: Date | string | null | undefined): string | null {
  return typeof d === 'string' ? d : d ? d.toISOString() : null;
}
