import path from 'node:path';
import { projectRoot } from '../paths.js';

/** Where `npm run build` (and `npm start`/`npm test`, before they run) writes the console's browser script. */
export const consoleBundlePath = path.join(projectRoot, 'dist', 'admin', 'console.js');
