import { createHmac, hkdfSync, randomBytes } from 'node:crypto';

/** Crockford's Base32 alphabet, lowercase: no `i`, `l`, `o` or `u` to misread. */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const LENGTH = 12;
const NORMALIZED = /^[0-9a-hjkmnp-tv-z]{12}$/;

/** How many recovery codes a set holds. */
export const RECOVERY_CODE_COUNT = 10;

/** A new recovery code: 12 random Base32 characters (60 bits), shown as `xxxx-xxxx-xxxx`. */
export function newRecoveryCode(): string {
  const bytes = randomBytes(LENGTH);
  let code = '';
  for (const byte of bytes) code += ALPHABET[byte & 31];
  return `${code.slice(0, 4)}-${code.slice(4, 8)}-${code.slice(8)}`;
}

/**
 * A recovery code as typed, normalized (case, spaces and dashes ignored;
 * `o` read as `0`, `i` and `l` as `1`), or `undefined` when it cannot be one.
 */
export function normalizeRecoveryCode(code: string): string | undefined {
  if (code.length > 64) return undefined;
  const compact = code
    .toLowerCase()
    .replace(/[\s-]+/g, '')
    .replace(/o/g, '0')
    .replace(/[il]/g, '1');
  return NORMALIZED.test(compact) ? compact : undefined;
}

/**
 * Hashes recovery codes for storage: HMAC-SHA-256 under a key derived from
 * the server secret, bound to the user (a fast hash suits a 60-bit random code).
 */
export function createRecoveryCodeHasher(secret: string): (userId: string, normalizedCode: string) => string {
  const key = Buffer.from(
    hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.from('idt-recovery-codes'), Buffer.from('v1'), 32),
  );
  return (userId, normalizedCode) => createHmac('sha256', key).update(`${userId}\n${normalizedCode}`).digest('hex');
}
