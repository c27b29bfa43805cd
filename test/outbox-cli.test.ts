import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { simpleParser } from 'mailparser';
import { testApp } from './helpers/app.js';
import { until } from './helpers/until.js';
import { createMailer } from '../src/email/transport.js';
import { NO_OUTBOX } from '../src/email/outbox-files.js';

const exec = promisify(execFile);

/** `npm run cli -- outbox …` with this DATA_DIR (and no database: the outbox needs none). */
async function outboxCli(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const { SMTP_URL: _smtp, DATABASE_URL: _db, ...inherited } = process.env;
  return exec(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'outbox', ...args], { env: { ...inherited, LOG_LEVEL: 'silent', ...env } }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

async function text(env: Record<string, string>, ...args: string[]): Promise<string> {
  const r = await outboxCli(env, ...args);
  if (r.code !== 0) throw new Error(`outbox ${args.join(' ')} exited with ${r.code}: ${r.stderr}`);
  return r.stdout;
}

async function json(env: Record<string, string>, ...args: string[]): Promise<any> {
  const r = await outboxCli(env, ...args, '--json');
  if (r.code !== 0) throw new Error(`outbox ${args.join(' ')} exited with ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

t.test('an invoice e-mail the worker wrote to the outbox, listed and shown by the CLI', async (t) => {
  const dataDir = t.testdir();
  const h = await testApp(t, { DATA_DIR: dataDir });
  await h.startWorker();
  const { key } = await h.key(['*']);
  const res = await h.api('POST', '/invoices', {
    key,
    body: {
      client: { name: 'Juan Pérez', email: 'juan@example.cl', rut: '12.345.678-5' },
      due_date: '2099-12-31',
      items: [{ description: 'Consultoría', quantity: 2, unit_price: 5000 }],
      send_immediately: true,
    },
  });
  t.equal(res.status, 201);
  const outbox = path.join(dataDir, 'outbox');
  const [eml] = await until('the e-mail in the outbox', async () => {
    const files = (await readdir(outbox).catch(() => [])).filter((f) => f.endsWith('.eml'));
    return files.length ? files : null;
  });
  // As a mail client reads the .eml: what the CLI shows must be the same message.
  const parsed = await simpleParser(await readFile(path.join(outbox, eml!)));

  const env = { DATA_DIR: dataDir };
  const list = await json(env, 'list');
  t.equal(list.length, 1);
  const [entry] = list;
  t.equal(entry.id, eml!.replace(/\.eml$/, ''));
  t.equal(entry.file, path.join(outbox, eml!));
  t.match(entry.to, /^Juan Pérez <juan@example\.cl>$/);
  t.match(entry.subject, /^Factura INV-000001 de /);
  t.equal(entry.subject, parsed.subject);
  t.same(entry.attachments, ['INV-000001.pdf']);
  // The Date header has whole seconds; the listing keeps the milliseconds (its order).
  t.equal(Math.floor(Date.parse(entry.date) / 1000) * 1000, parsed.date!.getTime(), "the listing's time is the message's Date header");

  const shown = await json(env, 'show', entry.id);
  t.match(shown, { id: entry.id, subject: parsed.subject, to: entry.to, date: entry.date, from: /facturas@localhost/ });
  t.match(shown.html, /<html|<p|<table/i);
  t.match(shown.html, /INV-000001/);
  t.equal(shown.html, parsed.html, 'the HTML part as sent');
  t.equal(shown.text.trim(), parsed.text!.trim(), 'the text part as sent');
  t.same(shown.attachments, [{ filename: 'INV-000001.pdf', content_type: 'application/pdf', size: parsed.attachments[0]!.size }]);
  t.ok(shown.attachments[0].size > 1000, 'the PDF has its size');
  t.same(await json(env, 'show', eml!), shown, 'the file name works as the id too');
  t.equal(shown.page, path.join(outbox, eml!.replace(/\.eml$/, '.html')), 'the HTML part has its page');
  t.equal(await readFile(shown.page, 'utf8'), parsed.html, 'the page is the HTML part as sent');

  // Without --json, as a person reads them: a line per message, then the message itself.
  const lines = (await text(env, 'list')).trimEnd().split('\n');
  t.equal(lines.length, 1);
  t.equal(lines[0], `${entry.date}  ${entry.to}  ${entry.subject}  [INV-000001.pdf]  ${entry.id}`);
  const readable = await text(env, 'show', entry.id);
  t.ok(readable.startsWith(`From:        ${shown.from}\nTo:          ${entry.to}\nSubject:     ${entry.subject}\n`), 'the headers first');
  t.match(readable, /\nAttachments: INV-000001\.pdf \(application\/pdf \d+ KB\)\n/);
  t.match(readable, `\nPage:        ${shown.page} (open it in a browser)\n`);
  t.match(readable, `── Text `);
  t.ok(readable.includes(parsed.text!.trim()), 'the text part as sent');
  t.ok(readable.includes(`── HTML `) && readable.includes(parsed.html as string), 'the HTML as it is, not escaped');
  t.notMatch(readable, /\\n|\\"/, 'no JSON escapes');
});

t.test('newest first; older .eml files without a summary are listed by name', async (t) => {
  const dataDir = t.testdir();
  const mailer = createMailer({ DATA_DIR: dataDir });
  t.teardown(() => mailer.close());
  await mailer.deliver({ from: 'a@test.cl', to: 'first@test.cl', subject: 'Primero', text: 'uno', date: new Date('2026-01-01T10:00:00Z') });
  await mailer.deliver({ from: 'a@test.cl', to: ['second@test.cl', { name: 'Otro', address: 'other@test.cl' }], subject: 'Segundo', html: '<p>dos</p>', date: new Date('2026-01-02T10:00:00Z') });
  await writeFile(path.join(dataDir, 'outbox', '2025-06-01T00-00-00-000Z-old@localhost.eml'), 'Subject: old\n\nold\n');

  const list = await json({ DATA_DIR: dataDir }, 'list');
  t.same(
    list.map((e: { subject: string | null; to: string | null; date: string }) => [e.subject, e.to, e.date]),
    [
      ['Segundo', 'second@test.cl, Otro <other@test.cl>', '2026-01-02T10:00:00.000Z'],
      ['Primero', 'first@test.cl', '2026-01-01T10:00:00.000Z'],
      [null, null, '2025-06-01T00:00:00.000Z'],
    ],
  );
  t.match(list[2], { id: '2025-06-01T00-00-00-000Z-old@localhost', attachments: [], note: /open the \.eml/ });
  t.match(await json({ DATA_DIR: dataDir }, 'show', list[0].id), { subject: 'Segundo', text: null, html: '<p>dos</p>', attachments: [] });
  t.match(await json({ DATA_DIR: dataDir }, 'show', list[1].id), { subject: 'Primero', html: null, page: null });
  t.match(await text({ DATA_DIR: dataDir }, 'show', list[2].id), /\nNote: {8}written before the outbox kept a summary/);
});

t.test('no outbox, an empty one, an unknown id, SMTP', async (t) => {
  const dataDir = t.testdir();
  t.same(await json({ DATA_DIR: path.join(dataDir, 'never') }, 'list'), [], 'a missing outbox lists nothing');
  t.equal(await text({ DATA_DIR: path.join(dataDir, 'never') }, 'list'), 'The outbox is empty.\n');
  await mkdir(path.join(dataDir, 'outbox'));
  t.same(await json({ DATA_DIR: dataDir }, 'list'), [], 'an empty one too');

  for (const id of ['nope', '../outbox', '/etc/passwd']) {
    const r = await outboxCli({ DATA_DIR: dataDir }, 'show', id);
    t.equal(r.code, 1);
    t.match(JSON.parse(r.stderr), { error: { code: 'validation_error', message: /no message .* in / } }, id);
  }
  const missing = await outboxCli({ DATA_DIR: dataDir }, 'show');
  t.match(JSON.parse(missing.stderr), { error: { message: 'Invalid ID: is required' } });

  const smtp = await outboxCli({ DATA_DIR: dataDir, SMTP_URL: 'smtp://mail.test:587' }, 'list');
  t.equal(smtp.code, 1);
  t.equal(smtp.stdout, '');
  t.equal(smtp.stderr, `${NO_OUTBOX}\n`, 'one line: e-mails go through SMTP, there is no outbox');
});
