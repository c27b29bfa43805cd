export const scopes = [
  'invoices:create',
  'invoices:read',
  'invoices:send',
  'invoices:write',
  'payments:write',
  'payments:read',
  'clients:create',
  'clients:read',
  'webhooks:manage',
  'checkout:create',
  '*',
] as const;

export type Scope = (typeof scopes)[number];

export function hasScope(granted: readonly string[], required: Scope): boolean {
  return granted.includes('*') || granted.includes(required);
}
