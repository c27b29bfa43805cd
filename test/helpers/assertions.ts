// The assertions every suite makes of an error answer: the one envelope of the spec, by status and
// code, and for a validation error the fields it names.
import type { Test } from 'tap';
import { clock } from '../../src/clock.js';
import { isEnvelope, type ApiResponse } from './app.js';

/** The asserts used, as tap declares them (a subtest's `t` is assignable; a hand-written signature is not). */
export type Asserts = Pick<Test, 'equal' | 'ok' | 'match' | 'same'>;

export interface ErrorExpectation {
  /** Prefixes every assertion's message. */
  what?: string;
  /** The request's path as the envelope must name it (never its query string). */
  path?: string;
}

/**
 * The answer is `status` with the one envelope (spec, Errors) of `code`, served as JSON, its
 * request_id equal to X-Request-Id and its timestamp the app's now.
 */
export function assertError(t: Asserts, res: ApiResponse, status: number, code: string, opts: string | ErrorExpectation = {}): void {
  const { what = '', path } = typeof opts === 'string' ? { what: opts } : opts;
  const label = (s: string) => (what ? `${what}: ${s}` : s);
  t.equal(res.status, status, label(`status ${status}`), { found: res.body });
  t.ok(isEnvelope(res.body), label('the error envelope'), { found: res.raw.slice(0, 300) });
  t.equal(res.body?.code, code, label(`code ${code}`));
  t.match(String(res.headers['content-type']), /^application\/json/, label('served as JSON'));
  t.equal(res.headers['x-request-id'], res.body?.request_id, label('X-Request-Id equals request_id'));
  t.ok(Math.abs(Date.parse(res.body?.timestamp) - clock.now().getTime()) < 60_000, label('timestamp is now'));
  if (path !== undefined) t.equal(res.body?.path, path, label('path is the request path without the query string'));
}

/** The fields a validation error names, in its order. */
export function errorPaths(res: ApiResponse): string[] {
  return ((res.body?.details?.errors ?? []) as { path: string }[]).map((e) => e.path);
}

/**
 * A 422 validation_error naming these fields: exactly these (in any order) by default, or at
 * least these with `including`. Every entry has its message.
 */
export function assertValidationError(t: Asserts, res: ApiResponse, paths: string[], opts: { what?: string; including?: boolean } = {}): void {
  const what = opts.what ?? paths.join(', ');
  assertError(t, res, 422, 'validation_error', what);
  const named = [...new Set(errorPaths(res))].sort();
  if (opts.including) t.ok(paths.every((p) => named.includes(p)), `${what}: names ${paths.join(', ')} (got ${JSON.stringify(named)})`);
  else t.same(named, [...paths].sort(), `${what}: names ${paths.join(', ')}`);
  for (const e of res.body?.details?.errors ?? []) t.equal(typeof e.message, 'string', `${what}: ${e.path} has its message`);
}
