import type { UnitOfWork } from '@idt/core';

/** A passwordless request: a magic link or a one-time code. */
export type PasswordlessKind = 'link' | 'code';

/** The account a passwordless request signs in. */
export interface PasswordlessUser {
  readonly id: string;
  readonly email: string;
  readonly firstName: string;
}

/** A passwordless request to record. */
export interface NewPasswordlessRequest {
  readonly id: string;
  readonly userId: string;
  readonly kind: PasswordlessKind;
  /** The code's HMAC (codes only); the code itself is never stored. */
  readonly codeHash: string | null;
  /** Where a magic link lands after sign-in (a path on this site). */
  readonly returnTo: string | null;
  readonly createdAt: string;
  readonly expiresAt: string;
}

/** An outstanding one-time code. */
export interface PasswordlessCode {
  readonly id: string;
  readonly userId: string;
  readonly codeHash: string;
}

/**
 * The passwordless primitives a service runs in one transaction (see
 * {@link PasswordlessStore.transaction}); none evicts caches.
 */
export interface PasswordlessWrites {
  /** Deletes the user's outstanding (unconsumed) codes. */
  retireCodes(userId: string): Promise<void>;
  /** Inserts a request. */
  insert(request: NewPasswordlessRequest): Promise<void>;
  /**
   * Consumes a request: `UPDATE ... SET consumed_at = now WHERE id = ? AND
   * kind = ? AND consumed_at IS NULL AND expires_at > now` (exactly one
   * concurrent caller wins); the winner also marks the user's e-mail address
   * verified (the mail reached them).
   *
   * @returns the signed-in user and the link's `returnTo`; `undefined` for the
   *   losers, and when the user was deactivated since (the request is still consumed).
   */
  consume(id: string, kind: PasswordlessKind, now: string): Promise<{ userId: string; returnTo: string | null } | undefined>;
}

/**
 * Persistence of passwordless sign-in requests: reads and attempt counting
 * outside a transaction, the {@link PasswordlessWrites} primitives inside one
 * the service opens.
 */
export interface PasswordlessStore extends UnitOfWork<PasswordlessWrites> {
  /** The active user with this (lowercase) e-mail address. */
  findActiveUserByEmail(email: string): Promise<PasswordlessUser | undefined>;
  /** The user's newest code that is unconsumed, unexpired at `now` and has fewer than `maxAttempts` attempts. */
  findCode(userId: string, now: string, maxAttempts: number): Promise<PasswordlessCode | undefined>;
  /**
   * Counts one verification attempt with one statement (`UPDATE ... SET
   * attempts = attempts + 1 WHERE id = ? AND consumed_at IS NULL AND
   * expires_at > now AND attempts < maxAttempts`), so no more than
   * `maxAttempts` attempts are ever counted, concurrent ones included.
   *
   * @returns whether the attempt was counted (`false`: the code is dead).
   */
  recordAttempt(id: string, now: string, maxAttempts: number): Promise<boolean>;
  /** Deletes consumed and expired requests; returns how many. */
  prune(now: string): Promise<number>;
}
