import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The CLI as support staff run it, against this database: its exit code and the JSON it printed
 * (on stdout when it succeeded, on stderr when it failed).
 */
export async function runCli(dbUrl: string, ...args: string[]): Promise<{ code: number; out: any }> {
  return run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { env: { ...process.env, DATABASE_URL: dbUrl, LOG_LEVEL: 'silent' } }).then(
    ({ stdout }) => ({ code: 0, out: JSON.parse(stdout) }),
    (err: { code: number; stderr: string }) => ({ code: err.code, out: JSON.parse(err.stderr) }),
  );
}
