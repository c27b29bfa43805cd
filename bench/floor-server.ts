/**
 * The HTTP floor of `npm run bench`: a bare Fastify process whose two routes run the ceiling's
 * database work (bench/ceiling.ts) and answer with it, and nothing else: no key, rate limit,
 * validation, idempotency, event or resource shaping. What it reaches is what any API built on
 * Fastify and postgres.js reaches on the machine, so the API's ratio is read against it.
 *
 * Started by bench/run.ts (startWebProcess, `node --import tsx`); environment: DATABASE_URL,
 * DATABASE_POOL_SIZE, PORT, HOST, CEILING_TARGET (a JSON CeilingTarget).
 */
import Fastify from 'fastify';
import { createSql } from '../src/db/client.js';
import { createDraft, readInvoice, type CeilingTarget } from './ceiling.js';

const sql = createSql(process.env.DATABASE_URL!, { max: Number(process.env.DATABASE_POOL_SIZE), application: 'invoicing-bench-floor' });
const target = JSON.parse(process.env.CEILING_TARGET!) as CeilingTarget;
const app = Fastify({ logger: false });

app.get('/readyz', async () => ({ status: 'ready' }));
app.get('/invoice', async (_request, reply) => reply.type('application/json').send(JSON.stringify(await readInvoice(sql, target))));
// The body is parsed, as any API must, and not used: the ceiling's invoice is fixed.
app.post('/invoices', async (_request, reply) => reply.code(201).send({ id: await createDraft(sql, target) }));

process.once('SIGTERM', () => void app.close().then(() => sql.end({ timeout: 5 })).then(() => process.exit(0)));
await app.listen({ port: Number(process.env.PORT), host: process.env.HOST });
