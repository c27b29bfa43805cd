import { defineRoute } from '../http/route.js';
import * as s from './schemas.js';
import * as service from './service.js';

export const meRoutes = [
  defineRoute({
    method: 'GET',
    path: '/me',
    operationId: 'getMe',
    summary: 'Check a key: its merchant, scopes, rate limit and whether charging is possible',
    description:
      'Needs only a valid key, whatever its scopes. `rate_limit` is the state of the current one-minute window with this request counted, the same values as the X-RateLimit-* headers.',
    tag: 'Account',
    scope: null,
    response: { status: 200, description: 'The key and its merchant', schema: s.meResource },
    errors: [],
    handler: async ({ auth, db }) => ({
      status: 200,
      body: await service.describeCaller(db, auth),
    }),
  }),
];
