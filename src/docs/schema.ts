import { z } from 'zod';

export type JsonSchema = Record<string, unknown>;

const COMPONENTS = '#/components/schemas/';

function isObject(v: unknown): v is JsonSchema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Component names must match ^[a-zA-Z0-9._-]+$ (OpenAPI 3.1 §4.8.7.1). */
function componentName(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, '_') || 'Schema';
}

function rewriteRefs(value: unknown, names: Map<string, string>): unknown {
  if (Array.isArray(value)) return value.map((v) => rewriteRefs(v, names));
  if (!isObject(value)) return value;
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === '$ref' && typeof v === 'string' && v.startsWith('#/$defs/')) {
      const id = decodeURIComponent(v.slice('#/$defs/'.length).replace(/~1/g, '/').replace(/~0/g, '~'));
      out[k] = COMPONENTS + (names.get(id) ?? componentName(id));
    } else {
      out[k] = rewriteRefs(v, names);
    }
  }
  return out;
}

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (isObject(v)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/**
 * A request body's field with a default says it in words: `Default: \`false\``, not `default`.
 * openapi-typescript (with `defaultNonNullable`, on unless told otherwise) types a field of a
 * component that has a `default` as always present, which holds for an answer but makes a client
 * send every defaulted field of a request. The server still applies the default.
 */
function defaultInWords({ jsonSchema }: { jsonSchema: JsonSchema }): void {
  if (jsonSchema.default === undefined) return;
  const said = `Default: \`${JSON.stringify(jsonSchema.default)}\``;
  jsonSchema.description = typeof jsonSchema.description === 'string' ? `${jsonSchema.description}. ${said}` : said;
  delete jsonSchema.default;
}

/**
 * JSON Schema (2020-12, the dialect of OpenAPI 3.1) of a zod schema. Schemas named with
 * `.meta({ id })` are moved into `components` and referenced as `#/components/schemas/{id}`:
 * a `#/$defs/...` reference left inside an OpenAPI document would resolve against the document
 * root, where no `$defs` exists. When input and output of one id differ (defaults make fields
 * required on output), the second one met gets an `Input`/`Output` suffix. `body` is the input of
 * a request body, whose defaults are stated in words (defaultInWords).
 */
export function toSchema(schema: z.ZodType, io: 'input' | 'output' | 'body', components: Record<string, JsonSchema>): JsonSchema {
  const json = z.toJSONSchema(schema, {
    io: io === 'body' ? 'input' : io,
    unrepresentable: 'any',
    target: 'draft-2020-12',
    reused: 'inline',
    cycles: 'ref',
    ...(io === 'body' ? { override: defaultInWords } : {}),
  }) as JsonSchema;
  delete json.$schema;
  delete json.id;
  const defs = isObject(json.$defs) ? (json.$defs as Record<string, JsonSchema>) : {};
  delete json.$defs;

  const names = new Map<string, string>();
  for (const id of Object.keys(defs)) names.set(id, componentName(id));
  // Resolve clashes with components already present (a different shape under the same name).
  for (let changed = true; changed; ) {
    changed = false;
    for (const [id, def] of Object.entries(defs)) {
      const name = names.get(id)!;
      const existing = components[name];
      if (existing && stableJson(existing) !== stableJson(rewriteRefs(def, names))) {
        const suffix = io === 'output' ? 'Output' : 'Input';
        let next = name.endsWith(suffix) ? `${name}2` : `${name}${suffix}`;
        while (components[next] && stableJson(components[next]) !== stableJson(rewriteRefs(def, new Map([...names, [id, next]])))) next += '_';
        names.set(id, next);
        changed = true;
      }
    }
  }
  for (const [id, def] of Object.entries(defs)) components[names.get(id)!] ??= rewriteRefs(def, names) as JsonSchema;
  return rewriteRefs(json, names) as JsonSchema;
}

export type Resolver = (ref: string) => JsonSchema | undefined;

export function componentResolver(components: Record<string, JsonSchema>): Resolver {
  return (ref) => (ref.startsWith(COMPONENTS) ? components[ref.slice(COMPONENTS.length)] : undefined);
}

/** The component a schema points to, if it is (only) a reference. */
export function refName(schema: unknown): string | undefined {
  if (!isObject(schema) || typeof schema.$ref !== 'string' || !schema.$ref.startsWith(COMPONENTS)) return undefined;
  return schema.$ref.slice(COMPONENTS.length);
}

/** Follows `$ref` (siblings such as description win over the target's). */
export function deref(schema: unknown, resolve: Resolver, depth = 0): JsonSchema {
  if (!isObject(schema)) return {};
  if (typeof schema.$ref === 'string' && depth < 16) {
    const { $ref, ...rest } = schema;
    const target = resolve($ref);
    return target ? { ...deref(target, resolve, depth + 1), ...rest } : rest;
  }
  return schema;
}

/** Splits `T | null` into T and a nullable flag. */
function unwrapNullable(s: JsonSchema, resolve: Resolver): { schema: JsonSchema; nullable: boolean } {
  const variants = (Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : null) as unknown[] | null;
  if (variants) {
    const nonNull = variants.filter((v) => !(isObject(v) && v.type === 'null'));
    if (nonNull.length === 1 && nonNull.length < variants.length) {
      const { anyOf: _a, oneOf: _o, ...rest } = s;
      return { schema: { ...deref(nonNull[0], resolve), ...rest }, nullable: true };
    }
  }
  if (Array.isArray(s.type) && s.type.includes('null')) {
    const types = s.type.filter((t) => t !== 'null');
    return { schema: { ...s, type: types.length === 1 ? types[0] : types }, nullable: true };
  }
  return { schema: s, nullable: false };
}

/** The component named by `{$ref}` or by `anyOf: [{$ref}, {type: null}]`. */
function refOrNullableRef(schema: unknown): { name: string; nullable: boolean } | undefined {
  const direct = refName(schema);
  if (direct) return { name: direct, nullable: false };
  if (!isObject(schema)) return undefined;
  const variants = schema.anyOf ?? schema.oneOf;
  if (!Array.isArray(variants)) return undefined;
  const nonNull = variants.filter((v) => !(isObject(v) && v.type === 'null'));
  const name = nonNull.length === 1 && nonNull.length < variants.length ? refName(nonNull[0]) : undefined;
  return name ? { name, nullable: true } : undefined;
}

/** A short type in words; with `named`, a reference to a component is shown by its name. */
export function typeLabel(schema: unknown, resolve: Resolver, named = false): string {
  const ref = named ? refOrNullableRef(schema) : undefined;
  if (ref) return ref.nullable ? `${ref.name} or null` : ref.name;
  const { schema: s, nullable } = unwrapNullable(deref(schema, resolve), resolve);
  let label: string;
  if (Array.isArray(s.anyOf) || Array.isArray(s.oneOf)) {
    label = ((s.anyOf ?? s.oneOf) as unknown[]).map((v) => typeLabel(v, resolve, named)).join(' | ');
  } else if (s.type === 'array') {
    label = `array of ${typeLabel(s.items, resolve, named)}`;
  } else if (Array.isArray(s.type)) {
    label = s.type.join(' | ');
  } else if (typeof s.type === 'string') {
    label = typeof s.format === 'string' ? `${s.type} (${s.format})` : s.type;
  } else if (s.const !== undefined) {
    label = JSON.stringify(s.const);
  } else if (Array.isArray(s.enum)) {
    label = 'enum';
  } else {
    label = 'any JSON value';
  }
  return nullable ? `${label} or null` : label;
}

/** Constraints and notes of one schema, in words. */
export function constraints(schema: unknown, resolve: Resolver): string[] {
  const { schema: s } = unwrapNullable(deref(schema, resolve), resolve);
  const out: string[] = [];
  if (Array.isArray(s.enum)) out.push(`one of: ${s.enum.map((v) => String(v)).join(', ')}`);
  const range = (lo: unknown, hi: unknown, unit: string) => {
    // zod bounds every integer by ±MAX_SAFE_INTEGER: that is no information.
    const min = typeof lo === 'number' && Math.abs(lo) < Number.MAX_SAFE_INTEGER ? lo : undefined;
    const max = typeof hi === 'number' && Math.abs(hi) < Number.MAX_SAFE_INTEGER ? hi : undefined;
    if (typeof min === 'number' && typeof max === 'number') out.push(`${min} to ${max}${unit}`);
    else if (typeof min === 'number') out.push(`at least ${min}${unit}`);
    else if (typeof max === 'number') out.push(`at most ${max}${unit}`);
  };
  range(s.minLength, s.maxLength, ' characters');
  range(s.minItems, s.maxItems, ' items');
  if (typeof s.exclusiveMinimum === 'number') out.push(`> ${s.exclusiveMinimum}`);
  if (typeof s.exclusiveMaximum === 'number') out.push(`< ${s.exclusiveMaximum}`);
  range(s.minimum, s.maximum, '');
  if (typeof s.pattern === 'string' && typeof s.format !== 'string') out.push(`pattern ${s.pattern}`);
  if (s.default !== undefined) out.push(`default ${JSON.stringify(s.default)}`);
  if (s.additionalProperties === false && s.type === 'object') out.push('unknown fields are rejected');
  return out;
}

export interface FieldRow {
  /** Dot and bracket form, as `details.errors[].path` names it: `items[].unit_price`. */
  path: string;
  type: string;
  required: boolean;
  notes: string[];
  description?: string;
  /** The named component the field holds (with `keepRefs`). */
  ref?: string;
}

/**
 * Flattens an object schema into one row per field, nested objects and arrays of objects
 * included. With `keepRefs`, a field that is a named component is one row typed by its name
 * (the names met are added to `refs`).
 */
export function fieldRows(schema: unknown, resolve: Resolver, opts: { keepRefs?: boolean; refs?: Set<string> } = {}): FieldRow[] {
  const rows: FieldRow[] = [];
  const named = (raw: unknown): string | undefined => {
    if (!opts.keepRefs) return undefined;
    const s = isObject(raw) ? raw : {};
    const name = refOrNullableRef(raw)?.name ?? (s.type === 'array' ? refOrNullableRef(s.items)?.name : undefined);
    if (name) opts.refs?.add(name);
    return name;
  };
  const walk = (raw: unknown, prefix: string, required: boolean, depth: number, self = true): void => {
    const full = deref(raw, resolve);
    const { schema: s } = unwrapNullable(full, resolve);
    const ref = prefix !== '' ? named(raw) : undefined;
    const stop = ref !== undefined;
    if (prefix && self) {
      rows.push({
        ...(ref ? { ref } : {}),
        path: prefix,
        type: typeLabel(raw, resolve, !!opts.keepRefs),
        required,
        notes: constraints(full, resolve).filter((n) => n !== 'unknown fields are rejected'),
        ...(typeof full.description === 'string'
          ? { description: full.description }
          : s.type === 'array' && typeof deref(s.items, resolve).description === 'string'
            ? { description: `Each item: ${deref(s.items, resolve).description as string}` }
            : {}),
      });
    }
    if (depth > 6 || stop) return;
    if (isObject(s.properties)) {
      const req = Array.isArray(s.required) ? (s.required as string[]) : [];
      for (const [name, prop] of Object.entries(s.properties)) walk(prop, prefix ? `${prefix}.${name}` : name, req.includes(name), depth + 1);
    } else if (s.type === 'array' && prefix) {
      const item = unwrapNullable(deref(s.items, resolve), resolve).schema;
      if (isObject(item.properties)) walk(s.items, `${prefix}[]`, true, depth + 1, false);
    }
  };
  walk(schema, '', true, 0);
  return rows;
}

const SAMPLE_UUID = '0192f3a4-5b6c-7d8e-9f01-23456789abcd';

/** A small valid-looking value for a schema: its example, default or first enum value, else by type. */
export function sampleValue(schema: unknown, resolve: Resolver, depth = 0): unknown {
  const full = deref(schema, resolve);
  const { schema: s } = unwrapNullable(full, resolve);
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length > 0) return s.examples[0];
  if (s.default !== undefined) return s.default;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if (depth > 6) return null;
  switch (s.type) {
    case 'object': {
      const props = isObject(s.properties) ? s.properties : {};
      const req = Array.isArray(s.required) ? (s.required as string[]) : [];
      const names = req.length > 0 ? req : Object.keys(props).slice(0, 1);
      return Object.fromEntries(names.filter((n) => n in props).map((n) => [n, sampleValue(props[n], resolve, depth + 1)]));
    }
    case 'array':
      return Array.from({ length: Math.max(1, typeof s.minItems === 'number' ? s.minItems : 1) }, () => sampleValue(s.items, resolve, depth + 1));
    case 'integer':
    case 'number': {
      const min = typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + 1 : 1;
      const max = typeof s.maximum === 'number' ? s.maximum : Infinity;
      return Math.min(Math.max(min, 1), max);
    }
    case 'boolean':
      return false;
    case 'string':
      switch (s.format) {
        case 'uuid':
          return SAMPLE_UUID;
        case 'email':
          return 'billing@example.com';
        case 'date':
          return '2026-12-31';
        case 'date-time':
          return '2026-11-22T03:16:13.123Z';
        case 'uri':
        case 'url':
          return 'https://example.com/';
        default:
          return 'example';
      }
    default:
      return null;
  }
}

export { SAMPLE_UUID };
