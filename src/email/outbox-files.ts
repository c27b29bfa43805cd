import { access, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';

// Development's outbox (no SMTP_URL): each message is `<time>-<message id>.eml`, as sent, beside
// `<same name>.json`, what a person reads of it (written from the message the app composed, so
// nothing here parses MIME: mailparser is a dev dependency only), and `<same name>.html`, its HTML
// part as a page. `npm run cli -- outbox list|show` reads the summaries, as text or with --json;
// the .eml stays the message itself, for a mail client.

/** The outbox directory; the same one whatever the working directory's DATA_DIR spelling. */
export const outboxDir = (config: Pick<Config, 'DATA_DIR'>): string => path.resolve(config.DATA_DIR, 'outbox');

export const NO_OUTBOX = 'E-mails are sent through SMTP (SMTP_URL is set): there is no outbox to read.';

export interface OutboxAttachment {
  filename: string | null;
  content_type: string | null;
  /** Bytes, or null when the content was a stream or a path (never read here). */
  size: number | null;
}

/** The `.json` beside each `.eml`. */
export interface OutboxSummary {
  date: string;
  from: string | null;
  to: string | null;
  subject: string | null;
  text: string | null;
  html: string | null;
  attachments: OutboxAttachment[];
}

type Addresses = Mail.Options['to'];

/** `Name <address>` or the address, comma-separated (nodemailer takes strings, objects, nested lists). */
function formatAddresses(value: Addresses): string | null {
  const flat = (v: Addresses): string[] =>
    !v ? [] : Array.isArray(v) ? v.flatMap((a) => flat(a as Addresses)) : typeof v === 'string' ? [v] : !v.address ? [] : [v.name ? `${v.name} <${v.address}>` : v.address];
  const list = flat(value);
  return list.length ? list.join(', ') : null;
}

/** A body as text when the app gave it as text (strings and buffers); null otherwise. */
function bodyText(value: Mail.Options['text']): string | null {
  if (typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString('utf8');
  return null;
}

function attachmentSize(a: Mail.Attachment): number | null {
  if (Buffer.isBuffer(a.content)) return a.content.length;
  if (typeof a.content === 'string') return Buffer.from(a.content, (a.encoding as BufferEncoding | undefined) ?? 'utf8').length;
  return null;
}

/** What the outbox keeps to read `message` by, sent at `date`. */
export function summarize(message: Mail.Options, date: Date): OutboxSummary {
  return {
    date: date.toISOString(),
    from: formatAddresses(message.from),
    to: formatAddresses(message.to),
    subject: message.subject ?? null,
    text: bodyText(message.text),
    html: bodyText(message.html),
    attachments: (message.attachments ?? []).map((a) => ({
      filename: typeof a.filename === 'string' ? a.filename : null,
      content_type: a.contentType ?? null,
      size: attachmentSize(a),
    })),
  };
}

export interface OutboxEntry {
  id: string;
  date: string;
  to: string | null;
  subject: string | null;
  attachments: (string | null)[];
  file: string;
  note?: string;
}

// .eml files written before the outbox kept summaries: listed by file, their contents unread.
const NO_SUMMARY = 'written before the outbox kept a summary: open the .eml file';

/** `2026-05-04T10-11-12-345Z-…` (the file name's time) as an ISO instant, or null. */
function timeOfName(id: string): string | null {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})-(\d{3})Z/.exec(id);
  return m ? `${m[1]}T${m[2]}:${m[3]}:${m[4]}.${m[5]}Z` : null;
}

async function readSummary(dir: string, id: string): Promise<OutboxSummary | null> {
  try {
    return JSON.parse(await readFile(path.join(dir, `${id}.json`), 'utf8')) as OutboxSummary;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || err instanceof SyntaxError) return null;
    throw err;
  }
}

async function messageIds(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((f) => f.endsWith('.eml')).map((f) => f.slice(0, -'.eml'.length));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** Every message in the outbox, newest first; a missing or empty outbox has none. */
export async function listOutbox(dir: string): Promise<OutboxEntry[]> {
  const entries = await Promise.all(
    (await messageIds(dir)).map(async (id): Promise<OutboxEntry> => {
      const file = path.join(dir, `${id}.eml`);
      const s = await readSummary(dir, id);
      if (!s) return { id, date: timeOfName(id) ?? '', to: null, subject: null, attachments: [], file, note: NO_SUMMARY };
      return { id, date: s.date, to: s.to, subject: s.subject, attachments: s.attachments.map((a) => a.filename), file };
    }),
  );
  // ISO instants sort as text; the id breaks ties (and orders files without a time).
  return entries.sort((a, b) => b.date.localeCompare(a.date) || b.id.localeCompare(a.id));
}

/** One message by its id (its file name, `.eml` optional): headers, text, HTML and attachments. */
export async function showOutboxMessage(dir: string, given: string): Promise<OutboxMessage> {
  const id = given.endsWith('.eml') ? given.slice(0, -'.eml'.length) : given;
  // Only a name the outbox holds: never a path that reads elsewhere.
  if (!(await messageIds(dir)).includes(id)) {
    throw AppError.validation([{ path: 'ID', message: `no message ${given} in ${dir} (outbox list shows the ids)` }], 404);
  }
  const file = path.join(dir, `${id}.eml`);
  const s = await readSummary(dir, id);
  if (!s) return { id, from: null, to: null, subject: null, date: timeOfName(id) ?? '', text: null, html: null, attachments: [], file, page: null, note: NO_SUMMARY };
  const page = path.join(dir, `${id}.html`);
  const hasPage = await access(page).then(
    () => true,
    () => false,
  );
  return { id, from: s.from, to: s.to, subject: s.subject, date: s.date, text: s.text, html: s.html, attachments: s.attachments, file, page: hasPage ? page : null };
}

export type OutboxMessage = OutboxSummary & {
  id: string;
  file: string;
  /** The HTML part as a page to open in a browser, when the message has one. */
  page: string | null;
  note?: string;
};

const kilobytes = (size: number | null) => (size === null ? '' : ` ${Math.max(1, Math.round(size / 1024))} KB`);

/** The list as a person reads it: one message a line, newest first, its id last. */
export function outboxListText(entries: OutboxEntry[]): string {
  if (!entries.length) return 'The outbox is empty.\n';
  return entries
    .map((e) => [e.date, e.to ?? '?', e.subject ?? e.note ?? '', e.attachments.length ? `[${e.attachments.join(', ')}]` : '', e.id].filter(Boolean).join('  '))
    .join('\n')
    .concat('\n');
}

/** One message as a person reads it: its headers, its text, then its HTML (and the page to open). */
export function outboxMessageText(m: OutboxMessage): string {
  const rule = (title: string) => `\n── ${title} ${'─'.repeat(Math.max(0, 60 - title.length))}\n`;
  return [
    `From:        ${m.from ?? '?'}`,
    `To:          ${m.to ?? '?'}`,
    `Subject:     ${m.subject ?? '?'}`,
    `Date:        ${m.date}`,
    `Attachments: ${m.attachments.map((a) => `${a.filename ?? '?'} (${a.content_type ?? '?'}${kilobytes(a.size)})`).join(', ') || 'none'}`,
    `File:        ${m.file}`,
    ...(m.page ? [`Page:        ${m.page} (open it in a browser)`] : []),
    ...(m.note ? [`Note:        ${m.note}`] : []),
    ...(m.text !== null ? [rule('Text'), m.text.trimEnd()] : []),
    ...(m.html !== null ? [rule('HTML'), m.html.trimEnd()] : []),
  ]
    .join('\n')
    .concat('\n');
}
