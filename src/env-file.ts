// `.env` in the working directory, as .env.example suggests: read at each process's start, the
// process environment winning over it (a platform's config vars are never overridden).
import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';

/** The variables of `file` that `env` lacks, added to it; a missing file adds nothing. */
export function readEnvFile(file = '.env', env: NodeJS.ProcessEnv = process.env): void {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  for (const [name, value] of Object.entries(parseEnv(text))) {
    if (env[name] === undefined) env[name] = value;
  }
}
