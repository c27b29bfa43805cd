import { z } from 'zod';
// Every schema's messages come from this error map: "must be between 1 and 100", never zod's words.
import './zod-errors.js';

export const uuid = z.uuid({ message: 'must be a UUID' });

// Number() also reads "0x2", "0b1", " 2" and "": a query's number is written in decimal digits
// (with an exponent if it likes, as JSON allows).
const DECIMAL = /^[+-]?\d+(\.\d+)?([eE][+-]?\d+)?$/;

/** A whole number in a query string, from `min` (to `max`), `fallback` when absent. */
export function queryInteger(min: number, max: number | null, fallback: number) {
  const int = z.int({ error: (iss) => (iss.code === 'invalid_type' && iss.input !== undefined ? 'must be an integer' : undefined) }).min(min);
  return z.preprocess((v) => (typeof v === 'string' && DECIMAL.test(v) ? Number(v) : v), (max === null ? int : int.max(max)).default(fallback));
}

export const pagingQuery = {
  limit: queryInteger(1, 100, 50),
  offset: queryInteger(0, null, 0),
};

/**
 * An instant a client sends, RFC 3339 with its offset (Z or ±hh:mm). Its "T" and "Z" may be lower
 * case (RFC 3339 §5.6): read as upper case.
 */
export const rfc3339 = z.preprocess(
  (v) => (typeof v === 'string' ? v.toUpperCase() : v),
  z.iso.datetime({ offset: true, message: 'must be an RFC 3339 timestamp' }),
);

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

/*
 * Text fields carry text (docs/decisions.md §19). A one-line field refuses the C0 controls (tab, CR and LF
 * included), DEL, the C1 controls, U+2028/U+2029 and the bidirectional overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069): a U+202E reversed a client name on the page, in the e-mail, the
 * console and the PDF, and a CR/LF in a name or phone printed as a line of its own ("Bcc: v@x.cl").
 * A multi-line field allows line breaks (\n or \r\n, each counted once) up to a bound and nothing
 * else of those. The check sees the value as sent, before any `.trim()`.
 */

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const NOT_TEXT = /[\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]/u;
// eslint-disable-next-line no-control-regex -- as above; \n and \r\n are let through
const NOT_TEXT_BUT_BREAKS = /[\u0000-\u0009\u000B\u000C\u000E-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]|\r(?!\n)/u;

/** What a refused character is, by its code point: "U+202E (a bidirectional override)". */
export function describeCharacter(ch: string): string {
  const cp = ch.codePointAt(0)!;
  const name =
    cp === 0x09 ? 'a tab'
    : cp === 0x0a ? 'a line feed'
    : cp === 0x0d ? 'a carriage return'
    : cp === 0x7f ? 'the delete control character'
    : cp === 0x2028 ? 'a line separator'
    : cp === 0x2029 ? 'a paragraph separator'
    : cp >= 0x202a && cp <= 0x202e ? 'a bidirectional override'
    : cp >= 0x2066 && cp <= 0x2069 ? 'a bidirectional isolate'
    : 'a control character';
  return `U+${cp.toString(16).toUpperCase().padStart(4, '0')} (${name})`;
}

function oneLineIssue(value: string): string | null {
  const bad = NOT_TEXT.exec(value);
  if (!bad) return null;
  if (bad[0] === '\n' || bad[0] === '\r') return `must be one line of text, without ${describeCharacter(bad[0])}`;
  return `must not contain ${describeCharacter(bad[0])}`;
}

function multiLineIssue(value: string, maxBreaks: number): string | null {
  const bad = NOT_TEXT_BUT_BREAKS.exec(value);
  if (bad) return bad[0] === '\r' ? 'must not contain a lone U+000D (a carriage return): line breaks are \\n or \\r\\n' : `must not contain ${describeCharacter(bad[0])}`;
  const breaks = value.split('\n').length - 1;
  return breaks > maxBreaks ? `at most ${plural(maxBreaks, 'line break')}` : null;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The one-line check, for a string schema that is not built with `oneLine()` (`z.email()`, a union's string branch). */
export function oneLineCheck(value: string, ctx: z.RefinementCtx<string>): void {
  const message = oneLineIssue(value);
  if (message) ctx.addIssue({ code: 'custom', message, input: value });
}

/** The multi-line check: line breaks (\n or \r\n) up to `maxBreaks`, no other control character. */
export function multiLineCheck(maxBreaks: number) {
  return (value: string, ctx: z.RefinementCtx<string>): void => {
    const message = multiLineIssue(value, maxBreaks);
    if (message) ctx.addIssue({ code: 'custom', message, input: value });
  };
}

/** A one-line text field: `oneLine().trim().min(1).max(200)`. */
export function oneLine() {
  return z.string().superRefine(oneLineCheck);
}

/** A text field that may hold up to `maxBreaks` line breaks: `multiLine(10).trim().max(1000)`. */
export function multiLine(maxBreaks: number) {
  return z.string().superRefine(multiLineCheck(maxBreaks));
}
