import type { UnitOfWork } from '@idt/core';

/** The account facts a reset or change needs. */
export interface PasswordAccount {
  readonly id: string;
  readonly email: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly status: 'active' | 'deactivated';
  /** The argon2id hash, or `null` for an account that signs in without a password. */
  readonly passwordHash: string | null;
}

/** A reset request as stored: the link token only as its SHA-256. */
export interface PasswordReset {
  readonly id: string;
  readonly userId: string;
  /** SHA-256 (hex) of the link token. */
  readonly tokenHash: string;
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly consumedAt: string | null;
}

/** The conditions and side effects of {@link PasswordResetWrites.setPasswordHash}. */
export interface PasswordHashWrite {
  /** Write only while the stored hash is still this one. */
  readonly expected?: string;
  /** Also mark the user's address verified. Default false. */
  readonly emailVerified?: boolean;
}

/** What consuming a reset did. */
export type PasswordResetConsumption = 'consumed' | 'expired' | 'invalid';

/**
 * The primitives a password service runs in one transaction (see
 * {@link PasswordResetStore.transaction}); none publishes events or evicts caches.
 */
export interface PasswordResetWrites {
  /**
   * Takes the user's row lock (`activeOnly`: only when the user is active).
   *
   * @returns whether the user exists (and, with `activeOnly`, is active).
   */
  lockUser(userId: string, options?: { readonly activeOnly?: boolean }): Promise<boolean>;
  /** Deletes the user's unconsumed resets (their links stop working) and inserts `reset`. */
  replace(reset: Omit<PasswordReset, 'consumedAt'>): Promise<void>;
  /**
   * Consumes a reset with one statement (`UPDATE ... SET consumed_at = now
   * WHERE id = ? AND token_hash = ? AND consumed_at IS NULL AND expires_at >
   * now`): exactly one concurrent caller gets `consumed`. `expired` when the
   * matching unconsumed reset had expired (it is deleted); `invalid` otherwise.
   */
  consume(match: { readonly resetId: string; readonly tokenHash: string }, now: string): Promise<PasswordResetConsumption>;
  /** Deletes the user's other unconsumed resets. */
  retire(userId: string): Promise<void>;
  /**
   * Sets an active user's password hash; with `expected`, only while the
   * stored hash is still that one (compare-and-set against a concurrent
   * change). `emailVerified` marks the address verified in the same statement
   * (a mailed link proved it works).
   *
   * @returns whether it was written.
   */
  setPasswordHash(userId: string, passwordHash: string, now: string, options?: PasswordHashWrite): Promise<boolean>;
  /**
   * Ends the user's unrevoked sessions (all, or all but `except`) with
   * `reason`, writing each one's revocation watermark.
   *
   * @returns the ids of the sessions ended.
   */
  endSessions(userId: string, reason: string, now: string, except?: string | null): Promise<string[]>;
  /** Records the user's revocation watermark at `now`: every token issued to the user until then stops validating. */
  revokeUserTokens(userId: string, now: string): Promise<void>;
}

/**
 * Persistence of password resets and changes: reads outside a transaction,
 * the {@link PasswordResetWrites} primitives inside one the service opens.
 */
export interface PasswordResetStore extends UnitOfWork<PasswordResetWrites> {
  /** The active user with this (lowercase) address. */
  findActiveUserByEmail(email: string): Promise<PasswordAccount | undefined>;
  /** A user by id, in any state. */
  findUser(userId: string): Promise<PasswordAccount | undefined>;
  /** A reset by id, in any state. */
  find(resetId: string): Promise<PasswordReset | undefined>;
  /** Deletes consumed and expired resets; returns how many. */
  prune(now: string): Promise<number>;
}
