import t from 'tap';
import { loadConfig } from '../src/config.js';

t.test('defaults', async (t) => {
  const c = loadConfig({});
  t.equal(c.PORT, 3000);
  t.equal(c.publicBaseUrl, 'http://localhost:3000');
  t.equal(c.RATE_LIMIT_PER_MINUTE, 600);
  t.equal(c.DATABASE_URL, undefined);
  t.equal(c.TRUST_PROXY, 0);
});

t.test('a bad value stops start-up with a message naming every bad variable', async (t) => {
  t.throws(() => loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', SMTP_URL: 'http://mail' }), { name: 'ConfigError' });
  try {
    loadConfig({ PORT: 'eighty', DATABASE_URL: 'mysql://x', SMTP_URL: 'http://mail' });
  } catch (err) {
    t.match((err as Error).message, /PORT/);
    t.match((err as Error).message, /DATABASE_URL/);
    t.match((err as Error).message, /SMTP_URL/);
  }
});

t.test('PUBLIC_BASE_URL loses its trailing slash; empty values count as unset', async (t) => {
  const c = loadConfig({ PUBLIC_BASE_URL: 'https://api.example.cl/', DATABASE_URL: '', TRUST_PROXY: 'true' });
  t.equal(c.publicBaseUrl, 'https://api.example.cl');
  t.equal(c.DATABASE_URL, undefined);
  t.equal(c.TRUST_PROXY, 1, 'true is one hop');
});

t.test('TRUST_PROXY is a number of proxy hops', async (t) => {
  t.equal(loadConfig({ TRUST_PROXY: 'false' }).TRUST_PROXY, 0);
  t.equal(loadConfig({ TRUST_PROXY: '0' }).TRUST_PROXY, 0);
  t.equal(loadConfig({ TRUST_PROXY: '1' }).TRUST_PROXY, 1);
  t.equal(loadConfig({ TRUST_PROXY: '2' }).TRUST_PROXY, 2);
  t.throws(() => loadConfig({ TRUST_PROXY: 'maybe' }), { name: 'ConfigError' });
  t.throws(() => loadConfig({ TRUST_PROXY: '-1' }), { name: 'ConfigError' });
  t.equal(loadConfig({}).API_CONCURRENCY_PER_KEY, 10);
});
