import { type Clock, systemClock } from '@idt/core';
import { defaults as ironDefaults, seal as ironSeal, unseal as ironUnseal } from 'iron-webcrypto';
import type { CookieKeyring } from '../config.js';

/** What {@link Sealer.unseal} found. */
export interface Unsealed<T> {
  readonly value: T;
  /** The key id the value was sealed under. */
  readonly keyId: string;
  /** `true` when that key is not the current one: seal the value again so that the old key can be retired. */
  readonly needsReseal: boolean;
}

/**
 * Seals small JSON values with iron (`iron-webcrypto`: AES-256-CBC +
 * HMAC-SHA256, keys derived from the secret) under the current key of a
 * {@link CookieKeyring}; unseals under any of its keys.
 */
export interface Sealer {
  /** Seals `value`; it unseals only until `ttlMs` after now (by the injected clock). */
  seal(value: unknown, ttlMs: number): Promise<string>;
  /** The value, or `undefined` when the seal is malformed, tampered with, expired or under an unknown key. */
  unseal<T>(sealed: string): Promise<Unsealed<T> | undefined>;
}

/** The key id a seal names (iron writes an empty id for a bare secret, which reads back as `default`). */
export function sealKeyId(sealed: string): string | undefined {
  const parts = sealed.split('*');
  if (parts.length !== 8) return undefined;
  return parts[1] || 'default';
}

/**
 * A {@link Sealer} over a key ring. Expiry is checked against `clock`
 * exactly (no skew allowance): a 600-second seal is refused at 600 seconds.
 *
 * @example
 * const sealer = createSealer(config.cookie.keyring);
 * const sealed = await sealer.seal({ sessionId }, 86_400_000);
 */
export function createSealer(keyring: CookieKeyring, clock: Clock = systemClock): Sealer {
  const currentSecret = keyring.secrets.get(keyring.currentKeyId);
  if (!currentSecret) throw new TypeError(`The key ring has no secret for its current key id "${keyring.currentKeyId}"`);
  const options = (ttl: number) => ({
    ...ironDefaults,
    ttl,
    timestampSkewSec: 0,
    // iron reads Date.now(); the offset makes it read the injected clock instead.
    localtimeOffsetMsec: clock.now().getTime() - Date.now(),
  });
  return {
    seal: (value, ttlMs) => ironSeal(value, { id: keyring.currentKeyId, secret: currentSecret }, options(Math.max(1, ttlMs))),
    async unseal<T>(sealed: string) {
      const keyId = sealKeyId(sealed);
      if (keyId === undefined) return undefined;
      const secret = keyring.secrets.get(keyId);
      if (!secret) return undefined;
      try {
        // The secret itself, not the ring: iron would look a map up by any id the seal names.
        const value = (await ironUnseal(sealed, secret, options(0))) as T;
        return { value, keyId, needsReseal: keyId !== keyring.currentKeyId };
      } catch {
        return undefined;
      }
    },
  };
}
