import type { Config } from '../config.js';
import type { Sql } from '../db/client.js';
import type { ApiKeyStore } from './auth.js';
import type { PgBoss } from 'pg-boss';
import type { SecretBox } from '../secret-box.js';

/** What every layer is handed: configuration and the database; nothing global. */
export interface AppContext {
  config: Config;
  sql: Sql;
  keys: ApiKeyStore;
  /** Sends jobs (inside request transactions); workers run elsewhere. */
  boss: PgBoss;
  /** Seals and opens webhook signing secrets. */
  secrets: SecretBox;
}
