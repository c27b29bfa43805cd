import { readFileSync } from 'node:fs';
import path from 'node:path';
import Handlebars from 'handlebars';
import { templatesDir } from '../paths.js';

const dir = path.join(templatesDir, 'docs');

export function readDocs(file: string): string {
  return readFileSync(path.join(dir, file), 'utf8');
}

// An instance of its own. The templates are Markdown, not HTML: nothing is escaped here (the
// page escapes when it renders), and strict mode catches a misspelt placeholder.
const hbs = Handlebars.create();
hbs.registerHelper('code_list', (items: unknown[]) => items.map((item) => `\`${String(item)}\``).join(', '));

export function compileDocs(file: string): Handlebars.TemplateDelegate {
  return hbs.compile(readDocs(file), { strict: true, noEscape: true });
}
