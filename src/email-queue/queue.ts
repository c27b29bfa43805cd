import type { PgBoss } from 'pg-boss';
import type { Queryable } from '../db/client.js';
import { clock } from '../clock.js';
import { newId } from '../ids.js';
import { enqueue, queues } from '../queue/boss.js';
import { insertEmail, type NewEmail } from './queries.js';

export type QueuedEmail = Omit<NewEmail, 'id' | 'created_at'>;

/**
 * Records the message and enqueues its delivery in the caller's transaction. The dedupe key names
 * the cause (`invoice:<id>`, `reminder:<id>:<n>`), so asking twice for one cause sends once.
 */
export async function queueEmail(db: Queryable, boss: PgBoss, email: QueuedEmail): Promise<string | null> {
  const row = await insertEmail(db, { ...email, id: newId(), created_at: clock.now() });
  if (!row) return null;
  await enqueue(boss, db, queues.emailSend.name, { email_id: row.id }, { singletonKey: row.id, group: { id: email.merchant_id } });
  return row.id;
}
