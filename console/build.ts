// `npm run build:console` (part of `npm run build`, and run before `npm start` and `npm test`):
// bundles the support console's browser script (app.ts) with @trpc/client into one file, where
// the server reads it (src/admin/console-bundle.ts), so a production install serves it without
// esbuild and no request waits for a bundler.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { consoleBundlePath } from '../src/admin/console-bundle.js';

await build({
  entryPoints: [fileURLToPath(new URL('./app.ts', import.meta.url))],
  outfile: consoleBundlePath,
  bundle: true,
  format: 'iife',
  platform: 'browser',
  target: 'es2020',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
