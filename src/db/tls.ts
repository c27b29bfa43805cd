import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls, { type ConnectionOptions } from 'node:tls';
import { ConfigError, SSL_MODES } from '../config.js';

type SslMode = (typeof SSL_MODES)[number];

/**
 * libpq's TLS variables; PGHOST is the host verify-full checks when the URL names none, and HOME
 * holds libpq's default root certificate, ~/.postgresql/root.crt.
 */
export type TlsEnv = Partial<Record<'PGSSLMODE' | 'PGSSLROOTCERT' | 'PGSSLNEGOTIATION' | 'PGHOST' | 'HOME', string>>;

export interface PostgresTls {
  /**
   * The URL without sslmode, ssl and sslrootcert: postgres.js would send sslrootcert to the
   * server as a setting, which the server refuses.
   */
  url: string;
  /** postgres.js's `ssl` option. */
  ssl: false | 'prefer' | 'require' | ConnectionOptions;
}

interface Setting {
  value: string;
  /** Where it was read, as an error names it: "DATABASE_URL" or the variable. */
  from: string;
}

const invalid = (from: string, message: string) => new ConfigError(`Invalid configuration:\n  ${from}: ${message}`);

/**
 * postgres.js's TLS settings for a libpq connection URL and environment. postgres.js reads sslmode
 * itself, but not as libpq does: it ignores PGSSLMODE, treats allow as require, and verify-ca or
 * any unknown value as verify-full against the public CAs, and it checks the certificate of a
 * server named by its IP address against "localhost".
 *
 * libpq retries a connection whose startup the server refused with the other encryption, where
 * the mode allows both; postgres.js cannot. So allow, which libpq tries in plain text first, tries
 * TLS first like prefer: it connects wherever libpq's does, except to a server that offers TLS
 * but accepts only plain connections, and it encrypts where libpq might not. For the same reason
 * prefer does not fall back to plain text once the server has accepted TLS.
 */
export function postgresTls(url: string, env: TlsEnv): PostgresTls {
  const at = url.indexOf('?');
  const kept = new URLSearchParams();
  let mode: Setting | undefined;
  let rootcert: Setting | undefined;
  let negotiation: Setting | undefined;
  // In order, so that a later parameter wins, as in libpq.
  for (const [key, value] of new URLSearchParams(at === -1 ? '' : url.slice(at + 1))) {
    if (key === 'sslmode') mode = { value, from: 'DATABASE_URL' };
    else if (key === 'ssl') {
      // libpq's JDBC spelling; any other value of `ssl` is an error there too.
      if (value !== 'true') throw invalid('DATABASE_URL', `ssl=${value} is not a libpq parameter (ssl=true means sslmode=require)`);
      mode = { value: 'require', from: 'DATABASE_URL' };
    } else if (key === 'sslrootcert') rootcert = { value, from: 'DATABASE_URL' };
    else {
      // postgres.js reads sslnegotiation itself; it is only checked here.
      if (key === 'sslnegotiation') negotiation = { value, from: 'DATABASE_URL' };
      kept.append(key, value);
    }
  }
  mode ??= env.PGSSLMODE ? { value: env.PGSSLMODE, from: 'PGSSLMODE' } : undefined;
  rootcert ??= env.PGSSLROOTCERT ? { value: env.PGSSLROOTCERT, from: 'PGSSLROOTCERT' } : undefined;
  negotiation ??= env.PGSSLNEGOTIATION ? { value: env.PGSSLNEGOTIATION, from: 'PGSSLNEGOTIATION' } : undefined;
  const stripped = at === -1 ? url : url.slice(0, at) + (kept.size ? `?${kept}` : '');

  if (mode && !(SSL_MODES as readonly string[]).includes(mode.value)) {
    throw invalid(mode.from, `sslmode "${mode.value}" is not one of ${SSL_MODES.join(', ')}`);
  }
  const system = rootcert?.value === 'system';
  // Anyone can get a publicly trusted certificate for a name they control, so against the
  // system's CAs only the host name check protects anything: libpq insists on verify-full.
  const sslmode = (mode?.value ?? (system ? 'verify-full' : 'prefer')) as SslMode;
  if (system && sslmode !== 'verify-full') {
    throw invalid(mode!.from, `sslmode "${sslmode}" is too weak for sslrootcert=system (use verify-full)`);
  }
  if (negotiation && negotiation.value !== 'postgres' && negotiation.value !== 'direct') {
    throw invalid(negotiation.from, `sslnegotiation "${negotiation.value}" is not one of postgres, direct`);
  }
  if (negotiation?.value === 'direct' && !['require', 'verify-ca', 'verify-full'].includes(sslmode)) {
    throw invalid(negotiation.from, `sslnegotiation=direct needs sslmode require, verify-ca or verify-full, not "${sslmode}"`);
  }

  const host = hostOf(url, env);
  // libpq never uses TLS on a Unix-domain socket, whatever the sslmode.
  if (host.startsWith('/')) return { url: stripped, ssl: false };

  const rootFile = rootcert?.value || path.join(env.HOME || os.homedir(), '.postgresql', 'root.crt');
  const ca = () => rootCertificates(rootFile, sslmode, rootcert?.from ?? mode?.from ?? 'DATABASE_URL');
  switch (sslmode) {
    case 'disable':
      return { url: stripped, ssl: false };
    case 'allow':
    case 'prefer':
      return { url: stripped, ssl: 'prefer' };
    case 'require': {
      // libpq's require checks the certificate like verify-ca when it has a root certificate.
      const roots = ca();
      return { url: stripped, ssl: roots ? verified(roots) : 'require' };
    }
    case 'verify-ca':
      return { url: stripped, ssl: verified(ca()!) };
    case 'verify-full': {
      if (host.includes(',')) {
        throw invalid(mode?.from ?? rootcert!.from, `verify-full checks the certificate against one host name, and the URL names several (${host})`);
      }
      // postgres.js gives TLS no server name for an IP address, and Node then checks the
      // certificate against "localhost": the name checked is the URL's host, always.
      return { url: stripped, ssl: verified(ca()!, (_name, cert) => tls.checkServerIdentity(host, cert)) };
    }
  }
}

/**
 * The root certificates that verify the server, or none when the file does not exist and the
 * mode can do without (libpq then does not check the certificate).
 */
function rootCertificates(file: string, mode: SslMode, from: string): string[] | Buffer | undefined {
  if (file === 'system') return tls.getCACertificates('system');
  if (!existsSync(file)) {
    if (mode === 'require') return undefined;
    throw invalid(
      from,
      `sslmode ${mode} needs the server's root certificate, and "${file}" does not exist ` +
        '(name its file with sslrootcert in DATABASE_URL or PGSSLROOTCERT, or use sslrootcert=system for the public CAs)',
    );
  }
  try {
    const pem = readFileSync(file);
    new X509Certificate(pem); // throws when the file holds no certificate
    return pem;
  } catch (err) {
    throw invalid(from, `could not read root certificate file "${file}": ${(err as Error).message}`);
  }
}

function verified(ca: string[] | Buffer, checkServerIdentity: ConnectionOptions['checkServerIdentity'] = () => undefined): ConnectionOptions {
  // Explicit, so that NODE_TLS_REJECT_UNAUTHORIZED=0 cannot quietly turn a verify mode off.
  return { ca, checkServerIdentity, rejectUnauthorized: true };
}

/** The host part of the URL as postgres.js reads it (a list when it names several), or PGHOST, or localhost. */
function hostOf(url: string, env: TlsEnv): string {
  const authority = url.slice(url.indexOf('://') + 3).split(/[/?#]/)[0] ?? '';
  const hosts = authority.slice(authority.lastIndexOf('@') + 1);
  const host = hosts.includes(',') ? hosts : hosts.replace(/:\d*$/, '');
  return decodeURIComponent(host) || env.PGHOST || 'localhost';
}
