import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** An installed package that patches/ changes: its pinned release and the marks its patch leaves. */
export interface PatchedPackage {
  /** The package's name, as imported and as patch-package names its patch. */
  name: string;
  /** How messages call it. */
  label: string;
  /** The release its patch fixes; package.json pins the package to it exactly. */
  version: string;
  /**
   * The mark each fix leaves in the copy this process loads; patches/README.md explains each fix.
   * patch-package applies a patch file whole or not at all, so a present mark stands for its
   * fix's other lines.
   */
  marks: ReadonlyArray<readonly [file: string, mark: string]>;
}

/** postgres.js: five faults and its write batching (patches/postgres+3.4.9.patch). */
export const POSTGRES_JS: PatchedPackage = {
  name: 'postgres',
  label: 'postgres.js',
  version: '3.4.9',
  marks: [
    ['src/connection.js', 'invoicing: closed-socket guard (porsager/postgres#1208)'],
    ['src/queue.js', 'invoicing: queue compaction (porsager/postgres#747)'],
    ['src/index.js', 'invoicing: release only a reserved connection (porsager/postgres#1199)'],
    ['src/connection.js', 'invoicing: no answer pending on a new backend (porsager/postgres#1223)'],
    ['src/connection.js', 'invoicing: reject what is still pending, error or not (porsager/postgres#1223)'],
    ['src/index.js', 'invoicing: a transaction whose connection closed sends nothing more on it (porsager/postgres#1216, #1186)'],
  ],
};

/**
 * pg-boss: a job of a batch gives its local group slot back as it ends (patches/pg-boss+12.38.0.patch).
 * The worker's effect queues fetch in batches and rely on it to keep a slow receiver's batch from
 * holding its neighbours' endpoints at their caps.
 */
export const PG_BOSS: PatchedPackage = {
  name: 'pg-boss',
  label: 'pg-boss',
  version: '12.38.0',
  marks: [['dist/manager.js', 'invoicing: a job gives its group slot back as it ends (releaseGroupSlot)']],
};

/** The folder of the copy of `pkg` this process loads: its entry is one folder below (`src/`, `dist/`). */
export function loadedPackageRoot(pkg: PatchedPackage): string {
  return path.resolve(path.dirname(fileURLToPath(import.meta.resolve(pkg.name))), '..');
}

/**
 * Throws, with a one-line message saying what to do, unless the copy of `pkg` at `root` (by
 * default the one this process loads) is the pinned release with every fix of patches/ applied.
 * An install with --ignore-scripts skips the postinstall that patches it, and the unpatched
 * package runs without a word: postgres.js until PostgreSQL restarts or a backend dies, pg-boss
 * until a slow receiver holds its neighbours' slots.
 * Call it once at start-up, before the first connection: it reads a few small files.
 */
export function assertPatched(pkg: PatchedPackage, root = loadedPackageRoot(pkg)): void {
  const patchFile = `patches/${pkg.name}+${pkg.version}.patch`;
  const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
  if (version !== pkg.version) {
    throw new Error(
      `${pkg.label} at ${root} is ${version}, but ${patchFile} fixes ${pkg.version}: run \`npm install\` to install the pinned ${pkg.version}, ` +
        `or port the fixes patches/README.md describes to ${version} and remake the patch with \`npx patch-package ${pkg.name}\``,
    );
  }
  const texts = new Map([...new Set(pkg.marks.map(([file]) => file))].map((file) => [file, readFileSync(path.join(root, file), 'utf8')]));
  const missing = pkg.marks.filter(([file, mark]) => !texts.get(file)!.includes(mark)).map(([file, mark]) => `"${mark}" in ${file}`);
  if (missing.length > 0) {
    throw new Error(
      `${pkg.label} at ${root} is not patched (missing: ${missing.join(', ')}): run \`npm install\` ` +
        `(its postinstall applies ${patchFile}); installs with --ignore-scripts skip it`,
    );
  }
}
