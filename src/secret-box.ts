import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, decodeKey, type Config } from './config.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** AES-256-GCM: a stolen database dump holds no usable signing secret. */
export class SecretBox {
  // A key object made once: given the raw bytes, every cipher would import the key again, and the
  // worker opens an endpoint's secret for each webhook attempt.
  readonly #key: KeyObject;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the encryption key must be 32 bytes');
    this.#key = createSecretKey(key);
  }

  seal(plain: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]);
  }

  open(sealed: Uint8Array): string {
    const buf = Buffer.from(sealed);
    const decipher = createDecipheriv('aes-256-gcm', this.#key, buf.subarray(0, IV_BYTES));
    decipher.setAuthTag(buf.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(buf.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  }
}

/**
 * ENCRYPTION_KEY when set. On the embedded database (no DATABASE_URL) a key is generated once
 * into $DATA_DIR beside the data it protects. With an external database a key that changed
 * between restarts would make every stored secret unreadable, so it must be given.
 */
export function loadSecretBox(config: Config): SecretBox {
  if (config.ENCRYPTION_KEY) return new SecretBox(decodeKey(config.ENCRYPTION_KEY)!);
  if (config.DATABASE_URL) {
    throw new ConfigError('Invalid configuration:\n  ENCRYPTION_KEY: required when DATABASE_URL is set (32 bytes as 64 hex characters; e.g. `openssl rand -hex 32`)');
  }
  mkdirSync(config.DATA_DIR, { recursive: true });
  const file = join(config.DATA_DIR, 'encryption.key');
  // Written aside then linked into place: two processes starting together create it once, and
  // neither can read a half-written file; the loser of the link reads the winner's key.
  if (!existsSync(file)) {
    const draft = `${file}.${process.pid}.tmp`;
    writeFileSync(draft, randomBytes(32).toString('hex'), { mode: 0o600 });
    try {
      linkSync(draft, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      unlinkSync(draft);
    }
  }
  const key = decodeKey(readFileSync(file, 'utf8').trim());
  if (!key) throw new ConfigError(`Invalid configuration:\n  ${file}: not a 32-byte key`);
  return new SecretBox(key);
}
