import { randomBytes } from 'node:crypto';

export const SECRET_PREFIX_LENGTH = 12;

/** `whsec_` + 32 random bytes in base64url (docs/decisions.md §10). */
export function generateSecret(): string {
  return `whsec_${randomBytes(32).toString('base64url')}`;
}

export function secretPrefix(secret: string): string {
  return secret.slice(0, SECRET_PREFIX_LENGTH);
}
