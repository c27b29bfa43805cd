// The guide's prose lives in templates/docs/guide.md.hbs; these pin the Markdown subset it is read
// with, so that the page, llms.txt and the OpenAPI description keep saying the same words.
import t from 'tap';
import { parseSections } from '../src/docs/markdown.js';
import { sectionsToMarkdown } from '../src/docs/guide.js';

const SAMPLE = `## First part {#first}

A paragraph written
over two lines.

- An item with \`code\`
  that goes on.
- Another item.

\`\`\`sh
curl -sS "https://x.test/a"

echo done
\`\`\`

## Second {#second}

<!-- anchor: error -->
| Code | When |
|---|---|
| \`a_code\` | Uses a \\| pipe |
| \`b_code\` |  |
`;

t.test('reads sections, paragraphs, lists, code and anchored tables', async (t) => {
  const sections = parseSections(SAMPLE);
  t.same(sections, [
    {
      id: 'first',
      title: 'First part',
      blocks: [
        { p: 'A paragraph written over two lines.' },
        { ul: ['An item with `code` that goes on.', 'Another item.'] },
        { code: 'curl -sS "https://x.test/a"\n\necho done' },
      ],
    },
    {
      id: 'second',
      title: 'Second',
      blocks: [{ table: { head: ['Code', 'When'], rows: [['`a_code`', 'Uses a | pipe'], ['`b_code`', '']], anchor: 'error' } }],
    },
  ]);
  // Printed back as Markdown (llms.txt, the OpenAPI description), the pipe is escaped again.
  t.match(sectionsToMarkdown(sections), '| `a_code` | Uses a \\| pipe |');
});

t.test('refuses what it cannot read rather than render it wrong', async (t) => {
  t.throws(() => parseSections('Loose text\n\n## Title {#title}\n'), /before the first section/);
  t.throws(() => parseSections('## Title {#title}\n\n### Without an id\n'), /must be "## Title \{#id\}"/);
  t.throws(() => parseSections('## T {#t}\n\n```\nnever closed\n'), /Unclosed code block/);
  // A value with an unescaped pipe would shift every cell after it.
  t.throws(() => parseSections('## T {#t}\n\n| A | B |\n|---|---|\n| x | y | z |\n'), /has 3 cells/);
  t.throws(() => parseSections('## T {#t}\n\n<!-- anchor: error -->\nnot a table\n'), /Not a table/);
});
