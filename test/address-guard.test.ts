// SSRF guard for webhook deliveries: the address table, the creation-time URL check, and a real
// https.request through the guarded lookup against a local TLS server.
import t from 'tap';
import https from 'node:https';
import type { AddressInfo, LookupFunction } from 'node:net';
import {
  assertConnectTarget,
  checkWebhookUrl,
  forbiddenAddressReason,
  guardedLookup,
} from '../src/webhooks/address-guard.js';
import { selfSignedCertificate } from './helpers/self-signed.js';

const table: Array<[string, string | null]> = [
  // IPv4, with both sides of each boundary.
  ['8.8.8.8', null],
  ['1.1.1.1', null],
  ['0.0.0.0', 'unspecified'],
  ['0.255.255.255', 'unspecified'],
  ['1.0.0.0', null],
  ['9.255.255.255', null],
  ['10.0.0.0', 'private'],
  ['10.255.255.255', 'private'],
  ['11.0.0.0', null],
  ['100.63.255.255', null],
  ['100.64.0.0', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  ['100.128.0.0', null],
  ['126.255.255.255', null],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.255', 'loopback'],
  ['128.0.0.0', null],
  ['169.253.255.255', null],
  ['169.254.0.0', 'link-local'],
  ['169.254.169.254', 'metadata'],
  ['169.254.169.253', 'link-local'],
  ['169.254.255.255', 'link-local'],
  ['169.255.0.0', null],
  ['168.63.129.16', 'metadata'],
  ['172.15.255.255', null],
  ['172.16.0.0', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.0', null],
  ['191.255.255.255', null],
  ['192.0.0.0', 'reserved'],
  ['192.0.0.255', 'reserved'],
  ['192.0.1.0', null],
  ['192.0.2.1', 'reserved'],
  ['192.0.3.0', null],
  ['192.167.255.255', null],
  ['192.168.0.0', 'private'],
  ['192.168.255.255', 'private'],
  ['192.169.0.0', null],
  ['198.17.255.255', null],
  ['198.18.0.0', 'reserved'],
  ['198.19.255.255', 'reserved'],
  ['198.20.0.0', null],
  ['198.51.99.255', null],
  ['198.51.100.7', 'reserved'],
  ['198.51.101.0', null],
  ['203.0.112.255', null],
  ['203.0.113.9', 'reserved'],
  ['203.0.114.0', null],
  ['223.255.255.255', null],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.255', 'multicast'],
  ['240.0.0.0', 'reserved'],
  ['255.255.255.254', 'reserved'],
  ['255.255.255.255', 'broadcast'],

  // IPv6.
  ['2606:4700:4700::1111', null],
  ['2001:4860:4860::8888', null],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['fbff:ffff::1', 'reserved'],
  ['fc00::', 'private'],
  ['fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'private'],
  ['fd00:ec2::254', 'metadata'],
  ['fe80::1', 'link-local'],
  ['FE80::1', 'link-local'],
  ['febf:ffff::1', 'link-local'],
  ['fe80::1%eth0', 'link-local'],
  ['fec0::1', 'site-local'],
  ['ff02::1', 'multicast'],
  ['2001:db8::1', 'reserved'],
  ['2001:db9::1', null],
  ['3fff::1', 'reserved'],
  ['100::1', 'reserved'],
  ['100::ffff:ffff:ffff:ffff', 'reserved'],
  ['1::', 'reserved'],

  // IPv6 forms that embed an IPv4 address are judged by that address.
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::FFFF:7F00:1', 'loopback'],
  ['0:0:0:0:0:ffff:a9fe:a9fe', 'metadata'],
  ['::ffff:10.0.0.1', 'private'],
  ['::ffff:8.8.8.8', null],
  ['::ffff:0:127.0.0.1', 'loopback'], // IPv4-translated
  ['::127.0.0.1', 'loopback'], // IPv4-compatible
  ['::a00:1', 'private'],
  ['::8.8.8.8', null],
  ['64:ff9b::127.0.0.1', 'loopback'], // NAT64
  ['64:ff9b::a9fe:a9fe', 'metadata'],
  ['64:ff9b::808:808', null],
  ['2002:7f00:1::1', 'loopback'], // 6to4
  ['2002:c0a8:101::1', 'private'],
  ['2002:808:808::1', null],
  ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'], // Teredo, client 127.0.0.1 inverted
  ['2001::f5ff:fffe', 'private'],
  ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', null],

  ['localhost', 'invalid'],
  ['1.2.3.04', 'invalid'],
];

t.test('forbiddenAddressReason: the range table', async (t) => {
  for (const [address, reason] of table) t.equal(forbiddenAddressReason(address), reason, address);
});

t.test('checkWebhookUrl', async (t) => {
  const refused = async (url: string, pattern: RegExp, allowPrivate = false) => {
    const result = await checkWebhookUrl(url, { allowPrivate });
    t.match(result, { ok: false, reason: pattern }, url);
  };
  await refused('not a url', /not valid/);
  await refused('http://example.com/hook', /https/);
  await refused('http://127.0.0.1/hook', /https/, true);
  await refused('https://user:pass@example.com/hook', /credentials/);
  await refused('https://user@example.com/hook', /credentials/, true);
  await refused('https://127.0.0.1/hook', /127\.0\.0\.1.*loopback/);
  await refused('https://[::ffff:127.0.0.1]/hook', /::ffff:7f00:1.*loopback/);
  await refused('https://[fd00:ec2::254]/', /metadata/);
  // URL() normalises the hex/short IPv4 spellings before the check sees them.
  await refused('https://0x7f.1/hook', /127\.0\.0\.1.*loopback/);
  await refused('https://2852039166/', /169\.254\.169\.254.*metadata/);
  await refused('https://localhost:8443/hook', /localhost resolves to 127\.0\.0\.1.*loopback/);
  await refused('https://example.invalid/hook', /example\.invalid does not resolve \(ENOTFOUND\)/);

  const pub = await checkWebhookUrl('https://8.8.8.8/hook', { allowPrivate: false });
  t.ok(pub.ok && pub.url.href === 'https://8.8.8.8/hook', 'public literal accepted');
  const v6 = await checkWebhookUrl('https://[2606:4700:4700::1111]/', { allowPrivate: false });
  t.ok(v6.ok, 'public IPv6 literal accepted');

  for (const url of ['https://localhost:8443/hook', 'https://127.0.0.1/hook', 'https://example.invalid/']) {
    const r = await checkWebhookUrl(url, { allowPrivate: true });
    t.ok(r.ok && r.url.href === new URL(url).href, `allowPrivate accepts ${url}`);
  }
});

function lookupOnce(lookup: LookupFunction, host: string, all: boolean) {
  return new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family: unknown }>((resolve) =>
    lookup(host, { all }, (err, address, family) => resolve({ err, address, family })),
  );
}

t.test('guardedLookup answers both callback shapes', async (t) => {
  const strict = guardedLookup(false);
  t.same(await lookupOnce(strict, '8.8.8.8', false), { err: null, address: '8.8.8.8', family: 4 });
  t.same(await lookupOnce(strict, '8.8.8.8', true), { err: null, address: [{ address: '8.8.8.8', family: 4 }] });
  for (const all of [false, true]) {
    const { err } = await lookupOnce(strict, 'localhost', all);
    t.match(err, { code: 'EADDRNOTALLOWED', message: /localhost \(127\.0\.0\.1\).*loopback/ }, `all: ${all}`);
  }
  t.match((await lookupOnce(strict, 'example.invalid', false)).err, { code: 'ENOTFOUND' });
  t.match(await lookupOnce(guardedLookup(true), 'localhost', false), { err: null, address: '127.0.0.1', family: 4 });
});

t.test('assertConnectTarget judges IP literals only', async (t) => {
  t.throws(() => assertConnectTarget('127.0.0.1', false), { code: 'EADDRNOTALLOWED', message: /127\.0\.0\.1.*loopback/ });
  t.throws(() => assertConnectTarget('[::ffff:a9fe:a9fe]', false), { code: 'EADDRNOTALLOWED', message: /metadata/ });
  t.doesNotThrow(() => assertConnectTarget('8.8.8.8', false));
  t.doesNotThrow(() => assertConnectTarget('localhost', false), 'names are left to guardedLookup');
  t.doesNotThrow(() => assertConnectTarget('127.0.0.1', true));
});

t.test('a real https.request through the guarded lookup', async (t) => {
  const { key, cert } = selfSignedCertificate();
  const server = https.createServer({ key, cert }, (_req, res) => res.end('ok'));
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;

  const get = (url: string, lookup: LookupFunction) =>
    new Promise<string>((resolve, reject) => {
      const req = https.request(url, { ca: cert, lookup, agent: false }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve(body));
      });
      req.on('error', reject);
      req.end();
    });

  await t.rejects(get(`https://localhost:${port}/hook`, guardedLookup(false)), {
    code: 'EADDRNOTALLOWED',
    message: /localhost \(127\.0\.0\.1\).*loopback/,
  });
  t.equal(connections, 0, 'the server saw no connection');

  t.equal(await get(`https://localhost:${port}/hook`, guardedLookup(true)), 'ok', 'allowPrivate delivers');
  t.equal(connections, 1);

  // Why assertConnectTarget exists: node connects to an IP literal without calling `lookup`.
  let lookups = 0;
  const counting: LookupFunction = (host, options, callback) => {
    lookups++;
    guardedLookup(false)(host, options, callback);
  };
  t.equal(await get(`https://127.0.0.1:${port}/hook`, counting), 'ok');
  t.equal(lookups, 0, 'lookup was skipped for the literal');
  t.equal(connections, 2);
});
