// The README is a start, not a reference: a table of contents and a quickstart (start, merchant
// and key, a webhook endpoint, the first invoice sent, its e-mail and webhook seen) within its
// first 150 lines; the long reference in docs/, every relative link of both resolving.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const lines = readme.split('\n');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const inFence = (() => {
    let fenced = false;
    return (line: string) => {
      if (line.startsWith('```')) fenced = !fenced;
      return fenced;
    };
  })();
  return new Set(
    markdown
      .split('\n')
      .filter((l) => !inFence(l) && /^#{1,6} /.test(l))
      .map((l) => anchor(l.replace(/^#+ /, ''))),
  );
}

t.test('a table of contents and a quickstart come first', async (t) => {
  const line = (pattern: RegExp) => lines.findIndex((l) => pattern.test(l)) + 1;
  t.ok(line(/^## Contents/) > 0 && line(/^## Contents/) < 40, 'the contents near the top');
  const quickstart = line(/^## Quickstart/);
  t.ok(quickstart > 0 && quickstart < 150, `the quickstart starts at line ${quickstart}`);
  const first150 = lines.slice(0, 150).join('\n');
  for (const step of [/npm install && npm start/, /cli -- merchants create/, /cli -- keys create/, /webhooks\/endpoints/, /\/invoices/, /\/send/, /outbox (list|show)/]) {
    t.match(first150, step, `the first 150 lines show ${step}`);
  }
  t.ok(line(/curl /) > 0 && line(/curl /) < 150, `the first curl is on line ${line(/curl /)}`);
});

t.test('every relative link of the README and docs/ resolves, anchors included', async (t) => {
  const files = ['README.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const broken: string[] = [];
  for (const file of files) {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [where, hash] = target!.split('#') as [string, string | undefined];
      const resolved = where ? path.resolve(path.dirname(path.join(ROOT, file)), where) : path.join(ROOT, file);
      if (!existsSync(resolved)) broken.push(`${file}: ${target} (no such file)`);
      else if (hash && resolved.endsWith('.md') && !anchorsOf(readFileSync(resolved, 'utf8')).has(hash)) broken.push(`${file}: ${target} (no such heading)`);
    }
  }
  t.same(broken, [], `${files.length} files checked`);
  t.ok(files.length > 5, 'the long reference lives in docs/');
});
