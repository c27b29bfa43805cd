import { readFileSync, readdirSync } from 'node:fs';

const HZ = 100;

function ticks(pid: number | string): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/**
 * CPU seconds so far (Linux /proc; zeros elsewhere): the whole machine, this process (load
 * generator / driver), the web process, and the postgres backends serving the bench database
 * (their process title names it).
 */
export function cpuSnapshot(dbName: string, webPid?: number) {
  let busy = 0;
  let pg = 0;
  try {
    const stat = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    busy = (stat.reduce((a, b) => a + b, 0) - (stat[3] ?? 0) - (stat[4] ?? 0)) / HZ;
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        if (cmdline.startsWith('postgres: ') && cmdline.includes(` ${dbName} `)) pg += ticks(pid);
      } catch {
        /* gone */
      }
    }
  } catch {
    /* not Linux */
  }
  const self = process.cpuUsage();
  return { busy, self: (self.user + self.system) / 1e6, web: webPid ? ticks(webPid) / HZ : 0, pg: pg / HZ, at: performance.now() };
}

export type CpuSnapshot = ReturnType<typeof cpuSnapshot>;

/** CPU seconds each side used between two snapshots, and what everything else on the machine used. */
export function cpuBetween(a: CpuSnapshot, b: CpuSnapshot) {
  const self = b.self - a.self;
  const web = b.web - a.web;
  const pg = b.pg - a.pg;
  return { seconds: (b.at - a.at) / 1000, self, web, pg, others: Math.max(0, b.busy - a.busy - self - web - pg) };
}
