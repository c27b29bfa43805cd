// app.json (Heroku's manifest) against what it deploys: the Procfile's processes, the README's
// configuration table and the configuration the processes accept at start-up.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { loadConfig } from '../src/config.js';
import { loadSecretBox } from '../src/secret-box.js';

interface EnvEntry {
  description?: string;
  value?: string;
  generator?: 'secret';
  required?: boolean;
}
const manifest = JSON.parse(readFileSync('app.json', 'utf8')) as {
  addons: ({ plan: string; as?: string } | string)[];
  formation: Record<string, { quantity: number }>;
  env: Record<string, EnvEntry>;
};
const procfile = new Map(
  readFileSync('Procfile', 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()] as const),
);
const readmeVariables = new Set([...readFileSync('README.md', 'utf8').matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((m) => m[1]!));

/** The environment Heroku builds from app.json: values as given, secrets as its generator makes them (64 hex characters). */
function herokuEnv(): Record<string, string> {
  const env: Record<string, string> = { DATABASE_URL: 'postgres://u:p@db.example.com:5432/d', PORT: '41234' };
  for (const [name, entry] of Object.entries(manifest.env)) {
    if (entry.generator === 'secret') env[name] = randomBytes(32).toString('hex');
    else if (entry.value !== undefined) env[name] = entry.value;
  }
  env.PUBLIC_BASE_URL = 'https://invoicing-example.herokuapp.com';
  env.SMTP_URL = 'smtps://user:pass@smtp.example.com:465';
  env.EMAIL_FROM = 'Facturas <facturas@example.cl>';
  return env;
}

t.test('the formation runs the Procfile: web and worker, with the release phase migrating', async (t) => {
  t.same(Object.keys(manifest.formation).sort(), ['web', 'worker']);
  for (const [process, { quantity }] of Object.entries(manifest.formation)) {
    t.ok(procfile.has(process), `${process} is a Procfile process`);
    t.ok(quantity >= 1, `${process} runs`);
  }
  t.match(procfile.get('release'), /dist\/src\/cli\.js migrate$/, 'the release phase migrates before the new code serves');
});

t.test('the Postgres add-on provides DATABASE_URL', async (t) => {
  const postgres = manifest.addons.find((a) => (typeof a === 'string' ? a : a.plan).startsWith('heroku-postgresql'));
  t.ok(postgres, 'heroku-postgresql is an add-on');
  t.equal(typeof postgres === 'string' ? 'DATABASE' : (postgres?.as ?? 'DATABASE'), 'DATABASE');
});

t.test('every variable of app.json is in the README configuration table, described', async (t) => {
  for (const [name, entry] of Object.entries(manifest.env)) {
    t.ok(readmeVariables.has(name), `${name} is in the README's configuration table`);
    t.ok(entry.description && entry.description.length > 10, `${name} says what it is`);
  }
});

t.test('the secrets are generated, and what Heroku generates is accepted', async (t) => {
  t.equal(manifest.env.ENCRYPTION_KEY?.generator, 'secret');
  t.equal(manifest.env.ADMIN_TOKEN?.generator, 'secret');
  const env = herokuEnv();
  const config = loadConfig(env);
  t.equal(config.NODE_ENV, 'production');
  t.equal(config.TRUST_PROXY, 1, "one hop: Heroku's router");
  t.ok(config.ADMIN_TOKEN, 'the admin console is on');
  t.doesNotThrow(() => loadSecretBox(config), 'the generated ENCRYPTION_KEY seals secrets');
  const { ENCRYPTION_KEY: _dropped, ...withoutKey } = env;
  t.throws(() => loadSecretBox(loadConfig(withoutKey)), /ENCRYPTION_KEY: required/, 'and a deploy without it would not start');
});

t.test('what a deploy must be told is marked required', async (t) => {
  for (const name of ['PUBLIC_BASE_URL', 'SMTP_URL', 'EMAIL_FROM']) t.equal(manifest.env[name]?.required, true, name);
  for (const [name, entry] of Object.entries(manifest.env)) {
    if (entry.required) t.notOk(entry.value ?? entry.generator, `${name}: required means asked, not preset`);
  }
});
