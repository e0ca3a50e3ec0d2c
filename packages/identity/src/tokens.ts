import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * Derives link tokens from record ids with an HMAC, so a mailed link
 * (`<id>.<mac>`) needs no secret stored anywhere: the database keeps only
 * the record, and the token is recomputed to verify it.
 */
export interface TokenMac {
  /** The token for a record id, bound to a purpose (`email-change`, `invitation`, …). */
  issue(purpose: string, id: string): string;
  /** The record id a token names, or `undefined` when the token is malformed or forged. */
  verify(purpose: string, token: string): string | undefined;
}

/**
 * Creates the token MAC from a server secret (the key-encryption secret).
 *
 * @example
 * const tokens = createTokenMac(resolveKeyEncryptionSecret(config));
 * const link = `${base}/confirm?token=${tokens.issue('email-change', change.id)}`;
 */
export function createTokenMac(secret: string): TokenMac {
  const key = Buffer.from(
    hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.from('idt-identity-tokens'), Buffer.from('v1'), 32),
  );
  const mac = (purpose: string, id: string) => createHmac('sha256', key).update(`${purpose}\n${id}`).digest();
  return {
    issue: (purpose, id) => `${id}.${mac(purpose, id).toString('base64url')}`,
    verify(purpose, token) {
      const index = token.lastIndexOf('.');
      if (index <= 0) return undefined;
      const id = token.slice(0, index);
      const given = Buffer.from(token.slice(index + 1), 'base64url');
      const expected = mac(purpose, id);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      return id;
    },
  };
}
