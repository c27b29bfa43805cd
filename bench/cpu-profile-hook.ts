/**
 * Preloaded into the web process by bench/profile.ts, and into the worker by bench/effects.ts with
 * EFFECTS_WORKER_CPU_PROFILE (`--import ./bench/cpu-profile-hook.ts`):
 * SIGUSR2 starts the V8 CPU profiler, the next SIGUSR2 writes the profile to
 * $BENCH_CPU_PROFILE and stops it, so the profile covers steady load only, not start-up.
 */
import { Session } from 'node:inspector';
import { writeFileSync } from 'node:fs';

const file = process.env.BENCH_CPU_PROFILE;
if (file) {
  const session = new Session();
  session.connect();
  let running = false;
  process.on('SIGUSR2', () => {
    if (!running) {
      running = true;
      session.post('Profiler.setSamplingInterval', { interval: 200 }, () =>
        session.post('Profiler.enable', () => session.post('Profiler.start', () => process.stderr.write('cpu profile started\n'))),
      );
      return;
    }
    running = false;
    session.post('Profiler.stop', (err, res) => {
      if (!err) writeFileSync(file, JSON.stringify(res.profile));
      process.stderr.write(err ? `cpu profile failed: ${err.message}\n` : 'cpu profile written\n');
    });
  });
}
