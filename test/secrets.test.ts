// docs/decisions.md §10: webhook secrets are `whsec_` + 32 random bytes, sealed with AES-256-GCM under
// ENCRYPTION_KEY, which the embedded mode generates once into $DATA_DIR.
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { ConfigError, loadConfig } from '../src/config.js';
import { generateSecret, secretPrefix } from '../src/webhooks/secrets.js';
import { loadSecretBox, SecretBox } from '../src/secret-box.js';

t.test('secrets look like Stripe’s and are all different', async (t) => {
  const seen = new Set<string>();
  for (let i = 0; i < 100; i++) {
    const s = generateSecret();
    t.match(s, /^whsec_[A-Za-z0-9_-]{43}$/);
    seen.add(s);
  }
  t.equal(seen.size, 100);
  t.equal(secretPrefix('whsec_abcdefghijkl'), 'whsec_abcdef');
});

t.test('sealed secrets open with the same key only, and tampering is detected', async (t) => {
  const box = new SecretBox(Buffer.alloc(32, 7));
  const secret = generateSecret();
  const sealed = box.seal(secret);
  t.notOk(sealed.includes(Buffer.from(secret)), 'the plain secret is not in the sealed bytes');
  t.not(box.seal(secret).toString('hex'), sealed.toString('hex'), 'a fresh IV every time');
  t.equal(box.open(sealed), secret);
  t.throws(() => new SecretBox(Buffer.alloc(32, 8)).open(sealed), 'another key cannot open it');
  const tampered = Buffer.from(sealed);
  tampered[tampered.length - 1]! ^= 1;
  t.throws(() => box.open(tampered), 'a changed byte is refused');
  t.throws(() => new SecretBox(Buffer.alloc(16)), 'the key must be 32 bytes');
});

t.test('embedded mode generates the key once into DATA_DIR and keeps it', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'secrets-'));
  const config = loadConfig({ DATA_DIR: dir });
  const sealed = loadSecretBox(config).seal('whsec_kept');
  const file = path.join(dir, 'encryption.key');
  t.match(readFileSync(file, 'utf8'), /^[0-9a-f]{64}$/);
  t.equal(statSync(file).mode & 0o777, 0o600, 'readable by its owner only');
  t.equal(loadSecretBox(config).open(sealed), 'whsec_kept', 'a restart opens what was sealed before');
});

t.test('ENCRYPTION_KEY: hex or base64 of 32 bytes; required with DATABASE_URL', async (t) => {
  const hex = 'ab'.repeat(32);
  const fromHex = loadSecretBox(loadConfig({ DATABASE_URL: 'postgres://x/y', ENCRYPTION_KEY: hex }));
  const fromB64 = loadSecretBox(loadConfig({ DATABASE_URL: 'postgres://x/y', ENCRYPTION_KEY: Buffer.from(hex, 'hex').toString('base64') }));
  t.equal(fromB64.open(fromHex.seal('whsec_same')), 'whsec_same', 'both spellings are one key');
  t.throws(() => loadConfig({ ENCRYPTION_KEY: 'too-short' }), ConfigError);
  t.throws(() => loadSecretBox(loadConfig({ DATABASE_URL: 'postgres://x/y' })), /ENCRYPTION_KEY: required when DATABASE_URL is set/);
});
