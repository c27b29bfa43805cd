import { z } from 'zod';

/**
 * The words of every validation message this API (and the CLI) gives: one error map, installed
 * process-wide, that names the rule a value broke — its type, its bounds, its format — in our
 * wording, never zod's ("Invalid input: expected string, received number").
 *
 * A message set on a schema (`z.number({ message })`) outranks this map for every issue of that
 * schema, range issues included, so schemas leave type messages to this map and set a message
 * only on a check whose rule the map cannot word (`.refine(…, 'at most 4 decimals')`).
 */

type Issue = z.core.$ZodRawIssue;

interface NumberBounds {
  min?: { value: number | bigint; inclusive: boolean };
  max?: { value: number | bigint; inclusive: boolean };
}

/** The explicit bounds a number schema declares (`.min`, `.gt`, `.max`, `.lt`, `.positive` …). */
function numberBounds(schema: unknown): NumberBounds {
  const checks = (schema as { _zod?: { def?: { checks?: { _zod: { def: Record<string, unknown> } }[] } } } | undefined)?._zod?.def?.checks ?? [];
  const out: NumberBounds = {};
  for (const check of checks) {
    const d = check._zod.def;
    const value = d.value as number | bigint;
    const inclusive = d.inclusive === true;
    if (d.check === 'greater_than' && (out.min === undefined || value > out.min.value || (value === out.min.value && !inclusive))) out.min = { value, inclusive };
    if (d.check === 'less_than' && (out.max === undefined || value < out.max.value || (value === out.max.value && !inclusive))) out.max = { value, inclusive };
  }
  return out;
}

const num = (v: number | bigint) => (typeof v === 'number' && !Number.isInteger(v) ? String(v) : BigInt(v).toString());

/** "must be between 1 and 100" when both bounds are inclusive; otherwise the bound that was broken. */
function numberRange(iss: Extract<Issue, { code: 'too_small' | 'too_big' }>): string {
  const { min, max } = numberBounds(iss.schema);
  if (min?.inclusive && max?.inclusive) return `must be between ${num(min.value)} and ${num(max.value)}`;
  if (iss.code === 'too_small') {
    const bound = min ?? { value: iss.minimum, inclusive: iss.inclusive !== false };
    return bound.inclusive ? `must be at least ${num(bound.value)}` : `must be greater than ${num(bound.value)}`;
  }
  const bound = max ?? { value: iss.maximum, inclusive: iss.inclusive !== false };
  return bound.inclusive ? `must be at most ${num(bound.value)}` : `must be less than ${num(bound.value)}`;
}

function plural(n: number | bigint, word: string): string {
  return `${num(n)} ${word}${Number(n) === 1 ? '' : 's'}`;
}

function sizeRange(iss: Extract<Issue, { code: 'too_small' | 'too_big' }>, unit: string): string {
  if (iss.exact) return `must have exactly ${plural(iss.code === 'too_small' ? iss.minimum : iss.maximum, unit)}`;
  if (iss.code === 'too_small') {
    const n = Number(iss.minimum) + (iss.inclusive === false ? 1 : 0);
    if (n === 1 && unit === 'character') return 'must not be empty';
    return `at least ${plural(n, unit)}`;
  }
  return `at most ${plural(Number(iss.maximum) - (iss.inclusive === false ? 1 : 0), unit)}`;
}

const TYPE_NAMES: Record<string, string> = {
  number: 'must be a number',
  int: 'must be an integer',
  bigint: 'must be an integer',
  string: 'must be a string',
  boolean: 'must be true or false',
  array: 'must be an array',
  tuple: 'must be an array',
  object: 'must be an object',
  record: 'must be an object',
  map: 'must be an object',
  date: 'must be a date',
  null: 'must be null',
  never: 'is not allowed',
};

const FORMAT_NAMES: Record<string, string> = {
  uuid: 'must be a UUID',
  guid: 'must be a UUID',
  email: 'must be a valid e-mail address',
  datetime: 'must be an RFC 3339 timestamp',
  date: 'must be a date YYYY-MM-DD',
  time: 'must be a time HH:MM:SS',
  duration: 'must be an ISO 8601 duration',
  url: 'must be a URL',
  ipv4: 'must be an IPv4 address',
  ipv6: 'must be an IPv6 address',
  cidrv4: 'must be an IPv4 range (CIDR)',
  cidrv6: 'must be an IPv6 range (CIDR)',
  base64: 'must be base64',
  base64url: 'must be base64url',
  hex: 'must be hexadecimal',
};

const show = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'bigint' ? v.toString() : JSON.stringify(v));

/** Our words for one issue; never undefined, so zod's own wording is never the fallback. */
export function issueMessage(iss: Issue): string {
  switch (iss.code) {
    case 'invalid_type':
      if (iss.input === undefined || iss.expected === 'nonoptional') return 'is required';
      return TYPE_NAMES[iss.expected] ?? `must be ${/^[aeiou]/.test(iss.expected) ? 'an' : 'a'} ${iss.expected}`;
    case 'too_small':
    case 'too_big':
      if (iss.origin === 'number' || iss.origin === 'int' || iss.origin === 'bigint') return numberRange(iss);
      if (iss.origin === 'string') return sizeRange(iss, 'character');
      if (iss.origin === 'array' || iss.origin === 'set') return sizeRange(iss, 'item');
      if (iss.origin === 'file') return sizeRange(iss, 'byte');
      return iss.code === 'too_small' ? `must be at least ${show(iss.minimum)}` : `must be at most ${show(iss.maximum)}`;
    case 'invalid_value':
      return iss.values.length === 1 ? `must be ${show(iss.values[0])}` : `must be one of ${iss.values.map(show).join(', ')}`;
    case 'invalid_format': {
      const f = iss as Extract<Issue, { code: 'invalid_format' }> & { prefix?: string; suffix?: string; includes?: string };
      if (f.format === 'starts_with' && f.prefix !== undefined) return `must start with "${f.prefix}"`;
      if (f.format === 'ends_with' && f.suffix !== undefined) return `must end with "${f.suffix}"`;
      if (f.format === 'includes' && f.includes !== undefined) return `must contain "${f.includes}"`;
      if (f.format === 'regex' && f.pattern) return `must match ${f.pattern}`;
      return FORMAT_NAMES[f.format] ?? `must be a valid ${f.format}`;
    }
    case 'not_multiple_of':
      return `must be a multiple of ${show(iss.divisor)}`;
    case 'unrecognized_keys':
      return iss.keys.length === 1 ? `unknown field ${iss.keys[0]}` : `unknown fields ${iss.keys.join(', ')}`;
    case 'invalid_union': {
      // A value none of the options' types accepts: name those types ("must be a string or an integer").
      const types = (iss.errors ?? []).map((branch) => (branch.length === 1 && branch[0]!.code === 'invalid_type' ? branch[0]!.expected : null));
      if (types.length > 0 && types.every((t) => t !== null)) {
        if (iss.input === undefined) return 'is required';
        return `must be ${[...new Set(types)].map((t) => (TYPE_NAMES[t!] ?? `must be a ${t}`).replace(/^must be /, '')).join(' or ')}`;
      }
      return 'does not match any of the accepted forms';
    }
    case 'invalid_key':
      return 'has an invalid key';
    case 'invalid_element':
      return 'has an invalid element';
    case 'custom':
      return 'is invalid';
    default:
      return 'is invalid';
  }
}

z.config({ customError: issueMessage });
