// Dependencies point one way (docs/development.md, "Layers"): every import of src/ and jobs/, type
// imports and re-exports included, goes from a folder to one listed before it below. A cycle
// between folders is then impossible, and an effect (e-mail, PDF, webhooks, the SII) cannot be
// imported back by the domain that asks for it through a queued row or an event.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';

/** The folders of src/ (a file directly in src/ is its own), lowest first, in their groups. */
const LAYERS: Record<string, string[]> = {
  kernel: ['clock', 'config', 'env-file', 'errors', 'format', 'ids', 'money', 'paths', 'shutdown', 'logger', 'secret-box'],
  data: ['db', 'queue', 'migrate'],
  http: ['http'],
  records: ['email-queue', 'events'],
  domain: ['rates', 'payments', 'clients', 'merchants', 'dte', 'invoices', 'checkout'],
  effects: ['sii', 'pdf', 'retention', 'webhooks', 'email'],
  surfaces: ['me', 'admin', 'docs', 'public', 'routes', 'startup-guide'],
  entries: ['app', 'jobs', 'server', 'cli', 'main'],
};
const ORDER = Object.values(LAYERS).flat();

/** The folder (or top-level module) a repository path belongs to. */
function unit(file: string): string {
  if (file.startsWith('jobs/')) return 'jobs';
  const parts = file.replace(/^src\//, '').split('/');
  return parts.length > 1 ? parts[0]! : parts[0]!.replace(/\.ts$/, '');
}

interface Edge {
  from: string;
  to: string;
}

/** Every relative import of a source file: static, type-only, re-exported and dynamic. */
function importsOf(file: string, text: string): string[] {
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"`;]*?from\s*'([^']+)'|\bimport\s*\(\s*'([^']+)'\s*\)|(?:^|\n)\s*import\s+'([^']+)'/g)].map(
    (m) => m[1] ?? m[2] ?? m[3]!,
  );
  return specifiers.filter((s) => s.startsWith('.')).map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(file), s)).replace(/\.js$/, '.ts'));
}

async function edges(): Promise<Edge[]> {
  const files = [
    ...(await readdir('src', { recursive: true })).map((f) => `src/${f}`),
    ...(await readdir('jobs')).map((f) => `jobs/${f}`),
  ].filter((f) => f.endsWith('.ts'));
  const out: Edge[] = [];
  for (const file of files) {
    for (const to of importsOf(file, await readFile(file, 'utf8'))) {
      if (!to.startsWith('src/') && !to.startsWith('jobs/')) continue;
      out.push({ from: file, to });
    }
  }
  return out;
}

t.test('the import reader sees every form of import', async (t) => {
  const text = [
    "import { a } from './a.js';",
    "import type { B } from '../b/b.js';",
    "export type { C } from './c.js';",
    "export * from './d.js';",
    "const e = await import('./e.js');",
    "import './f.js';",
    "import {\n  g,\n  type H,\n} from '../g/g.js';",
    "import { z } from 'zod';",
  ].join('\n');
  t.same(importsOf('src/x/y.ts', text).sort(), ['src/b/b.ts', 'src/g/g.ts', 'src/x/a.ts', 'src/x/c.ts', 'src/x/d.ts', 'src/x/e.ts', 'src/x/f.ts']);
});

t.test('every folder of src/ has its place in the layers', async (t) => {
  const entries = await readdir('src', { withFileTypes: true });
  const units = entries.filter((e) => e.isDirectory() || e.name.endsWith('.ts')).map((e) => e.name.replace(/\.ts$/, ''));
  t.ok(units.length > 20, 'src/ was read');
  t.same(units.filter((u) => !ORDER.includes(u)), [], 'a new folder is placed in LAYERS (and in docs/development.md)');
  t.same(ORDER.filter((u) => u !== 'jobs' && !units.includes(u)), [], 'LAYERS names no folder that is gone');
});

t.test('each import goes to the same folder or one of a lower layer', async (t) => {
  const all = await edges();
  t.ok(all.length > 500, `${all.length} imports were read`);
  t.ok(
    all.some((e) => e.from.startsWith('src/invoices/') && e.to.startsWith('src/dte/')),
    'the walk sees the invoices issuing their tax documents',
  );
  const wrong = all
    .filter((e) => unit(e.from) !== unit(e.to) && ORDER.indexOf(unit(e.to)) >= ORDER.indexOf(unit(e.from)))
    .map((e) => `${e.from} -> ${e.to}`);
  t.same(wrong, [], 'no import points up (or sideways to a later folder)');
});

t.test('the folders import each other in no cycle', async (t) => {
  const graph = new Map<string, Set<string>>();
  for (const e of await edges()) {
    const [a, b] = [unit(e.from), unit(e.to)];
    if (a === b) continue;
    if (!graph.has(a)) graph.set(a, new Set());
    graph.get(a)!.add(b);
  }
  // Depth-first search: a folder met again while it is still on the path closes a cycle.
  const state = new Map<string, 'open' | 'done'>();
  const cycles: string[] = [];
  const visit = (node: string, trail: string[]): void => {
    state.set(node, 'open');
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') cycles.push([...trail.slice(trail.indexOf(next)), node, next].join(' -> '));
      else if (!state.has(next)) visit(next, [...trail, node]);
    }
    state.set(node, 'done');
  };
  for (const node of graph.keys()) if (!state.has(node)) visit(node, []);
  t.ok(graph.size > 20, `${graph.size} folders import others`);
  t.same(cycles, [], 'no cycle');
});
