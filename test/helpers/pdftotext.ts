import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

const LOCK_WAIT_SECONDS = 300;

async function installPoppler(): Promise<void> {
  if (hasCommand('pdftotext')) return;
  const how = "install Debian's poppler-utils (`apt-get install poppler-utils`, as root) and run the tests again";
  if (process.getuid?.() !== 0 || !hasCommand('apt-get')) throw new Error(`pdftotext is not installed and this run cannot install it: ${how}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const apt = (...args: string[]) => run('apt-get', ['-o', `DPkg::Lock::Timeout=${LOCK_WAIT_SECONDS}`, ...args], { env });
  const install = () => apt('install', '-y', '--no-install-recommends', 'poppler-utils');
  try {
    await install().catch(async () => {
      // A machine whose package lists were never fetched knows no poppler-utils yet.
      await apt('update');
      await install();
    });
  } catch (err) {
    // Another test file may be installing it right now, holding apt's locks: wait for its result.
    const until = Date.now() + LOCK_WAIT_SECONDS * 1000;
    while (!hasCommand('pdftotext') && Date.now() < until) await new Promise((r) => setTimeout(r, 1000));
    if (!hasCommand('pdftotext')) throw new Error(`installing poppler-utils failed (${err instanceof Error ? err.message.split('\n')[0] : String(err)}): ${how}`);
  }
}

let installed: Promise<void> | null = null;

/**
 * Poppler's tools (pdftotext, pdffonts), installed from Debian's poppler-utils for this run when
 * missing and we may (root with apt-get), as the browser tests do with Chromium.
 */
function ensurePoppler(): Promise<void> {
  installed ??= installPoppler();
  return installed;
}

async function withFile<T>(pdf: Buffer, use: (file: string) => Promise<T>): Promise<T> {
  await ensurePoppler();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'pdf-'));
  try {
    const file = path.join(dir, 'document.pdf');
    await writeFile(file, pdf);
    return await use(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The text a reader gets out of the PDF, by poppler: a reader other than the renderer, so a
 * character that only looks right (or only extracts right) does not pass.
 */
export function pdfToText(pdf: Buffer): Promise<string> {
  return withFile(pdf, async (file) => (await run('pdftotext', ['-enc', 'UTF-8', file, '-'])).stdout);
}

export interface PdfFont {
  name: string;
  embedded: boolean;
  subset: boolean;
}

/** The fonts the PDF uses, as pdffonts lists them. */
export function fontsOf(pdf: Buffer): Promise<PdfFont[]> {
  return withFile(pdf, async (file) => {
    const { stdout } = await run('pdffonts', [file]);
    // Two header lines; then name, type (may hold spaces), encoding, emb, sub, uni, object id.
    return stdout
      .split('\n')
      .slice(2)
      .filter((line) => line.trim() !== '')
      .map((line) => {
        const cols = line.trim().split(/\s+/);
        const [emb, sub] = cols.slice(-5, -3);
        return { name: cols[0]!, embedded: emb === 'yes', subset: sub === 'yes' };
      });
  });
}

/** The first page as a PNG, by poppler's pdftoppm: what a reader sees, for review. */
export function firstPagePng(pdf: Buffer, out: string, dpi = 80): Promise<void> {
  return withFile(pdf, async (file) => {
    await run('pdftoppm', ['-png', '-r', String(dpi), '-f', '1', '-l', '1', '-singlefile', file, out.replace(/\.png$/, '')]);
  });
}

export interface PdfWord {
  /** 1 for the first page. */
  page: number;
  text: string;
  /** Points from the page's top edge. */
  yMin: number;
  yMax: number;
  pageHeight: number;
}

const decodeEntities = (s: string) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');

/** Every word with the page it is on and where, as poppler's `pdftotext -bbox` places it. */
export function wordsOf(pdf: Buffer): Promise<PdfWord[]> {
  return withFile(pdf, async (file) => {
    const { stdout } = await run('pdftotext', ['-bbox', '-enc', 'UTF-8', file, '-'], { maxBuffer: 256 * 1024 * 1024 });
    const words: PdfWord[] = [];
    let page = 0;
    let pageHeight = 0;
    for (const m of stdout.matchAll(/<page width="[\d.]+" height="([\d.]+)">|<word xMin="[\d.]+" yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)<\/word>/g)) {
      if (m[1] !== undefined) {
        page += 1;
        pageHeight = Number(m[1]);
      } else {
        words.push({ page, text: decodeEntities(m[4]!), yMin: Number(m[2]), yMax: Number(m[3]), pageHeight });
      }
    }
    return words;
  });
}
