// postgres.js moves each connection between its pool's queues on every query. Unpatched, a pool
// that is never wholly busy grows its idle queue by one slot per query and scans all of them on
// the next, so a quietly busy process gets slower query by query (src/db/patch-postgres.mjs).
import t from 'tap';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createTestDatabase } from './helpers/db.js';

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
