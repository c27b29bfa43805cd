import dns from 'node:dns';
import net from 'node:net';

/**
 * SSRF guard for webhook deliveries: a merchant-supplied URL must not let our workers reach
 * loopback, private networks or cloud metadata services. The URL is judged when the endpoint is
 * created (checkWebhookUrl) and again on every address a delivery actually connects to
 * (guardedLookup / assertConnectTarget), because a DNS answer can change after creation.
 */

type Family = 'ipv4' | 'ipv6';

// Order matters: the first matching reason wins, so the narrow metadata entries sit before the
// link-local / private ranges that contain them.
const RULES: Array<{ reason: string; ipv4: string[]; ipv6: string[] }> = [
  // 168.63.129.16 is Azure's WireServer: a public address that only answers from inside Azure.
  { reason: 'metadata', ipv4: ['169.254.169.254/32', '168.63.129.16/32'], ipv6: ['fd00:ec2::254/128'] },
  { reason: 'broadcast', ipv4: ['255.255.255.255/32'], ipv6: [] },
  // Linux routes a connect to 0.0.0.0 to the local host, so "this network" is as dangerous as loopback.
  { reason: 'unspecified', ipv4: ['0.0.0.0/8'], ipv6: ['::/128'] },
  { reason: 'loopback', ipv4: ['127.0.0.0/8'], ipv6: ['::1/128'] },
  { reason: 'private', ipv4: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'], ipv6: ['fc00::/7'] },
  { reason: 'cgnat', ipv4: ['100.64.0.0/10'], ipv6: [] },
  { reason: 'link-local', ipv4: ['169.254.0.0/16'], ipv6: ['fe80::/10'] },
  { reason: 'site-local', ipv4: [], ipv6: ['fec0::/10'] },
  { reason: 'multicast', ipv4: ['224.0.0.0/4'], ipv6: ['ff00::/8'] },
  {
    reason: 'reserved',
    // IETF protocol assignments, documentation, benchmarking, class E.
    ipv4: ['192.0.0.0/24', '192.0.2.0/24', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '240.0.0.0/4'],
    // Documentation and benchmarking inside 2000::/3; everything outside 2000::/3 (100::/64 discard,
    // the rest of ::/8, …) is caught by the global-unicast test in ipv6Reason.
    ipv6: ['2001:db8::/32', '3fff::/20', '2001:2::/48'],
  },
];

function blockList(cidrs: string[], family: Family): net.BlockList {
  const list = new net.BlockList();
  for (const cidr of cidrs) {
    const [address, prefix] = cidr.split('/');
    list.addSubnet(address!, Number(prefix), family);
  }
  return list;
}

// One list per family: node's BlockList matches IPv4 rules against IPv4-mapped IPv6 addresses on
// its own, and the embedded-IPv4 forms are judged explicitly below instead of relying on that.
const IPV4_RULES = RULES.map((r) => ({ reason: r.reason, list: blockList(r.ipv4, 'ipv4') }));
const IPV6_RULES = RULES.map((r) => ({ reason: r.reason, list: blockList(r.ipv6, 'ipv6') }));

// IPv6 forms that carry an IPv4 address the packet ends up at; `start` is its byte offset.
const EMBEDDING: Array<{ list: net.BlockList; start: number; xor: number }> = [
  { list: blockList(['::ffff:0:0/96'], 'ipv6'), start: 12, xor: 0 }, // IPv4-mapped
  { list: blockList(['::ffff:0:0:0/96'], 'ipv6'), start: 12, xor: 0 }, // IPv4-translated (SIIT)
  { list: blockList(['::/96'], 'ipv6'), start: 12, xor: 0 }, // IPv4-compatible (:: and ::1 matched by RULES first)
  { list: blockList(['64:ff9b::/96'], 'ipv6'), start: 12, xor: 0 }, // NAT64
  { list: blockList(['2002::/16'], 'ipv6'), start: 2, xor: 0 }, // 6to4
  { list: blockList(['2001::/32'], 'ipv6'), start: 12, xor: 0xff }, // Teredo: client address is inverted
];

function ipv4Reason(ip: string): string | null {
  return IPV4_RULES.find((r) => r.list.check(ip, 'ipv4'))?.reason ?? null;
}

/** The 16 bytes of an address net.isIPv6 accepted (zone id already removed). */
function ipv6Bytes(ip: string): number[] {
  let text = ip;
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const [a, b, c, d] = tail.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const all = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return all.flatMap((g) => {
    const n = parseInt(g, 16);
    return [n >> 8, n & 0xff];
  });
}

function ipv6Reason(ip: string): string | null {
  const direct = IPV6_RULES.find((r) => r.list.check(ip, 'ipv6'));
  if (direct) return direct.reason;
  const bytes = ipv6Bytes(ip);
  const embedding = EMBEDDING.find((e) => e.list.check(ip, 'ipv6'));
  if (embedding) {
    return ipv4Reason(bytes.slice(embedding.start, embedding.start + 4).map((b) => b ^ embedding.xor).join('.'));
  }
  // Only 2000::/3 is allocated as global unicast; anything else cannot be a legitimate webhook host.
  return (bytes[0]! & 0xe0) === 0x20 ? null : 'reserved';
}

/** null when `ip` is a public address a webhook may be delivered to, otherwise a short reason. */
export function forbiddenAddressReason(ip: string): string | null {
  // A zone id only scopes the address to an interface; fe80::1%eth0 is still link-local.
  const address = ip.split('%')[0]!;
  switch (net.isIP(address)) {
    case 4:
      return ipv4Reason(address);
    case 6:
      return ipv6Reason(address);
    default:
      return 'invalid';
  }
}

function notAllowed(host: string, address: string, reason: string): NodeJS.ErrnoException {
  const where = host === address ? address : `${host} (${address})`;
  return Object.assign(new Error(`webhook target ${where} is a forbidden address (${reason})`), {
    code: 'EADDRNOTALLOWED',
    hostname: host,
    address,
  });
}

/** URL.hostname keeps the brackets of an IPv6 literal; net and dns want the bare address. */
function bareHost(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

// Receivers listen on the HTTPS ports (docs/decisions.md §10): any other port of a public host (SSH, a
// database, an admin console) is no webhook receiver, and trying it only makes us a port scanner.
const WEBHOOK_PORTS = ['443', '8443'];

/** null when the URL's port may receive webhooks; URL.port is '' for https's default, 443. */
function forbiddenPortReason(url: URL): string | null {
  const port = url.port || '443';
  return WEBHOOK_PORTS.includes(port) ? null : `port ${port} is not allowed (use 443 or 8443)`;
}

export type WebhookUrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** Creation-time check of a webhook endpoint URL. */
export async function checkWebhookUrl(url: string, opts: { allowPrivate: boolean }): Promise<WebhookUrlCheck> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, reason: 'URL is not valid' };
  }
  if (parsed.protocol !== 'https:') return { ok: false, reason: 'URL must use https://' };
  if (parsed.username !== '' || parsed.password !== '') {
    return { ok: false, reason: 'URL must not contain credentials' };
  }
  // https: is a special scheme, so new URL() has already refused a URL without a host.
  const host = bareHost(parsed.hostname);
  if (opts.allowPrivate) return { ok: true, url: parsed };
  // Before any DNS lookup: a refused port needs no answer from a resolver.
  const badPort = forbiddenPortReason(parsed);
  if (badPort) return { ok: false, reason: `URL ${badPort}` };

  if (net.isIP(host)) {
    const reason = forbiddenAddressReason(host);
    return reason ? { ok: false, reason: `host ${host} is a forbidden address (${reason})` } : { ok: true, url: parsed };
  }
  let answers: dns.LookupAddress[];
  try {
    answers = await dns.promises.lookup(host, { all: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    return { ok: false, reason: `host ${host} does not resolve (${code})` };
  }
  // Every answer counts: the client may connect to any of them (happy eyeballs, retries).
  for (const { address } of answers) {
    const reason = forbiddenAddressReason(address);
    if (reason) return { ok: false, reason: `host ${host} resolves to ${address}, a forbidden address (${reason})` };
  }
  return { ok: true, url: parsed };
}

/**
 * A `lookup` for https.request / net.connect that refuses forbidden answers, so the address judged
 * is the one the socket connects to: re-resolving at delivery time defeats DNS rebinding, which a
 * check before the request would not. Like checkWebhookUrl it refuses when any answer is forbidden,
 * even if the caller wants only the first.
 */
export function guardedLookup(allowPrivate: boolean): net.LookupFunction {
  if (allowPrivate) return dns.lookup;
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, answers) => {
      if (err) return callback(err, []);
      for (const { address } of answers) {
        const reason = forbiddenAddressReason(address);
        if (reason) return callback(notAllowed(hostname, address, reason), []);
      }
      if (options.all) return callback(null, answers);
      const first = answers[0];
      if (!first) {
        return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      }
      callback(null, first.address, first.family);
    });
  };
}

/**
 * Throws EADDRNOTALLOWED when `host` is a forbidden IP literal. Needed before connecting because
 * net.connect skips `lookup` for IP literals, so guardedLookup never sees them; hostnames pass
 * through here untouched and are judged by guardedLookup. Accepts URL.hostname's bracketed form.
 */
export function assertConnectTarget(host: string, allowPrivate: boolean): void {
  const address = bareHost(host);
  if (allowPrivate || !net.isIP(address)) return;
  const reason = forbiddenAddressReason(address);
  if (reason) throw notAllowed(address, address, reason);
}

/**
 * Throws EADDRNOTALLOWED when the URL's port may not receive webhooks: an endpoint created while
 * WEBHOOK_ALLOW_PRIVATE_TARGETS was on is judged again by the rules in force when it is delivered to.
 */
export function assertConnectPort(url: URL, allowPrivate: boolean): void {
  if (allowPrivate) return;
  const reason = forbiddenPortReason(url);
  if (reason) throw Object.assign(new Error(`webhook target ${url.host}: ${reason}`), { code: 'EADDRNOTALLOWED' });
}
