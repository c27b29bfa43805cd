// Run by `npm install` (postinstall). postgres.js 3.4.9, the latest release, crashes the process
// when PostgreSQL restarts or fails over under load (porsager/postgres#1154, #1208, unfixed
// upstream): a transaction whose connection closes rolls back on that connection, the write is
// deferred with setImmediate, and it runs on the socket closed() has set to null. The TypeError
// is thrown from the timer, where no caller can catch it, and takes down web and worker alike.
// closed() and terminate() also cancel a pending write without forgetting it, so a pooled
// connection that closed with a write pending never sends anything again once it reconnects.
//
// The patch makes a write on a closed connection reject its queries with CONNECTION_CLOSED (the
// error every other query of that connection already got), and makes closing forget the pending
// write. It is applied once, by exact text; a newer release without that text is reported, not
// patched. test/faults.test.ts restarts PostgreSQL under load and fails without it.
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const MARK = 'invoicing: closed-socket guard';
const require = createRequire(import.meta.url);
let root;
try {
  // The package exports no package.json: its CommonJS entry is cjs/src/index.js.
  root = path.resolve(path.dirname(require.resolve('postgres')), '..', '..');
} catch {
  process.exit(0); // not installed (yet): nothing to patch
}
const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

const edits = [
  [
    '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n',
    `  function nextWrite(fn) {
    // ${MARK} (porsager/postgres#1208)
    if (!socket) {
      chunk = nextWriteTimer = null
      const err = Errors.connection('CONNECTION_CLOSED', options)
      error(err)
      fn && fn(err)
      return false
    }
    const x = socket.write(chunk, fn)
`,
  ],
  // closed() and terminate(): the one pending write dies with the connection.
  ['    clearImmediate(nextWriteTimer)\n    socket.removeListener', '    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n    socket.removeListener'],
  ['    clearImmediate(nextWriteTimer)\n    if (socket) {', '    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null\n    if (socket) {'],
];

let failed = false;
for (const file of ['src/connection.js', 'cjs/src/connection.js', 'cf/src/connection.js']) {
  const full = path.join(root, file);
  if (!existsSync(full)) continue;
  let text = readFileSync(full, 'utf8');
  if (text.includes(MARK)) continue;
  for (const [from, to] of edits) {
    if (text.split(from).length !== 2) {
      failed = true;
      break;
    }
    text = text.replace(from, to);
  }
  if (failed) {
    process.stderr.write(
      `postgres ${version}: ${file} is not the code this patch fixes; check whether porsager/postgres#1208 is fixed ` +
        `in this release (test/faults.test.ts tells) and update or remove src/db/patch-postgres.mjs\n`,
    );
    break;
  }
  writeFileSync(full, text);
}
