import { pino, type BaseLogger, type Logger, type LoggerOptions } from 'pino';
import type { Config } from './config.js';

/** Any pino logger: the worker's own, or the web's Fastify logger (`app.log`) where both share a process. */
export type Log = BaseLogger;

/**
 * The pino settings every process's log shares, so web and worker lines read alike: LOG_LEVEL,
 * and what is never written (API keys, bearer tokens, cookies, and any `secret`, `password` or
 * `key` of a logged object). pino's own base fields (pid, hostname) and time stay as Fastify has them.
 */
export function loggerOptions(config: Pick<Config, 'LOG_LEVEL'>) {
  return {
    level: config.LOG_LEVEL,
    redact: {
      paths: ['req.headers["x-api-key"]', 'req.headers.authorization', 'req.headers.cookie', '*.secret', '*.password', '*.key'],
      censor: '[redacted]',
    },
  } satisfies LoggerOptions;
}

/** A logger outside Fastify (the worker, the web's pg-boss handle): JSON lines on stdout, as Fastify writes them. */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>): Logger {
  return pino(loggerOptions(config));
}

// An SMTP server's refusal quotes the recipient (`550 <ana@example.cl>: unknown user`); a log
// line keeps only the domain, which is what tells one mail provider's trouble from another's.
const ADDRESS = /[^\s<>"'(),;:@]+@(?=[A-Za-z0-9.-]+\.[A-Za-z]{2,})/g;

/** What a log line says of an error: its message, e-mail addresses cut to their domain. */
export function redactedMessage(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).replace(ADDRESS, '*@');
}

/** The domain of an e-mail address: enough to tell which provider refused, without the person. */
export function addressDomain(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}
