import { isIPv6 } from 'node:net';
import { z } from 'zod';
import { clientEmail, clientName } from '../clients/schemas.js';
import { oneLine, timestamp, uuid } from '../http/schemas.js';
import { decimalPlaces } from '../money.js';

export const checkoutStatuses = ['pending', 'completed', 'expired'] as const;
export type CheckoutStatus = (typeof checkoutStatuses)[number];

export const checkoutPaymentStatuses = ['unpaid', 'paid', 'failed'] as const;
export type CheckoutPaymentStatus = (typeof checkoutPaymentStatuses)[number];

// A host name of letters, digits and hyphens in dot-separated labels of 1 to 63 characters, none
// starting or ending with a hyphen (an IPv4 literal is one too); 253 characters at most.
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * Absolute http(s), no credentials, and a host that is a plain host name, an IPv4 literal or a
 * bracketed IPv6 literal: the browser is sent there, the page links it, and its origin is written
 * into the page's Content-Security-Policy, where a host like `a;sandbox` would add a directive.
 * WHATWG parsing accepts such hosts (and decodes `a%3Bsandbox` into one), so the parsed host is
 * checked, not the text.
 */
function isRedirectTarget(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const url = new URL(value);
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username !== '' || url.password !== '') return false;
  const host = url.hostname;
  return HOST_NAME.test(host) || (host.startsWith('[') && host.endsWith(']') && isIPv6(host.slice(1, -1)));
}

const redirectUrl = (description: string, example: string) =>
  z
    .string()
    .max(2000)
    .refine(isRedirectTarget, 'must be an absolute http(s) URL whose host is a valid host name or IP address')
    .meta({
      format: 'uri',
      description: `${description}. An absolute http(s) URL without credentials, whose host is a DNS name (letters, digits, hyphens), an IPv4 address or a bracketed IPv6 address.`,
      example,
    });

export const createCheckoutBody = z
  .strictObject({
    amount: z
      .number()
      .gt(0)
      .max(1e12)
      // The currency's own precision (0 for CLP, 4 for CLF) is checked once the currency is known.
      .refine((v) => decimalPlaces(v) <= 4, 'at most 4 decimals')
      .meta({ description: "Total to charge, tax included, with no more decimals than the currency allows (0 for CLP)", example: 11900 }),
    currency: z
      .string()
      .optional()
      .meta({ description: 'CLP, CLF, USD, EUR, GBP, ARS, BRL, COP, MXN or PEN; default the merchant base currency' }),
    description: oneLine().trim().min(1, 'must not be empty').max(1000).meta({ description: 'The line item of the invoice, shown on the payment page' }),
    customer_email: clientEmail.meta({ description: 'The client with this e-mail (ignoring case) is reused, otherwise created' }),
    customer_name: clientName,
    success_url: redirectUrl('Where the customer is sent (303) after a successful payment', 'https://shop.example.cl/orders/1001/paid'),
    cancel_url: redirectUrl('Where the customer is sent (303) on cancel or a declined payment', 'https://shop.example.cl/orders/1001'),
    external_reference: oneLine().max(255).optional().meta({ description: "Your own reference, kept on the session and its invoice" }),
  })
  .meta({ id: 'CreateCheckoutRequest' });
export type CreateCheckoutInput = z.output<typeof createCheckoutBody>;

export const checkoutIdParams = z.strictObject({ checkout_id: uuid });

export const checkoutSession = z
  .object({
    checkout_id: z.string(),
    checkout_url: z.string().meta({ description: 'The hosted payment page to send the customer to' }),
    status: z.enum(checkoutStatuses).meta({ description: 'pending until paid (completed) or past expires_at (expired)' }),
    payment_status: z.enum(checkoutPaymentStatuses).meta({ description: 'failed after a declined attempt; the customer may still pay while pending' }),
    expires_at: timestamp,
    external_reference: z.string().nullable(),
    completed_at: timestamp.nullable(),
    invoice_id: z.string().meta({ description: 'The invoice this session pays: the one POST /checkout created and sent, or the invoice whose hosted page opened the session (its Pay button)' }),
  })
  .meta({ id: 'CheckoutSession' });
export type CheckoutSessionResource = z.output<typeof checkoutSession>;
