import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const KNOWN_PATHS = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

function installed(): string | undefined {
  const given = process.env.CHROMIUM_PATH;
  if (given) return existsSync(given) ? given : undefined;
  return KNOWN_PATHS.find((p) => existsSync(p));
}

function hasCommand(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

function aptInstall(): void {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () => execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], { env, stdio: 'ignore' });
  try {
    install();
  } catch {
    // A machine whose package lists were never fetched knows no chromium yet.
    execFileSync('apt-get', ['update'], { env, stdio: 'ignore' });
    install();
  }
}

/**
 * The browser tests' Chromium: the one given in CHROMIUM_PATH or installed at a usual place, else
 * Debian's package installed for this run when we may (root with apt-get). Where that is
 * impossible, `problem` is the one line the browser tests fail with.
 */
export function ensureChromium(log: (line: string) => void): { path: string } | { problem: string } {
  const found = installed();
  if (found) return { path: found };
  if (process.env.CHROMIUM_PATH) return { problem: `CHROMIUM_PATH is ${process.env.CHROMIUM_PATH}, which does not exist: point it at a Chromium or Chrome binary` };
  const how = 'install Debian\'s chromium (`apt-get install chromium`, as root) or set CHROMIUM_PATH to a Chromium or Chrome binary, and run the tests again';
  if (process.getuid?.() !== 0 || !hasCommand('apt-get')) return { problem: `Chromium is not installed and this run cannot install it (it needs root and apt-get): ${how}` };
  log("# the browser tests need Chromium: installing Debian's chromium (apt-get install chromium)");
  try {
    aptInstall();
  } catch (err) {
    return { problem: `installing Chromium with apt-get failed (${err instanceof Error ? err.message.split('\n')[0] : String(err)}): ${how}` };
  }
  const now = installed();
  return now ? { path: now } : { problem: `apt-get installed chromium but no binary is at ${KNOWN_PATHS.join(', ')}: ${how}` };
}
