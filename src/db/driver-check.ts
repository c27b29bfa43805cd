import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The release patches/postgres+3.4.9.patch fixes; package.json pins postgres to it exactly. */
const PATCHED_VERSION = '3.4.9';
const PATCH_FILE = `patches/postgres+${PATCHED_VERSION}.patch`;

/**
 * The mark each fix leaves in the ESM copy (`src/`), the one `import postgres from 'postgres'`
 * loads; patches/README.md explains each fix. patch-package applies a patch file whole or not at
 * all, so a present mark stands for its fix's other lines.
 */
const MARKS: ReadonlyArray<readonly [file: string, mark: string]> = [
  ['src/connection.js', 'invoicing: closed-socket guard (porsager/postgres#1208)'],
  ['src/queue.js', 'invoicing: queue compaction (porsager/postgres#747)'],
  ['src/index.js', 'invoicing: release only a reserved connection (porsager/postgres#1199)'],
  ['src/connection.js', 'invoicing: no answer pending on a new backend (porsager/postgres#1223)'],
  ['src/connection.js', 'invoicing: reject what is still pending, error or not (porsager/postgres#1223)'],
];

/** The folder of the postgres.js this process loads: its ESM entry is `<root>/src/index.js`. */
export function loadedPostgresRoot(): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.resolve('postgres'))), '..');
}

/**
 * Throws, with a one-line message saying what to do, unless the postgres.js at `root` (by default
 * the one this process loads) is the pinned release with every fix of patches/ applied. An
 * install with --ignore-scripts skips the postinstall that patches it, and the unpatched driver
 * runs without a word until PostgreSQL restarts or a backend dies.
 * Call it once at start-up, before the first connection: it reads four small files.
 */
export function assertPatchedPostgres(root = loadedPostgresRoot()): void {
  const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  if (version !== PATCHED_VERSION) {
    throw new Error(
      `postgres.js at ${root} is ${version}, but ${PATCH_FILE} fixes ${PATCHED_VERSION}: run \`npm install\` to install the pinned ${PATCHED_VERSION}, ` +
        `or port the fixes patches/README.md describes to ${version} and remake the patch with \`npx patch-package postgres\``,
    );
  }
  const texts = new Map([...new Set(MARKS.map(([file]) => file))].map((file) => [file, readFileSync(path.join(root, file), 'utf8')]));
  const missing = MARKS.filter(([file, mark]) => !texts.get(file)!.includes(mark)).map(([file, mark]) => `"${mark}" in ${file}`);
  if (missing.length > 0) {
    throw new Error(
      `postgres.js at ${root} is not patched (missing: ${missing.join(', ')}): run \`npm install\` ` +
        `(its postinstall applies ${PATCH_FILE}); installs with --ignore-scripts skip it`,
    );
  }
}
