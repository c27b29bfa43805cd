// Run by `npm install` (postinstall). Two faults of postgres.js 3.4.9, the latest release, both
// unfixed upstream, are patched here, each applied once and by exact text: a release whose code
// differs is reported, not patched.
//
// 1. It crashes the process when PostgreSQL restarts or fails over under load (porsager/postgres
//    #1154, #1208): a transaction whose connection closes rolls back on that connection, the write
//    is deferred with setImmediate, and it runs on the socket closed() has set to null. The
//    TypeError is thrown from the timer, where no caller can catch it, and takes down web and
//    worker alike. closed() and terminate() also cancel a pending write without forgetting it, so
//    a pooled connection that closed with a write pending never sends anything again once it
//    reconnects. The patch makes a write on a closed connection reject its queries with
//    CONNECTION_CLOSED (the error every other query of that connection already got), and makes
//    closing forget the pending write. test/faults.test.ts restarts PostgreSQL under load and
//    fails without it.
// 2. Its connection queues grow by one slot per query for as long as the pool is never wholly
//    busy (porsager/postgres#747, "speed dropped"): shift() leaves a hole at the front and resets
//    the array only once it is empty, and every query then moves its connection out of the idle
//    queue with indexOf over all those holes. A process serving moderate traffic slows down query
//    by query and holds the array until a burst uses every connection. The patch searches from
//    the first live slot and drops the holes once they are half the array.
//    test/postgres-queue.test.ts runs the pool's own queue through a long quiet spell.
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
let root;
try {
  // The package exports no package.json: its CommonJS entry is cjs/src/index.js.
  root = path.resolve(path.dirname(require.resolve('postgres')), '..', '..');
} catch {
  process.exit(0); // not installed (yet): nothing to patch
}
const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

const patches = [
  {
    mark: 'invoicing: closed-socket guard',
    issue: 'porsager/postgres#1208',
    files: ['src/connection.js', 'cjs/src/connection.js', 'cf/src/connection.js'],
    edits: [
      [
        '  function nextWrite(fn) {\n    const x = socket.write(chunk, fn)\n',
        `  function nextWrite(fn) {
    // invoicing: closed-socket guard (porsager/postgres#1208)
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
    ],
  },
  {
    mark: 'invoicing: queue compaction',
    issue: 'porsager/postgres#747',
    files: ['src/queue.js', 'cjs/src/queue.js', 'cf/src/queue.js'],
    edits: [
      [
        '      const index = xs.indexOf(x)\n      return index === -1\n        ? null\n        : (xs.splice(index, 1), x)\n',
        `      // invoicing: queue compaction (porsager/postgres#747): the slots before index are holes
      const at = xs.indexOf(x, index)
      return at === -1
        ? null
        : (xs.splice(at, 1), x)
`,
      ],
      [
        '      } else {\n        xs[index - 1] = undefined\n      }\n',
        `      } else if (index > 64 && index * 2 > xs.length) {
        xs = xs.slice(index)
        index = 0
      } else {
        xs[index - 1] = undefined
      }
`,
      ],
    ],
  },
];

for (const patch of patches) {
  for (const file of patch.files) {
    const full = path.join(root, file);
    if (!existsSync(full)) continue;
    let text = readFileSync(full, 'utf8');
    if (text.includes(patch.mark)) continue;
    const fits = patch.edits.every(([from]) => text.split(from).length === 2);
    if (!fits) {
      process.stderr.write(
        `postgres ${version}: ${file} is not the code this patch fixes; check whether ${patch.issue} is fixed ` +
          `in this release and update or remove that patch in src/db/patch-postgres.mjs\n`,
      );
      continue;
    }
    for (const [from, to] of patch.edits) text = text.replace(from, to);
    writeFileSync(full, text);
  }
}

