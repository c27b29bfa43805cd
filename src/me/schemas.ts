import { z } from 'zod';
import { timestamp } from '../http/schemas.js';
import { dteSummary } from '../dte/schemas.js';

export const meResource = z
  .object({
    merchant: z.object({ id: z.string(), name: z.string(), base_currency: z.string() }),
    key: z.object({
      id: z.string(),
      prefix: z.string().meta({ description: 'First 12 characters of the key' }),
      scopes: z.array(z.string()),
      created_at: timestamp,
    }),
    rate_limit: z.object({
      limit: z.number().int().meta({ description: 'Requests allowed per minute for this key' }),
      remaining: z.number().int().meta({ description: 'Requests left in the current window, this one already counted' }),
      reset: z.number().int().meta({ description: 'Unix seconds when the window ends' }),
    }),
    can_charge: z.boolean().meta({ description: 'True when the merchant has a payment provider configured with complete credentials (checkout can take payments)' }),
    dte: dteSummary,
  })
  .meta({ id: 'Me' });
