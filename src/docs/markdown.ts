// The Markdown subset the guide is written in (templates/docs/guide.md.hbs), read into blocks
// that the page renders as HTML and llms.txt and the OpenAPI description print back as Markdown.

export type Block =
  | { p: string }
  | { ul: string[] }
  /** `anchor`: the HTML page gives each row an id `{anchor}-{first cell}` to link to. */
  | { table: { head: string[]; rows: string[][]; anchor?: string } }
  | { code: string };

export interface Section {
  id: string;
  title: string;
  blocks: Block[];
}

/** A table cell's text, ready to stand between pipes. */
export function mdCell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function cells(line: string): string[] {
  return line
    .trim()
    .replace(/^\|/, '')
    .replace(/(?<!\\)\|$/, '')
    .split(/(?<!\\)\|/)
    .map((c) => c.trim().replace(/\\\|/g, '|'));
}

function table(lines: string[], anchor: string | undefined): Block {
  const [headLine, rule, ...rowLines] = lines;
  if (!headLine || !rule || !/^\|(\s*:?-+:?\s*\|)+$/.test(rule)) throw new Error(`Not a table: ${lines.join('\n')}`);
  const head = cells(headLine);
  const rows = rowLines.map(cells);
  const bad = rows.find((r) => r.length !== head.length);
  if (bad) throw new Error(`A row of the table "${headLine}" has ${bad.length} cells: ${bad.join(' | ')}`);
  return { table: anchor ? { head, rows, anchor } : { head, rows } };
}

/** `## Title {#id}` starts a section; blank lines separate blocks; a paragraph's or item's lines join with a space. */
export function parseSections(text: string): Section[] {
  const lines = text.split('\n');
  const sections: Section[] = [];
  for (let i = 0; i < lines.length; ) {
    const line = lines[i]!;
    if (!line.trim()) {
      i++;
      continue;
    }
    const heading = /^## (.+) \{#([\w-]+)\}$/.exec(line);
    if (heading) {
      sections.push({ id: heading[2]!, title: heading[1]!, blocks: [] });
      i++;
      continue;
    }
    if (line.startsWith('#')) throw new Error(`A heading must be "## Title {#id}": ${line}`);
    const blocks = sections.at(-1)?.blocks;
    if (!blocks) throw new Error(`Text before the first section: ${line}`);
    if (line.startsWith('```')) {
      const end = lines.indexOf('```', i + 1);
      if (end < 0) throw new Error(`Unclosed code block: ${line}`);
      blocks.push({ code: lines.slice(i + 1, end).join('\n') });
      i = end + 1;
      continue;
    }
    let end = i;
    while (end < lines.length && lines[end]!.trim()) end++;
    const chunk = lines.slice(i, end);
    i = end;
    const anchor = /^<!-- anchor: ([\w-]+) -->$/.exec(chunk[0]!)?.[1];
    if (anchor) blocks.push(table(chunk.slice(1), anchor));
    else if (line.startsWith('|')) blocks.push(table(chunk, undefined));
    else if (line.startsWith('- ')) {
      const items: string[] = [];
      for (const l of chunk) {
        if (l.startsWith('- ')) items.push(l.slice(2).trim());
        else items[items.length - 1] += ` ${l.trim()}`;
      }
      blocks.push({ ul: items });
    } else blocks.push({ p: chunk.map((l) => l.trim()).join(' ') });
  }
  return sections;
}
