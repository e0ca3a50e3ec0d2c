import type { WindowCounter } from '@idt/core/knex';

/**
 * The password lockout of an address: 10 wrong passwords within 15 minutes
 * lock it out of password sign-in for the rest of that window.
 */
export const SIGN_IN_LOCKOUT = { maxFailures: 10, windowMs: 15 * 60_000 } as const;

/** What the lockout needs of a `WindowCounter`: a look without counting, a count, a reset. */
export type SignInLockoutCounter = Pick<WindowCounter, 'peek' | 'hit' | 'reset'>;

/** Options of {@link createSignInLockout}. */
export interface SignInLockoutOptions {
  /** Shared fixed windows (the database's), so every instance sees one count per address. */
  readonly counter: SignInLockoutCounter;
  /** Wrong passwords that lock an address ({@link SIGN_IN_LOCKOUT}: 10). */
  readonly maxFailures?: number;
  /** The window they are counted in, in milliseconds ({@link SIGN_IN_LOCKOUT}: 15 minutes). */
  readonly windowMs?: number;
}

/** The outcome of a password attempt under the lockout. */
export type PasswordAttempt<T> =
  /** Locked out: the password was not checked and nothing was counted. */
  | { readonly outcome: 'locked' }
  /** The password was checked and was wrong (or the account cannot sign in): one failure counted. */
  | { readonly outcome: 'wrong' }
  /** The password was right: the address's count is reset. */
  | { readonly outcome: 'signed-in'; readonly account: T };

/** The sign-in lockout of an address: failures count, successes reset. */
export interface SignInLockout {
  /**
   * Runs one password attempt for a (normalized) address. A locked address
   * is refused before `verify` runs, whether or not it has an account, so the
   * answer's timing says nothing about the address. Otherwise `verify` checks
   * the password: `undefined` is a failure (counted), anything else a success
   * (the address's failures are forgotten).
   */
  attempt<T>(email: string, verify: () => Promise<T | undefined>): Promise<PasswordAttempt<T>>;
}

/** Whether an address with `failures` wrong passwords in its window is locked out. */
export function isSignInLocked(failures: number, maxFailures: number = SIGN_IN_LOCKOUT.maxFailures): boolean {
  return failures >= maxFailures;
}

/** The window-counter key of an address. */
export function signInLockoutKey(email: string): string {
  return `sign-in:${email}`;
}

/**
 * Creates the sign-in lockout. Only failures lock an address: a correct
 * password resets its count, so any number of correct sign-ins in a row
 * succeed, while 10 wrong ones within 15 minutes lock it for the rest of
 * the window.
 *
 * An attempt is counted as a failure *before* the password is checked and
 * forgotten again when it is right: concurrent guesses each take a place in
 * the window, so a burst of parallel requests cannot get more guesses past
 * the limit than sequential ones.
 *
 * @example
 * const lockout = createSignInLockout({ counter });
 * const attempt = await lockout.attempt(email, () => directory.verifyPassword(email, password));
 * if (attempt.outcome === 'locked') return tooManyAttemptsPage();
 */
export function createSignInLockout(options: SignInLockoutOptions): SignInLockout {
  const { counter } = options;
  const maxFailures = options.maxFailures ?? SIGN_IN_LOCKOUT.maxFailures;
  const windowMs = options.windowMs ?? SIGN_IN_LOCKOUT.windowMs;
  return {
    async attempt(email, verify) {
      const key = signInLockoutKey(email);
      if (isSignInLocked((await counter.peek(key))?.total ?? 0, maxFailures)) return { outcome: 'locked' };
      // Takes a place in the window first: the failure is already counted if the password is wrong.
      if (!(await counter.hit(key, maxFailures, windowMs)).allowed) return { outcome: 'locked' };
      const account = await verify();
      if (account === undefined) return { outcome: 'wrong' };
      await counter.reset(key);
      return { outcome: 'signed-in', account };
    },
  };
}
