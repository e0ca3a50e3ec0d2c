import { hash, verify } from '@node-rs/argon2';

/** Hashes and verifies user passwords. */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Whether `password` matches `encoded`; never throws on a malformed hash. */
  verify(encoded: string, password: string): Promise<boolean>;
}

/** Argon2id parameters; the defaults are the OWASP Password Storage Cheat Sheet's first option. */
export interface Argon2Options {
  /** Memory in KiB (OWASP: 19 MiB = 19456). */
  memoryCost?: number;
  /** Iterations (OWASP: 2). */
  timeCost?: number;
  /** Lanes (OWASP: 1). */
  parallelism?: number;
}

/** Argon2id, as `@node-rs/argon2` numbers it. */
const ARGON2ID = 2;

/**
 * An argon2id password hasher with OWASP parameters (m=19456 KiB, t=2, p=1).
 * Hashes are PHC strings, so parameters can be raised later without
 * breaking existing hashes.
 *
 * @example
 * const hasher = createArgon2Hasher();
 * const encoded = await hasher.hash('correct horse battery staple');
 * await hasher.verify(encoded, 'correct horse battery staple'); // true
 */
export function createArgon2Hasher(options: Argon2Options = {}): PasswordHasher {
  const parameters = {
    algorithm: ARGON2ID,
    memoryCost: options.memoryCost ?? 19_456,
    timeCost: options.timeCost ?? 2,
    parallelism: options.parallelism ?? 1,
  };
  return {
    hash: (password) => hash(password, parameters),
    verify: async (encoded, password) => {
      try {
        return await verify(encoded, password);
      } catch {
        return false;
      }
    },
  };
}

/** The password rules of idt: 12 to 128 characters (NIST SP 800-63B lengths, no composition rules). */
export const PASSWORD_MIN_LENGTH = 12;
/** Upper bound that keeps hashing cost bounded. */
export const PASSWORD_MAX_LENGTH = 128;
