// docs/decisions.md §19, the admin token cannot be guessed at speed: after 10 refused tokens (wrong or
// missing) from one address within a sliding minute, that address gets 429 for the next minute,
// the right token too; other addresses are not affected; each lock is logged once at warn.
import t from 'tap';
import { testApp } from './helpers/app.js';
import { loggedApp } from './helpers/logged-app.js';
import { clock } from '../src/clock.js';

const TOKEN = 'adm_test_0123456789abcdefghijklmnopqrstuvwxyz';
const ADMIN_ENV = { ADMIN_TOKEN: TOKEN };
const GUESSER = '203.0.113.7';
const OTHER = '198.51.100.20';

t.test('admin token throttle', async (t) => {
  t.teardown(() => clock.reset());
  const h = await testApp(t, ADMIN_ENV);
  const { app, logs } = await loggedApp(h, ADMIN_ENV);
  t.teardown(() => app.close());

  const call = async (remoteAddress: string, authorization: string | null) => {
    const res = await app.inject({
      method: 'GET',
      url: '/admin/trpc/merchants.list',
      remoteAddress,
      headers: authorization === null ? {} : { authorization },
    });
    return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body) };
  };
  const lockLines = () =>
    logs
      .lines()
      .map((l) => JSON.parse(l))
      .filter((l) => l.level === 40 && /admin token refused/.test(l.msg));

  t.equal((await call(GUESSER, `Bearer ${TOKEN}`)).status, 200, 'the right token works at first');

  for (let i = 1; i <= 10; i++) {
    const res = await call(GUESSER, i % 3 === 0 ? null : `Bearer wrong-${i}`);
    t.equal(res.status, 401, `refusal ${i} is 401`);
    t.ok(['invalid_api_key', 'missing_api_key'].includes(res.body.error.data.appCode), `refusal ${i}'s code`);
  }

  const locked = await call(GUESSER, `Bearer ${TOKEN}`);
  t.equal(locked.status, 429, 'the 11th, even with the right token, is 429');
  t.equal(locked.body.error.data.code, 'TOO_MANY_REQUESTS');
  t.equal(locked.body.error.data.appCode, 'rate_limited');
  const m = /^after_seconds:(\d+)$/.exec(locked.body.error.data.retry);
  t.ok(m, `retry is after_seconds:N (${locked.body.error.data.retry})`);
  t.equal(locked.headers['retry-after'], m?.[1], 'Retry-After is N');
  t.ok(Number(m?.[1]) >= 55 && Number(m?.[1]) <= 60, `the lock lasts a minute (${m?.[1]})`);
  t.equal((await call(GUESSER, 'Bearer wrong-again')).status, 429, 'a wrong token while locked: 429 too');

  const other = await call(OTHER, `Bearer ${TOKEN}`);
  t.equal(other.status, 200, 'another address is not affected');
  t.equal((await call(OTHER, 'Bearer wrong')).status, 401, 'another address still gets its 401');

  clock.advance(30_000);
  t.equal((await call(GUESSER, `Bearer ${TOKEN}`)).status, 429, 'still locked half a minute on');
  clock.advance(31_000);
  t.equal((await call(GUESSER, `Bearer ${TOKEN}`)).status, 200, 'after a minute the right token works again');
  t.equal((await call(GUESSER, 'Bearer wrong')).status, 401, 'and a wrong one is a 401 again, its count begun afresh');

  const lines = lockLines();
  t.equal(lines.length, 1, 'the lock is logged once');
  t.match(lines[0], { level: 40, address: GUESSER }, 'at warn, with the address');
  t.notOk(logs.readable().includes(TOKEN), 'the token is never logged');

  t.test('a sliding minute: refusals spread over more than a minute do not lock', async (t) => {
    const spread = '192.0.2.55';
    for (let i = 1; i <= 9; i++) t.equal((await call(spread, 'Bearer nope')).status, 401);
    clock.advance(61_000);
    for (let i = 1; i <= 9; i++) t.equal((await call(spread, 'Bearer nope')).status, 401, `late refusal ${i}`);
    t.equal((await call(spread, `Bearer ${TOKEN}`)).status, 200, 'not locked');
    t.equal((await call(spread, 'Bearer nope')).status, 401, 'the 10th within the minute: 401');
    t.equal((await call(spread, `Bearer ${TOKEN}`)).status, 429, 'then locked');
    t.equal(lockLines().filter((l) => l.address === spread).length, 1, 'logged once');
  });

  t.test('a batch of calls with one wrong token is one refusal, not one per call', async (t) => {
    const batcher = '192.0.2.77';
    const batch = (authorization: string) =>
      app.inject({ method: 'GET', url: `/admin/trpc/${Array(10).fill('merchants.list').join(',')}?batch=1`, remoteAddress: batcher, headers: { authorization } });
    for (let i = 1; i <= 9; i++) {
      const res = await batch('Bearer wrong');
      t.equal(res.statusCode, 401, `batch ${i} of ten calls: 401`);
      t.equal(JSON.parse(res.body).length, 10, 'each call answered');
    }
    t.equal((await call(batcher, `Bearer ${TOKEN}`)).status, 200, 'nine refused tokens, ninety calls: not locked');
    t.equal((await batch('Bearer wrong')).statusCode, 401, 'the 10th refused token');
    t.equal((await call(batcher, `Bearer ${TOKEN}`)).status, 429, 'then locked');
  });
});
