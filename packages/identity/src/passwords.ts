import { availableParallelism } from 'node:os';
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
  /**
   * How many hashes or verifications run at once; the rest wait their turn,
   * first come first served. Defaults to {@link defaultArgon2Concurrency}.
   */
  concurrency?: number;
}

/**
 * The default number of argon2id computations a hasher runs at once: one per
 * core this process may run on (`os.availableParallelism()`, which honours
 * CPU affinity such as `taskset`), and never so many that libuv's thread pool
 * has no thread left for file and DNS work.
 *
 * Each computation holds `memoryCost` (19 MiB) while it runs, and more of
 * them than cores only share the cores: on one core, four verifications at
 * once finish about a quarter fewer per second than one at a time, and each
 * waits four times as long.
 */
export function defaultArgon2Concurrency(): number {
  const pool = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  return Math.max(1, Math.min(availableParallelism(), pool - 1));
}

/** Runs tasks with at most `limit` in flight, in the order they came. */
function createLimiter(limit: number): <T>(task: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async (task) => {
    if (running < limit) running++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      // Hand the slot to the next caller, or give it back.
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

/** Argon2id, as `@node-rs/argon2` numbers it. */
const ARGON2ID = 2;

/**
 * An argon2id password hasher with OWASP parameters (m=19456 KiB, t=2, p=1).
 * Hashes are PHC strings, so parameters can be raised later without
 * breaking existing hashes. At most `concurrency` computations run at once
 * (see {@link defaultArgon2Concurrency}), which bounds the memory and threads
 * a burst of sign-ins can take.
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
  const concurrency = options.concurrency ?? defaultArgon2Concurrency();
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(`argon2 concurrency must be a positive integer, not ${concurrency}`);
  }
  const limit = createLimiter(concurrency);
  return {
    hash: (password) => limit(() => hash(password, parameters)),
    verify: (encoded, password) =>
      limit(async () => {
        try {
          return await verify(encoded, password);
        } catch {
          return false;
        }
      }),
  };
}

/**
 * The shortest password any deployment accepts (NIST SP 800-63B lengths, no
 * composition rules); `IDT_PASSWORD_MIN_LENGTH` can raise it. The password
 * policy (`identity.passwords.policy`) applies the rest.
 */
export const PASSWORD_MIN_LENGTH = 12;
/** Upper bound that keeps hashing cost bounded. */
export const PASSWORD_MAX_LENGTH = 256;
