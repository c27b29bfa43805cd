import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { createSql } from '../src/db/client.js';
import { API_PREFIX } from '../src/http/urls.js';
import { openBenchDatabase, seedMerchant } from './db.js';
import { startWebProcess } from './server.js';
import { runHttp } from './load.js';
const out = (line = '') => process.stdout.write(`${line}\n`);
const ITEMS = [
  { description: 'Consultoría noviembre', quantity: 2, unit_price: 5000 },
  { description: 'Soporte mensual', quantity: 1, unit_price: 12000 },
  { description: 'Horas adicionales', quantity: 3, unit_price: 2500 },
];
const BODY = { client: { name: 'Comercial Andes SpA', email: 'pagos@andes.cl', rut: '76.086.428-5' }, due_date: '2030-12-31', items: ITEMS };
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

function where(url: string): string {
  if (!url) return '(native/gc)';
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const src = url.indexOf('/src/');
  if (src >= 0) return url.slice(src + 1);
  return url;
}

/** Self time by package/file, top functions by self time, and inclusive time of our functions. */
async function summariseProfile(file: string, label: string): Promise<void> {
  const prof = JSON.parse(await readFile(file, 'utf8')) as { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[] };
  const totalSamples = prof.samples.length;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfCount = new Map<number, number>();
  for (const s of prof.samples) selfCount.set(s, (selfCount.get(s) ?? 0) + 1);

  const byPlace = new Map<string, number>();
  const byFn = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, count] of selfCount) {
    const n = byId.get(id)!;
    const place = n.callFrame.functionName === '(idle)' ? '(idle)' : n.callFrame.functionName === '(garbage collector)' ? '(gc)' : where(n.callFrame.url);
    byPlace.set(place, (byPlace.get(place) ?? 0) + count);
    const fn = `${n.callFrame.functionName || '(anonymous)'} ${where(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + count);
    // Inclusive: every distinct src/ function on the stack gets the sample.
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const f = byId.get(cur)!.callFrame;
      const w = where(f.url);
      const key = w.startsWith('src/') ? `${f.functionName || '(anonymous)'} ${w}` : w.startsWith('node_modules') ? '' : '';
      if (key && !seen.has(key)) {
        seen.add(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + count);
      }
    }
  }
  const idle = byPlace.get('(idle)') ?? 0;
  const busy = totalSamples - idle;
  const pct = (n: number) => `${((n / busy) * 100).toFixed(1)}%`;
  const wallS = (prof.endTime - prof.startTime) / 1e6;
  out(`\n#### CPU profile of the web process: ${label}`);
  out(`${totalSamples} samples over ${wallS.toFixed(1)} s; ${((busy / totalSamples) * 100).toFixed(0)}% of samples on-CPU (percentages below are of on-CPU samples)\n`);
  out('Self time by package / file:\n');
  for (const [k, v] of [...byPlace].filter(([k]) => k !== '(idle)').sort((a, b) => b[1] - a[1]).slice(0, 16)) out(`- ${k}: ${pct(v)}`);
  out('\nTop functions by self time:\n');
  for (const [k, v] of [...byFn].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, 20)) out(`- ${k}: ${pct(v)}`);
  out('\nInclusive (synchronous) time of src/ functions:\n');
  for (const [k, v] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, 20)) out(`- ${k}: ${pct(v)}`);
}


const db = await openBenchDatabase(() => {});
const sql = createSql(db.url, { max: 2 });
const profileFile = '/tmp/adhoc/web.cpuprofile';
let keyN = 0;
const web = await startWebProcess({ cwd: process.cwd(), databaseUrl: db.url, poolSize: 10, nodeArgs: ['--import', './bench/cpu-profile-hook.ts'], env: { BENCH_CPU_PROFILE: profileFile } });
try {
  const seed = await seedMerchant(sql);
  const keyHeaders = { 'x-api-key': seed.apiKey };
  const created = await fetch(`${web.baseUrl}${API_PREFIX}/invoices`, { method: 'POST', headers: { ...keyHeaders, 'content-type': 'application/json' }, body: JSON.stringify(BODY) });
  const invoiceId = ((await created.json()) as { invoice_id: string }).invoice_id;
  for (const method of (process.env.METHODS ?? 'GET,POST').split(',') as ('GET' | 'POST')[]) {
    const load = (seconds: number) => runHttp({
      url: web.baseUrl, method, connections: 32, seconds,
      path: method === 'GET' ? `${API_PREFIX}/invoices/${invoiceId}` : `${API_PREFIX}/invoices`,
      headers: method === 'GET' ? keyHeaders : { ...keyHeaders, 'content-type': 'application/json' },
      ...(method === 'POST' ? { body: JSON.stringify(BODY), perRequestHeaders: () => ({ 'idempotency-key': `c-${++keyN}` }) } : {}),
    });
    await load(2);
    await rm(profileFile, { force: true });
    process.kill(web.pid, 'SIGUSR2');
    await new Promise((r) => setTimeout(r, 200));
    const m = await load(Number(process.env.S ?? 5));
    process.kill(web.pid, 'SIGUSR2');
    for (let i = 0; i < 50 && !existsSync(profileFile); i++) await new Promise((r) => setTimeout(r, 100));
    await summariseProfile(profileFile, `${method} ${m.rps.toFixed(0)} req/s p50 ${m.p50.toFixed(1)}`);
  }
} finally {
  await web.stop();
  await sql.end();
  await db.cleanup();
}
