import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const RESULTS_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'RESULTS.md');

/**
 * One bench's part of RESULTS.md: its heading and description, a history table (one row a run,
 * newest first) and its latest run in full. The page stays short enough to read: older runs
 * survive as their history row only.
 */
export interface Section {
  id: 'ratio' | 'volume' | 'soak' | 'effects' | 'pdf' | 'events';
  intro: string;
  /** The history table's columns after Run, Code and Load: the run's headline figures. */
  history: string[];
}

export interface RunRecord {
  /** The run in full (its own `###` heading first). */
  run: string;
  /** One cell for each of the section's history columns. */
  figures: string[];
  /** The machine's load average before the run, as report.ts's loadAverage() wrote it (`1 / 5 / 15 min`). */
  loadBefore: string;
  /**
   * EXPLAIN output the run captured: kept with the date it was recorded, and replaced only when
   * the plans' shape changes (costs, timings, buffer counts and ids aside).
   */
  plans?: string;
}

const ORDER: Section['id'][] = ['ratio', 'volume', 'soak', 'effects', 'pdf', 'events'];
const HISTORY_ROWS = 30;
const sectionMark = (id: string) => `<!-- section:${id} -->`;
const HISTORY_MARK = '<!-- history -->';
const LATEST_MARK = '<!-- latest -->';
const PLANS_MARK = '<!-- plans -->';

const TITLE = `# Benchmark results

Every figure the scripts in bench/ measure, written by the scripts themselves: for each bench a
history (one row a run, newest first, with the commit measured and the machine's load) and its
latest run in full, with the machine, date and command.

- [API vs. database ceiling](#api-vs-database-ceiling-npm-run-bench) (\`npm run bench\`: the API against a raw postgres.js ceiling and a bare Fastify floor)
- [Volume](#volume-npm-run-benchvolume) (\`npm run bench:volume\`: 1,000,000 invoices, plans with EXPLAIN)
- [Soak](#soak-npm-run-benchsoak) (\`npm run bench:soak\`: RSS over 10 minutes of mixed load)
- [Effects](#effects-webhooks-and-e-mails-npm-run-bencheffects) (\`npm run bench:effects\`: webhooks and e-mails at real receivers vs. a plain Node floor)
- [Shared PDF rendering](#shared-pdf-rendering-npm-run-benchpdf) (\`npm run bench:pdf\`: another merchant's PDF while one asks for its largest four times at once)
- [Events API and retention](#events-api-and-retention-npm-run-benchevents) (\`npm run bench:events\`: GET /events with 10 million events, and the purge of a month under load)

The machine is shared with other work: the Load column is its 1-minute load average before the run.
`;

/** The commit measured, `+` when the working tree had changes. */
function commitMeasured(): string {
  try {
    const hash = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
    return `${hash}${dirty ? '+' : ''}`;
  } catch {
    return '–';
  }
}

/** A table row's cells; `\|` inside a cell stays in it. */
function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\||\|$/g, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim());
}

const row = (values: string[]) => `| ${values.map((v) => v.replace(/\|/g, '\\|')).join(' | ')} |`;

interface Parsed {
  rows: Map<string, string>[];
  plans: string | null;
}

/** The history rows (by column name, so a renamed or added column leaves old rows readable) and the kept plans. */
function parseSection(text: string): Parsed {
  const history = text.split(HISTORY_MARK)[1]?.split(LATEST_MARK)[0] ?? '';
  const lines = history.split('\n').filter((l) => l.startsWith('|'));
  const head = lines[0] ? cells(lines[0]) : [];
  const rows = lines.slice(2).map((l) => new Map(cells(l).map((c, i) => [head[i] ?? String(i), c])));
  const plans = text.split(PLANS_MARK)[1]?.trim() ?? null;
  return { rows, plans };
}

/** What a plan is, without what one execution of it measured. */
function planShape(plans: string): string {
  return plans
    .replace(/\((?:cost|actual)[^)]*\)/g, '')
    .replace(/^\s*(Buffers|Planning Time|Execution Time|Planning|Heap Fetches|Sort Method|Memory Usage|Batches).*$/gm, '')
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>')
    .replace(/\d{4}-\d{2}-\d{2}T[\d:.]+Z/g, '<instant>')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Records a run: its row on top of the history, the run itself as the section's latest. */
export async function recordRun(section: Section, record: RunRecord, now = new Date()): Promise<void> {
  const previous = await readFile(RESULTS_FILE, 'utf8').catch(() => '');
  const sections = new Map<string, string>();
  for (const chunk of previous.split('<!-- section:').slice(1)) {
    const end = chunk.indexOf(' -->');
    sections.set(chunk.slice(0, end), chunk.slice(end + ' -->'.length));
  }
  const old = parseSection(sections.get(section.id) ?? '');
  const columns = ['Run', 'Code', 'Load', ...section.history];
  const newRow = new Map(columns.map((c, i) => [c, [now.toISOString().slice(0, 16).replace('T', ' '), commitMeasured(), record.loadBefore.split(' / ')[0]!, ...record.figures][i] ?? '–']));
  const rows = [newRow, ...old.rows].slice(0, HISTORY_ROWS);

  let plans = old.plans;
  if (record.plans !== undefined) {
    const kept = old.plans === null ? '' : old.plans.slice(old.plans.indexOf('\n#### ') + 1);
    if (old.plans === null || planShape(kept) !== planShape(record.plans)) {
      plans = `### Plans, recorded ${now.toISOString()}\n\nRecorded again only when a plan's shape changes; the runs since found the same plans.\n${record.plans.trim()}`;
    }
  }

  const text = [
    '',
    section.intro.trim(),
    '',
    HISTORY_MARK,
    '### History',
    '',
    row(columns),
    row(columns.map((_, i) => (i < 2 ? '---' : '---:'))),
    ...rows.map((r) => row(columns.map((c) => r.get(c) ?? '–'))),
    '',
    LATEST_MARK,
    record.run.trim(),
    ...(plans ? ['', PLANS_MARK, plans] : []),
  ].join('\n');
  sections.set(section.id, text);
  const ids = [...ORDER.filter((id) => sections.has(id)), ...[...sections.keys()].filter((id) => !ORDER.includes(id as Section['id']))];
  await writeFile(RESULTS_FILE, [TITLE, ...ids.map((id) => `${sectionMark(id)}${sections.get(id)!.trimEnd()}\n`)].join('\n'));
}
