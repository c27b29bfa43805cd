// Run by `npm install` (postinstall). Four faults of postgres.js 3.4.9, the latest release, all
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
//    test/postgres-pool.test.ts runs the pool's own queue through a long quiet spell.
// 3. A reserved connection whose backend died while reserved is closed, and its release() puts it
//    back among the idle connections all the same (porsager/postgres#1199), where it is never
//    reconnected and every query sent to it fails. pg-boss's migration runs on a reserved
//    connection (migrateQueues in src/jobs/boss.ts). The patch hands back only a connection that
//    is still reserved; a closed one stays closed and is reconnected when next needed.
//    test/postgres-pool.test.ts drops one and releases it.
// 4. A backend that dies mid-query (PostgreSQL restarting, pg_terminate_backend) leaves the
//    connection in a state the next query pays for (porsager/postgres#1223, #1215):
//    - the backend sends its fatal error before closing; the query is rejected with
//      CONNECTION_CLOSED, but the connection keeps that error and hands it to the first query it
//      runs after reconnecting: one request fails with 57P01 after the database is back;
//    - when the socket reports an error (ECONNRESET) before it closes, a query sent to the
//      connection in between is never answered: closing rejects pending queries only when the
//      socket had no error, so the request hangs;
//    - a backend killed while the connection fetches array types rejects a promise nobody
//      awaits, which ends the process.
//    The patch starts every connection with no answer pending, rejects on close whatever is
//    still pending, and lets the next connection fetch the types again.
//    test/postgres-pool.test.ts kills backends mid-query and between the error and the close, and
//    resets a connection while it fetches the types.
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
  {
    mark: 'invoicing: release only a reserved connection',
    issue: 'porsager/postgres#1199',
    files: ['src/index.js', 'cjs/src/index.js', 'cf/src/index.js'],
    edits: [
      [
        '    sql.release = () => {\n      c.reserved = null\n      onopen(c)\n    }\n',
        `    sql.release = () => {
      c.reserved = null
      // invoicing: release only a reserved connection (porsager/postgres#1199)
      c.queue === reserved && onopen(c)
    }
`,
      ],
    ],
  },
  {
    mark: 'invoicing: no answer pending on a new backend',
    issue: 'porsager/postgres#1223',
    files: ['src/connection.js', 'cjs/src/connection.js', 'cf/src/connection.js'],
    edits: [
      [
        '  async function connect() {\n    terminated = false\n    backendParameters = {}\n',
        `  async function connect() {
    terminated = false
    backendParameters = {}
    // invoicing: no answer pending on a new backend (porsager/postgres#1223)
    query = results = errorResponse = null
    result = new Result()
`,
      ],
      [
        "    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))\n",
        `    // invoicing: reject what is still pending, error or not (porsager/postgres#1223)
    ;(query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))
`,
      ],
      [
        '        return fetchArrayTypes()\n',
        // A failed fetch means the connection closed; connected() asks the next one again.
        '        return fetchArrayTypes().catch(noop)\n',
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

