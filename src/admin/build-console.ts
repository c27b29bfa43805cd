// `npm run build:console` (part of `npm run build`, and run before `npm start` and `npm test`):
// bundles the support console's browser script with @trpc/client into one file, so a production
// install serves it without esbuild and no request waits for a bundler.
import { build } from 'esbuild';
import path from 'node:path';
import { projectRoot } from '../paths.js';
import { consoleBundlePath } from './console-bundle.js';

await build({
  entryPoints: [path.join(projectRoot, 'src', 'admin', 'console.ts')],
  outfile: consoleBundlePath,
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2020',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
