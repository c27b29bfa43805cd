import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'RESULTS.md');

/** One bench's part of RESULTS.md: its `## ` heading and description, then its runs. */
export interface Section {
  id: 'ratio' | 'volume' | 'soak' | 'effects';
  intro: string;
  keep: number;
}

const ORDER: Section['id'][] = ['ratio', 'volume', 'soak', 'effects'];
const RUN_MARK = '<!-- run -->';
const sectionMark = (id: string) => `<!-- section:${id} -->`;

const TITLE = `# Benchmark results

Every figure the scripts in bench/ measure, with the machine, date and command of each run, the
newest run first in each section, written by the scripts themselves:

- [API vs. database ceiling](#api-vs-database-ceiling-npm-run-bench) (\`npm run bench\`: the API against a raw postgres.js ceiling)
- [Volume](#volume-npm-run-benchvolume) (\`npm run bench:volume\`: 1,000,000 invoices, plans with EXPLAIN)
- [Soak](#soak-npm-run-benchsoak) (\`npm run bench:soak\`: RSS over 10 minutes of mixed load)
- [Effects](#effects-webhooks-and-e-mails-npm-run-bencheffects) (\`npm run bench:effects\`: webhooks and e-mails at real receivers vs. a plain Node floor)

The machine is shared with other work: each run notes its load average.
`;

/** Puts `run` first in its section of RESULTS.md, keeping the other sections as they are. */
export async function recordRun(section: Section, run: string): Promise<void> {
  const previous = await readFile(RESULTS_FILE, 'utf8').catch(() => '');
  const sections = new Map<string, string>();
  for (const chunk of previous.split('<!-- section:').slice(1)) {
    const end = chunk.indexOf(' -->');
    sections.set(chunk.slice(0, end), chunk.slice(end + ' -->'.length));
  }
  const earlier = (sections.get(section.id) ?? '')
    .split(RUN_MARK)
    .slice(1)
    .map((s) => s.trim())
    .filter(Boolean)
    .slice(0, section.keep - 1);
  sections.set(section.id, `\n${section.intro.trim()}\n\n${[run.trim(), ...earlier].map((s) => `${RUN_MARK}\n${s}\n`).join('\n')}`);
  const ids = [...ORDER.filter((id) => sections.has(id)), ...[...sections.keys()].filter((id) => !ORDER.includes(id as Section['id']))];
  await writeFile(RESULTS_FILE, [TITLE, ...ids.map((id) => `${sectionMark(id)}${sections.get(id)!.trimEnd()}\n`)].join('\n'));
}
