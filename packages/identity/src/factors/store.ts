import type { UnitOfWork } from '@idt/core';

/** A TOTP secret begun but not confirmed yet. */
export interface StoredTotpEnrolment {
  readonly id: string;
  readonly userId: string;
  /** The secret, sealed (see `SecretBox`). */
  readonly secretSealed: string;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** ISO 8601 UTC. */
  readonly expiresAt: string;
}

/** A user's confirmed TOTP. */
export interface StoredTotpFactor {
  readonly id: string;
  readonly userId: string;
  /** The secret, sealed (see `SecretBox`). */
  readonly secretSealed: string;
  /** The last RFC 6238 time step a code was accepted for, or `null`. */
  readonly lastUsedStep: number | null;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
}

/** The second-step misses of a user and the lock they caused. */
export interface SecondFactorAttempts {
  /** Misses since {@link windowStartedAt}. */
  readonly failures: number;
  /** ISO 8601 UTC. */
  readonly windowStartedAt: string;
  /** ISO 8601 UTC, or `null` while not locked. */
  readonly lockedUntil: string | null;
}

/**
 * The second-factor primitives a service runs in one transaction (see
 * {@link SecondFactorStore.transaction}); the service publishes the events.
 */
export interface SecondFactorWrites {
  /**
   * Takes the user's row lock (`UPDATE identity_users SET updated_at =
   * updated_at WHERE id = ?`), which serializes the second-factor writes of
   * one user (a code's time step, misses, recovery codes) until the
   * transaction ends.
   *
   * @returns the user's address and status, or `undefined` when there is no such user.
   */
  lockUser(userId: string): Promise<{ readonly email: string; readonly status: string } | undefined>;
  /** Inserts a pending enrolment, ending the user's other pending ones. */
  insertEnrolment(enrolment: StoredTotpEnrolment): Promise<void>;
  /** The user's pending enrolment `id` while it has not expired at `now`. */
  findEnrolment(userId: string, id: string, now: string): Promise<StoredTotpEnrolment | undefined>;
  /** Deletes every pending enrolment of the user. */
  deleteEnrolments(userId: string): Promise<void>;
  /** The user's TOTP. */
  findTotp(userId: string): Promise<StoredTotpFactor | undefined>;
  /** Sets the user's TOTP (replacing any previous one). */
  putTotp(factor: StoredTotpFactor): Promise<void>;
  /**
   * Records the time step of an accepted code (`UPDATE ... SET
   * last_used_step = step WHERE user_id = ? AND (last_used_step IS NULL OR
   * last_used_step < step)`): exactly one concurrent caller wins a step.
   *
   * @returns `false` when the step (or a later one) was already used.
   */
  useStep(userId: string, step: number): Promise<boolean>;
  /** @returns whether the user had a TOTP. */
  deleteTotp(userId: string): Promise<boolean>;
  /** Replaces every recovery code of the user with `codeHashes` (the old set ends). */
  replaceRecoveryCodes(userId: string, codeHashes: readonly string[], at: string): Promise<void>;
  /**
   * Uses a recovery code (`UPDATE ... SET used_at = at WHERE user_id = ? AND
   * code_hash = ? AND used_at IS NULL`): exactly one concurrent caller wins.
   */
  useRecoveryCode(userId: string, codeHash: string, at: string): Promise<boolean>;
  /** How many of the user's recovery codes are unused. */
  unusedRecoveryCodes(userId: string): Promise<number>;
  /** Deletes the user's recovery codes; returns how many were unused. */
  deleteRecoveryCodes(userId: string): Promise<number>;
  /** The user's misses and lock, if any. */
  attempts(userId: string): Promise<SecondFactorAttempts | undefined>;
  /** Saves the user's misses and lock; `undefined` clears them. */
  saveAttempts(userId: string, attempts: SecondFactorAttempts | undefined): Promise<void>;
}

/**
 * Persistence of second factors: reads outside a transaction, and the
 * {@link SecondFactorWrites} primitives inside one the service opens.
 */
export interface SecondFactorStore extends UnitOfWork<SecondFactorWrites> {
  /** Whether the user has a TOTP, how many unused recovery codes and how many passkeys (one read). */
  status(userId: string): Promise<{ totp: boolean; recoveryCodesLeft: number; passkeys: number }>;
  /**
   * The user's TOTP factor and the second step's failures, in one read: the
   * sign-in's check before any lock (`undefined` without a factor).
   */
  totpCheck(userId: string): Promise<{ factor: StoredTotpFactor; attempts: SecondFactorAttempts | undefined } | undefined>;
  /** Marks `step` used when it is later than the last one used (compare-and-set): whether it was. */
  useTotpStep(userId: string, step: number): Promise<boolean>;
  /** Forgets the second step's failures. */
  clearAttempts(userId: string): Promise<void>;
  /** The user's password hash (`null` without a password), or `undefined` for no such user. */
  passwordHash(userId: string): Promise<string | null | undefined>;
  /** Whether the user has an active membership with the `owner` role in the active organization. */
  isOwner(userId: string, organizationId: string): Promise<boolean>;
  /**
   * Whether the user is an owner or admin (active) of an active platform
   * organization: of `organizationId`, or of any when it is omitted.
   */
  isPlatformAdministrator(userId: string, organizationId?: string): Promise<boolean>;
  /** Whether the user has a membership (in any status) of the organization. */
  isMember(userId: string, organizationId: string): Promise<boolean>;
  /** Deletes enrolments that expired at `now`; returns how many. */
  pruneEnrolments(now: string): Promise<number>;
}
