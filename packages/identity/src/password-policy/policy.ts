import { type Logger, silentLogger } from '@idt/core';
import { ProblemError } from '@idt/problem';
import type { ZxcvbnFactory } from '@zxcvbn-ts/core';
import type { PasswordHasher } from '../passwords.js';
import type { BreachedPasswordCheck } from './breached.js';

/** The fewest characters a password may have by default, and the lowest `IDT_PASSWORD_MIN_LENGTH` accepts. */
export const DEFAULT_PASSWORD_MIN_LENGTH = 12;
/** The most characters (Unicode code points, after NFKC) a password may have: hashing cost stays bounded. */
export const POLICY_PASSWORD_MAX_LENGTH = 256;

/** Who the password is for: a password may not contain their address or names. */
export interface PasswordContext {
  readonly email?: string;
  readonly firstName?: string;
  readonly lastName?: string;
}

/** The verdict of {@link PasswordPolicy.check}. */
export type PasswordVerdict =
  | {
      readonly ok: true;
      /** The NFKC form of the password: the one to hash. */
      readonly normalized: string;
    }
  | {
      readonly ok: false;
      /** One sentence per broken rule, for people. */
      readonly reasons: string[];
    };

/**
 * The password policy (NIST SP 800-63B style, no composition rules): at least
 * `minLength` and at most 256 characters after NFKC normalization; not one
 * of the common passwords of zxcvbn-ts's common dictionary; not too easy to
 * guess (zxcvbn score 0 or 1); not containing the e-mail address's local
 * part or the first or last name (3 characters or more); and, when a
 * breached-password check is configured, not in a known breach.
 */
export interface PasswordPolicy {
  /** The configured minimum length. */
  readonly minLength: number;
  /** The maximum length (256). */
  readonly maxLength: number;
  /** Judges a new password; never throws (a failing breach check lets the password pass and is logged). */
  check(password: string, context?: PasswordContext): Promise<PasswordVerdict>;
  /**
   * Judges a new password and returns its NFKC form to hash.
   *
   * @throws PasswordRejectedError (`Identity.PasswordRejected`, 422) with the reasons.
   */
  require(password: string, context?: PasswordContext): Promise<string>;
}

/** Options of {@link createPasswordPolicy}. */
export interface PasswordPolicyOptions {
  /** The fewest characters; 12 by default, never lower. */
  readonly minLength?: number;
  /** The breached-password check; none by default. */
  readonly breached?: BreachedPasswordCheck;
  readonly logger?: Logger;
}

/**
 * A refused password: `Identity.PasswordRejected` (422), with the reasons a
 * page or API client shows.
 */
export class PasswordRejectedError extends ProblemError {
  /** One sentence per broken rule. */
  readonly reasons: readonly string[];

  constructor(reasons: readonly string[]) {
    super('Identity.PasswordRejected', `The password is refused. ${reasons.join(' ')}`);
    this.name = 'PasswordRejectedError';
    this.reasons = [...reasons];
  }
}

/** The reasons of the policy, word for word (pages and clients may match on them). */
export const PasswordReasons = {
  missing: 'Enter a password.',
  tooShort: (min: number) => `A password has at least ${min} characters.`,
  tooLong: (max: number) => `A password has at most ${max} characters.`,
  common: 'This password is one of the most common passwords; choose another.',
  weak: 'This password is too easy to guess; a few unrelated words make a strong one.',
  email: 'A password cannot contain your e-mail address.',
  name: 'A password cannot contain your name.',
  breached: 'This password has appeared in a data breach; choose another.',
} as const;

/**
 * The zxcvbn estimator and the common-password set, loaded and built once on
 * first use (about 40 ms), so importing the package stays cheap.
 */
let estimator: Promise<{ zxcvbn: ZxcvbnFactory; common: ReadonlySet<string> }> | undefined;
function estimatorOf() {
  estimator ??= Promise.all([import('@zxcvbn-ts/core'), import('@zxcvbn-ts/language-common')]).then(
    ([{ ZxcvbnFactory }, { adjacencyGraphs, dictionary }]) => ({
      zxcvbn: new ZxcvbnFactory({ dictionary: { ...dictionary }, graphs: adjacencyGraphs }),
      common: new Set(dictionary['passwords-common'].map((entry) => entry.normalize('NFKC').toLowerCase())),
    }),
  );
  return estimator;
}

/** zxcvbn looks at this many characters at most: its matching grows quickly with length, and longer passwords are strong anyway. */
const SCORED_PREFIX = 100;

/** The NFKC form of a password: what is hashed and judged. */
export function normalizePassword(password: string): string {
  return password.normalize('NFKC');
}

/**
 * Verifies a password against a stored hash: its NFKC form first, then (for
 * hashes set before passwords were normalized) the password as typed.
 */
export async function verifyPassword(hasher: PasswordHasher, encoded: string, password: string): Promise<boolean> {
  const normalized = normalizePassword(password);
  if (await hasher.verify(encoded, normalized)) return true;
  return normalized !== password && hasher.verify(encoded, password);
}

/** The personal words a password may not contain: the address's local part and the names, 3 characters or more. */
function personalWords(context: PasswordContext): Array<{ word: string; reason: string }> {
  const words: Array<{ word: string; reason: string }> = [];
  const add = (value: string | undefined, reason: string) => {
    const word = value?.normalize('NFKC').trim().toLowerCase();
    if (word && [...word].length >= 3) words.push({ word, reason });
  };
  const email = context.email?.trim();
  if (email) add(email.slice(0, email.lastIndexOf('@') === -1 ? email.length : email.lastIndexOf('@')), PasswordReasons.email);
  add(context.firstName, PasswordReasons.name);
  add(context.lastName, PasswordReasons.name);
  return words;
}

/**
 * Creates the password policy.
 *
 * @example
 * const policy = createPasswordPolicy({ minLength: 12 });
 * const verdict = await policy.check('correct horse battery staple', { email: 'ada@example.com' });
 * if (verdict.ok) await hasher.hash(verdict.normalized);
 */
export function createPasswordPolicy(options: PasswordPolicyOptions = {}): PasswordPolicy {
  const minLength = options.minLength ?? DEFAULT_PASSWORD_MIN_LENGTH;
  if (!Number.isInteger(minLength) || minLength < DEFAULT_PASSWORD_MIN_LENGTH || minLength > POLICY_PASSWORD_MAX_LENGTH) {
    throw new RangeError(`The minimum password length must be a whole number from 12 to 256, not ${minLength}`);
  }
  const maxLength = POLICY_PASSWORD_MAX_LENGTH;
  const logger = options.logger ?? silentLogger;

  async function check(password: string, context: PasswordContext = {}): Promise<PasswordVerdict> {
    if (typeof password !== 'string' || password.length === 0) return { ok: false, reasons: [PasswordReasons.missing] };
    // NFKC can grow a string, never beyond a few times: refuse huge input before any work on it.
    if (password.length > maxLength * 4) return { ok: false, reasons: [PasswordReasons.tooLong(maxLength)] };
    const normalized = normalizePassword(password);
    const length = [...normalized].length;
    if (length < minLength) return { ok: false, reasons: [PasswordReasons.tooShort(minLength)] };
    if (length > maxLength) return { ok: false, reasons: [PasswordReasons.tooLong(maxLength)] };

    const reasons: string[] = [];
    const lower = normalized.toLowerCase();
    const { zxcvbn, common } = await estimatorOf();
    const personal = personalWords(context);
    for (const { word, reason } of personal) {
      if (lower.includes(word) && !reasons.includes(reason)) reasons.push(reason);
    }
    if (common.has(lower)) reasons.push(PasswordReasons.common);
    else {
      const scored = [...normalized].slice(0, SCORED_PREFIX).join('');
      const { score } = zxcvbn.check(
        scored,
        personal.map((entry) => entry.word),
      );
      if (score <= 1) reasons.push(PasswordReasons.weak);
    }
    if (reasons.length === 0 && options.breached) {
      let breached = false;
      try {
        breached = await options.breached.isBreached(normalized);
      } catch (error) {
        // Fail open: an unreachable breach list must not stop people from setting passwords.
        logger.warn('the breached-password check failed; the password was not checked against breaches', { error });
      }
      if (breached) reasons.push(PasswordReasons.breached);
    }
    return reasons.length ? { ok: false, reasons } : { ok: true, normalized };
  }

  return {
    minLength,
    maxLength,
    check,
    async require(password, context) {
      const verdict = await check(password, context);
      if (!verdict.ok) throw new PasswordRejectedError(verdict.reasons);
      return verdict.normalized;
    },
  };
}
