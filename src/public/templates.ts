import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Handlebars from 'handlebars';
import { templatesDir } from '../paths.js';

const dir = path.join(templatesDir, 'public');

export function readPublic(file: string): string {
  return readFileSync(path.join(dir, file), 'utf8');
}

// An instance of its own: nothing registered globally; `{{x}}` HTML-escapes, strict catches typos.
const hbs = Handlebars.create();

export function compilePublic(file: string): Handlebars.TemplateDelegate {
  return hbs.compile(readPublic(file), { strict: true });
}

/** CSP source for a page's one inline <style>: the page needs no 'unsafe-inline'. */
export function styleHash(css: string): string {
  return `'sha256-${createHash('sha256').update(css, 'utf8').digest('base64')}'`;
}

/** A page's labels file, refused at first use when a string label or a nested group is missing. */
export function readLabels<T>(file: string, keys: readonly string[], groups: Record<string, readonly string[]>): T {
  const raw = JSON.parse(readPublic(file)) as Record<string, unknown>;
  const missing: string[] = keys.filter((k) => typeof raw[k] !== 'string');
  for (const [group, members] of Object.entries(groups)) {
    const value = raw[group] as Record<string, unknown> | undefined;
    if (!value || typeof value !== 'object' || !members.every((m) => typeof value[m] === 'string')) missing.push(group);
  }
  if (missing.length > 0) throw new Error(`templates/public/${file} lacks the labels ${missing.join(', ')}`);
  return raw as T;
}
