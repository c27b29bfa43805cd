// Every comment that cites a rule points to a document in the clone: "docs/decisions.md §N" names a
// section that docs/decisions.md has, and no comment cites a design record by another name.
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    return statSync(full).isDirectory() ? files(full) : /\.(ts|sql|mts)$/.test(name) ? [full] : [];
  });
}

t.test('every "docs/decisions.md §N" names a section of docs/decisions.md', async (t) => {
  const record = readFileSync(path.join(ROOT, 'docs', 'decisions.md'), 'utf8');
  const sections = new Set([...record.matchAll(/^## (\d+)\. /gm)].map((m) => Number(m[1])));
  t.ok(sections.size >= 20, `${sections.size} sections`);
  const cited = new Map<number, string>();
  const bare: string[] = [];
  for (const file of ['src', 'jobs', 'test', 'bench', 'sql'].flatMap((d) => files(path.join(ROOT, d)))) {
    const text = readFileSync(file, 'utf8');
    const where = path.relative(ROOT, file);
    for (const m of text.matchAll(/docs\/decisions\.md §(\d+)((?:,? (?:and )?§\d+)*)/g)) {
      for (const n of [m[1], ...[...m[2]!.matchAll(/§(\d+)/g)].map((x) => x[1])]) cited.set(Number(n), where);
    }
    // A citation of the record by its bare name, as the code once wrote them.
    if (where !== 'test/decisions-citations.test.ts' && /(?<![/\w])[Dd]ecisions §\d/.test(text)) bare.push(where);
  }
  t.ok(cited.size > 10, `${cited.size} sections cited`);
  t.same([...cited].filter(([n]) => !sections.has(n)).map(([n, where]) => `§${n} in ${where}`), [], 'each cited section exists');
  t.same(bare, [], 'no citation without the file it is in');
});
