import autocannon from 'autocannon';

export interface Measurement {
  /** Successful (2xx / resolved) operations per second over the measured window. */
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  /** Non-2xx answers (HTTP) or rejected operations (ceiling). */
  failed: number;
  /** Transport errors and timeouts (HTTP only). */
  errors: number;
  seconds: number;
  statusCodes: Record<string, number>;
  firstError?: string;
}

/** Latencies in ms, kept exactly; percentiles by nearest rank. */
export class Latencies {
  private data = new Float64Array(1 << 16);
  private n = 0;

  add(ms: number): void {
    if (this.n === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.n++] = ms;
  }

  get count(): number {
    return this.n;
  }

  percentiles(...ps: number[]): number[] {
    if (this.n === 0) return ps.map(() => NaN);
    const sorted = this.data.slice(0, this.n).sort();
    return ps.map((p) => sorted[Math.min(this.n - 1, Math.max(0, Math.ceil((p / 100) * this.n) - 1))]!);
  }
}

export interface HttpLoad {
  url: string;
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
  /** Called per request: another path (a random invoice id) and/or extra headers (a unique Idempotency-Key). */
  vary?: () => { path?: string; headers?: Record<string, string> };
  /** Seconds before a request counts as timed out (default 10). */
  timeout?: number;
  connections: number;
  seconds: number;
}

/** One autocannon run; latencies are taken from every response (float ms), not autocannon's integer histogram. */
export async function runHttp(load: HttpLoad): Promise<Measurement> {
  const latencies = new Latencies();
  const statusCodes: Record<string, number> = {};
  let ok = 0;
  let failed = 0;
  const request: autocannon.Request = {
    method: load.method,
    path: load.path,
    headers: load.headers,
    ...(load.body !== undefined ? { body: load.body } : {}),
    ...(load.vary
      ? {
          setupRequest: (req: autocannon.Request) => {
            const v = load.vary!();
            return { ...req, path: v.path ?? req.path, headers: { ...req.headers, ...v.headers } };
          },
        }
      : {}),
  };
  const started = process.hrtime.bigint();
  const instance = autocannon({
    url: load.url,
    connections: load.connections,
    duration: load.seconds,
    pipelining: 1,
    timeout: load.timeout ?? 10,
    requests: [request],
  });
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
    if (statusCode >= 200 && statusCode < 300) {
      ok++;
      latencies.add(responseTime);
    } else failed++;
  });
  let firstError: string | undefined;
  instance.on('reqError', (err: Error) => {
    firstError ??= err.message;
  });
  const result = await instance;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const [p50, p99] = latencies.percentiles(50, 99);
  return {
    rps: ok / (result.duration || seconds),
    p50: p50!,
    p99: p99!,
    ok,
    failed,
    errors: result.errors + result.timeouts,
    seconds: result.duration || seconds,
    statusCodes,
    firstError,
  };
}

/**
 * `concurrency` loops, each running `op` back to back until `seconds` have passed: the same
 * offered load as autocannon's connections, without HTTP.
 */
export async function runLoops(op: () => Promise<unknown>, concurrency: number, seconds: number): Promise<Measurement> {
  const latencies = new Latencies();
  let ok = 0;
  let failed = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  const loop = async () => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        await op();
        latencies.add(performance.now() - t0);
        ok++;
      } catch (err) {
        failed++;
        firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsed = (performance.now() - started) / 1000;
  const [p50, p99] = latencies.percentiles(50, 99);
  return { rps: ok / elapsed, p50: p50!, p99: p99!, ok, failed, errors: 0, seconds: elapsed, statusCodes: {}, firstError };
}
