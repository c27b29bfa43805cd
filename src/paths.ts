import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder holding package.json, whether running from src/ with tsx or from dist/ after tsc. */
function findProjectRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('package.json not found above the running code');
    dir = parent;
  }
  return dir;
}

export const projectRoot = findProjectRoot();
export const sqlDir = path.join(projectRoot, 'sql');
export const templatesDir = path.join(projectRoot, 'templates');
