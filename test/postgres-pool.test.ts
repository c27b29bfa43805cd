// postgres.js's pool with the fixes of patches/postgres+3.4.9.patch (patches/README.md).
// Unpatched, a pool that is never wholly busy grows its idle queue by one slot per query and scans
// all of them on the next, so a quietly busy process gets slower query by query; a reserved
// connection that died is handed back to the pool on release and never reconnects; and a backend
// that dies mid-query fails the next query with its old error, strands a query sent before the
// close, or, while the types are fetched, ends the process with an unhandled rejection.
import t, { type Test } from 'tap';
import { createRequire } from 'node:module';
import net from 'node:net';
import postgres from 'postgres';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { sleep } from './helpers/faults.js';
import { createSql, type Sql } from '../src/db/client.js';

interface Queue<T> {
  readonly length: number;
  push(x: T): T;
  shift(): T;
  remove(x: T): T | null;
}

async function loadQueue(): Promise<<T>(initial?: T[]) => Queue<T>> {
  // The package exports only its entry points: the queue module is reached by its file.
  const root = path.resolve(path.dirname(createRequire(import.meta.url).resolve('postgres')), '..', '..');
  const mod = (await import(pathToFileURL(path.join(root, 'src', 'queue.js')).href)) as { default: <T>(initial?: T[]) => Queue<T> };
  return mod.default;
}

t.test("the idle queue stays as fast after 200,000 quiet queries as at the start", async (t) => {
  const Queue = await loadQueue();
  const open = Queue<object>();
  const busy = Queue<object>();
  const connections = [{}, {}, {}, {}];
  for (const c of connections) open.push(c);
  // What the pool does for each query while some connection is always idle.
  const cycle = () => {
    const c = open.shift();
    open.remove(c);
    busy.push(c);
    busy.remove(c);
    open.push(c);
  };
  const timed = (n: number) => {
    const start = performance.now();
    for (let i = 0; i < n; i++) cycle();
    return performance.now() - start;
  };
  timed(10_000);
  const first = timed(10_000);
  for (let i = 0; i < 18; i++) timed(10_000);
  const last = timed(10_000);
  // Unpatched, the last batch scans ~200,000 slots per query: hundreds of times the first.
  t.ok(last < first * 5 + 5, `first 10,000: ${first.toFixed(1)} ms, last 10,000: ${last.toFixed(1)} ms`);
  t.equal(open.length, 4);
  t.equal(busy.length, 0);
});

t.test('the queue keeps its order and its removals through compaction', async (t) => {
  const Queue = await loadQueue();
  const q = Queue<number>();
  for (let i = 0; i < 1000; i++) q.push(i);
  const out: number[] = [];
  for (let i = 0; i < 600; i++) out.push(q.shift());
  t.same(out.slice(0, 3), [0, 1, 2]);
  t.equal(q.remove(5), null, 'an element already shifted out is not found again');
  t.equal(q.remove(700), 700);
  t.equal(q.length, 399);
  const rest: number[] = [];
  while (q.length) rest.push(q.shift());
  t.same(rest, [...Array.from({ length: 100 }, (_, i) => 600 + i), ...Array.from({ length: 299 }, (_, i) => 701 + i)]);
});

t.test('a pool serves sequential and concurrent queries alike after a long quiet spell', async (t) => {
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  for (let i = 0; i < 3000; i++) await db.sql`SELECT 1`;
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => db.sql<{ n: number }[]>`SELECT ${i}::int AS n`));
  t.same(
    answers.map(([row]) => row?.n),
    Array.from({ length: 40 }, (_, i) => i),
  );
});

const outcome = (q: Promise<unknown>) =>
  q.then(
    () => 'ok',
    (e: { code?: string }) => String(e.code),
  );

/** Settles with 'hung' when the query has no answer within `ms`. */
const within = (q: Promise<unknown>, ms: number) =>
  Promise.race([outcome(q), new Promise<string>((resolve) => setTimeout(resolve, ms, 'hung').unref())]);

/** How each of the next three queries on the pool settles. */
async function nextThree(pool: Sql): Promise<string[]> {
  const after: string[] = [];
  for (let i = 0; i < 3; i++) after.push(await within(pool`SELECT ${i}::int AS n`, 5000));
  return after;
}

async function poolOfOne(t: Test) {
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  const pool = createSql(db.url, { max: 1, application: 'invoicing-test-pool' });
  t.teardown(() => pool.end({ timeout: 1 }));
  const [row] = await pool<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
  return { db, pool, pid: row!.pid };
}

/** A reserved connection whose backend is terminated; its next query has failed. */
async function reservedAndKilled(db: TestDatabase, pool: Sql) {
  const conn = await pool.reserve();
  const [row] = await conn<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
  await db.sql`SELECT pg_terminate_backend(${row!.pid})`;
  return { conn, lost: await outcome(conn`SELECT 1`) };
}

t.test('the first query after a backend died mid-query gets its own answer', async (t) => {
  const { db, pool, pid } = await poolOfOne(t);
  const sleeping = outcome(pool`SELECT pg_sleep(10)`);
  await sleep(100);
  await db.sql`SELECT pg_terminate_backend(${pid})`;
  t.not(await sleeping, 'ok', 'the query whose backend died fails');
  // Unpatched, the reconnected connection hands this query the dead backend's 57P01.
  t.same(await nextThree(pool), ['ok', 'ok', 'ok']);
});

t.test('a reserved connection that died is not handed back to the pool on release', async (t) => {
  const { db, pool } = await poolOfOne(t);
  const { conn, lost } = await reservedAndKilled(db, pool);
  t.not(lost, 'ok', 'the reserved connection is gone');
  // Let the socket close before the release: unpatched, the closed connection goes back among
  // the idle ones and never reconnects.
  await sleep(200);
  conn.release();
  t.same(await nextThree(pool), ['ok', 'ok', 'ok'], 'every later query is served');
});

t.test("a transaction whose backend died sends nothing to the next transaction on the same connection", async (t) => {
  const { db, pool } = await poolOfOne(t);
  await db.sql`CREATE TABLE marks (n int PRIMARY KEY)`;
  let resume!: () => void;
  const paused = new Promise<void>((resolve) => (resume = resolve));
  const stale = pool.begin(async (tx) => {
    const [row] = await tx<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    await db.sql`SELECT pg_terminate_backend(${row!.pid})`;
    // The callback goes on after its connection closed, as a request's code does while it awaits
    // something else; meanwhile the pool reconnects that connection for another transaction.
    await paused;
    const late = await outcome(tx`INSERT INTO marks VALUES (1)`);
    t.equal(late, 'CONNECTION_CLOSED', 'its next statement is refused, not sent to the new backend');
    throw new Error('the request fails');
  });
  t.equal(await outcome(stale), 'CONNECTION_CLOSED', 'the transaction fails as its connection closes');
  const other = pool.begin(async (tx) => {
    await tx`INSERT INTO marks VALUES (2)`;
    // Unpatched, the stale callback's INSERT and then its ROLLBACK run on this transaction.
    resume();
    await sleep(200);
    await tx`INSERT INTO marks VALUES (3)`;
  });
  t.equal(await outcome(other), 'ok', 'the other transaction commits');
  const rows = await db.sql<{ n: number }[]>`SELECT n FROM marks ORDER BY n`;
  t.same(rows.map((r) => r.n), [2, 3], 'with its own rows only');
});

t.test('a query sent between a socket error and the close is answered, not left hanging', async (t) => {
  const { db, pool } = await poolOfOne(t);
  // Whether the query reaches the connection between its socket's error and its close depends
  // on timing: unpatched, a few rounds are enough for one query never to settle.
  const rounds: string[] = [];
  for (let round = 0; round < 6 && !rounds.includes('hung'); round++) {
    const { conn } = await reservedAndKilled(db, pool);
    // Released at once, while the connection still counts as reserved.
    conn.release();
    rounds.push(await within(pool`SELECT 1`, 3000));
  }
  t.notOk(rounds.includes('hung'), `every next query settles (${rounds.join(', ')})`);
  t.equal(await within(pool`SELECT 2`, 5000), 'ok', 'and the pool serves the one after them');
});

t.test('a connection reset while it fetches array types leaves no unhandled rejection behind', async (t) => {
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  const target = new URL(db.url);
  // A proxy that resets the first connection as soon as it asks for the array types, as a
  // database restarting at that moment does, and passes every later one through.
  let resets = 0;
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    const server = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(server);
    client.on('data', (chunk: Buffer) => {
      if (resets === 0 && chunk.includes('typarray')) {
        resets++;
        server.destroy();
        client.resetAndDestroy();
        return;
      }
      server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => client.write(chunk));
    client.on('error', () => server.destroy());
    server.on('error', () => client.destroy());
    client.on('close', () => server.destroy());
    server.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => proxy.close(() => resolve()));
  });
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  t.teardown(() => process.off('unhandledRejection', onUnhandled));

  const via = new URL(db.url);
  via.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
  const pool = createSql(via.toString(), { max: 1, application: 'invoicing-test-types' });
  t.teardown(() => pool.end({ timeout: 1 }));
  const first = await within(pool`SELECT 1`, 5000);
  t.not(first, 'hung', `the query waiting for that connection settles (${first})`);
  t.equal(resets, 1, 'the connection was reset while fetching the array types');
  t.equal(await within(pool`SELECT ${[1, 2]}::int[] AS a`, 5000), 'ok', 'the next connection fetches them again and serves arrays');
  await sleep(50);
  t.same(unhandled.map(String), [], 'no rejection escaped');
});

t.test('statements sent in one tick leave in one socket write, those over 1 KiB too', async (t) => {
  const db = await createTestDatabase();
  t.teardown(() => db.drop());
  const target = new URL(db.url);
  let writes = 0;
  const sql = postgres(db.url, {
    max: 1,
    onnotice: () => {},
    socket: () => {
      const socket = net.connect(Number(target.port || 5432), target.hostname);
      const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
      socket.write = ((...args: unknown[]) => {
        writes += 1;
        return write(...args);
      }) as typeof socket.write;
      return socket;
    },
    // A documented option its types leave out.
  } as postgres.Options<Record<string, never>>);
  t.teardown(() => sql.end({ timeout: 1 }));
  const large = (name: string) => `SELECT '${name.repeat(3000)}' AS v`;
  const sent = await sql.begin(async (tx) => {
    const before = writes;
    // What a request's last statements look like: a stored answer and an event, each over 1 KiB.
    const rows = await Promise.all([tx.unsafe(large('a')), tx.unsafe(large('b')), tx.unsafe('SELECT 1 AS v')]);
    t.same(
      rows.map((r) => String(r[0]!.v).length),
      [3000, 3000, 1],
    );
    return writes - before;
  });
  // Unpatched, each statement of 1 KiB or more is written on its own at once.
  t.equal(sent, 1, 'three statements, one write');
});
