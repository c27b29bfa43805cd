import t from 'tap';
import { testApp } from './helpers/app.js';
import { runCli } from './helpers/cli.js';

/** What a command that succeeds prints; one that fails rejects. */
async function cli(dbUrl: string, ...args: string[]): Promise<any> {
  const { code, out } = await runCli(dbUrl, ...args);
  if (code !== 0) throw new Error(`cli ${args.join(' ')} exited with ${code}: ${JSON.stringify(out)}`);
  return out;
}

t.test('merchants and keys through the CLI; the key works once and only its hash is stored', async (t) => {
  const h = await testApp(t);
  const merchant = await cli(h.dbUrl, 'merchants', 'create', '--name', 'Comercial Andes SpA', '--email', 'f@andes.cl');
  t.match(merchant, { name: 'Comercial Andes SpA', base_currency: 'CLP', payment_provider: null });
  const listed = await cli(h.dbUrl, 'merchants', 'list');
  t.same(listed.map((m: { id: string }) => m.id), [merchant.id]);

  const key = await cli(h.dbUrl, 'keys', 'create', '--merchant', merchant.id, '--scopes', 'clients:read,invoices:read', '--rate-limit', '5');
  t.match(key.key, /^ik_live_[0-9A-Za-z]{32}$/);
  t.equal(key.prefix, key.key.slice(0, 12));
  t.same(key.scopes, ['clients:read', 'invoices:read']);
  const [stored] = await h.sql`SELECT encode(key_hash, 'hex') AS h FROM api_keys WHERE id = ${key.id}`;
  t.not(stored!.h, key.key, 'the key itself is not stored');

  const ok = await h.api('GET', '/clients', { key: key.key });
  t.equal(ok.status, 200);
  t.equal(ok.headers['x-ratelimit-limit'], '5');

  const keys = await cli(h.dbUrl, 'keys', 'list', '--merchant', merchant.id);
  t.equal(keys.length, 1);
  t.notOk('key' in keys[0], 'a listed key never shows the secret');

  const revoked = await cli(h.dbUrl, 'keys', 'revoke', key.id);
  t.ok(revoked.revoked_at);
});

t.test('the CLI refuses bad input with a JSON error and a non-zero exit', async (t) => {
  const h = await testApp(t);
  await t.rejects(cli(h.dbUrl, 'keys', 'create', '--merchant', 'not-a-uuid', '--scopes', '*'));
  const err = await runCli(h.dbUrl, 'keys', 'create', '--merchant', '01a206ed-7a6d-73e1-a5e5-cb81cf0e70a0', '--scopes', 'everything');
  t.equal(err.code, 1);
  t.match(err.out, { error: { code: 'validation_error' } });

  // An allowed range names its network: host bits set are refused by name, with the range meant.
  const merchant = await h.merchant();
  for (const [range, message] of [
    ['10.1.2.3/8', "must be a range's network address (10.0.0.0/8), with no host bits set"],
    ['2001:db8::1/32', "must be a range's network address (2001:db8::/32), with no host bits set"],
    ['10.0.0.0/33', 'must be an IP address or CIDR range'],
    ['intranet', 'must be an IP address or CIDR range'],
  ]) {
    const bad = await runCli(h.dbUrl, 'keys', 'create', '--merchant', merchant.id, '--scopes', '*', '--allow-ip', range!);
    t.equal(bad.code, 1, `${range}: refused`);
    t.match(bad.out, { error: { code: 'validation_error', details: { errors: [{ path: 'allowed_ips[0]', message }] } } }, `${range}: ${message}`);
  }
  const good = await cli(h.dbUrl, 'keys', 'create', '--merchant', merchant.id, '--scopes', '*', '--allow-ip', '10.0.0.0/8');
  t.same(good.allowed_ips, ['10.0.0.0/8'], 'a network range is kept');
});
