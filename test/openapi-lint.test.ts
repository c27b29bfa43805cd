// The served OpenAPI document passes Redocly's strictest built-in ruleset: what integrators' own
// linters and gateways would report is reported here first.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { testApp } from './helpers/app.js';

const run = promisify(execFile);
const REDOCLY = path.resolve('node_modules/@redocly/cli/bin/cli.js');

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; severity: string; message: string; location: { pointer?: string }[] }[];
}

t.test('redocly lint --extends=recommended-strict finds nothing in the served document', async (t) => {
  const h = await testApp(t);
  const res = await h.api('GET', '/docs/openapi.json');
  t.equal(res.status, 200);

  const dir = await mkdtemp(path.join(tmpdir(), 'openapi-lint-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'openapi.json');
  await writeFile(file, res.raw);
  // Run in the temporary folder, so that no redocly.yaml or ignore file anywhere else counts;
  // with the Node of this process (the CLI's own shebang would take whatever node is on PATH).
  const { stdout } = await run(process.execPath, [REDOCLY, 'lint', file, '--extends=recommended-strict', '--format=json', '--max-problems=1000'], {
    cwd: dir,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    maxBuffer: 64 * 1024 * 1024,
  }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));

  const report = JSON.parse(stdout) as LintReport;
  const found = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`);
  t.same(found, [], 'no problem');
  t.same(report.totals, { errors: 0, warnings: 0, ignored: 0 }, 'no error, warning or ignored problem');
});
