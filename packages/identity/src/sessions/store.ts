import type { UnitOfWork } from '@idt/core';

/** A sign-in session as stored (never with its cookie value). */
export interface StoredSession {
  readonly id: string;
  readonly userId: string;
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  /** ISO 8601 UTC; updated at most once per activity interval. */
  readonly lastActivityAt: string;
  /** ISO 8601 UTC: creation plus the session lifetime. */
  readonly expiresAt: string;
  /** ISO 8601 UTC, or `null` while the session was not revoked. */
  readonly revokedAt: string | null;
}

/** Why a session ended early. */
export type SessionEndReason = 'revoked' | 'logout' | 'evicted' | 'revoked-all';

/** A session to insert. */
export interface NewSession {
  readonly id: string;
  readonly userId: string;
  /** SHA-256 (hex) of the cookie value; the value itself is never stored. */
  readonly tokenHash: string;
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly ipAddress: string | null;
  readonly userAgent: string | null;
  /** Authentication methods (RFC 8176 style), e.g. `['otp']`. */
  readonly amr: readonly string[];
}

/**
 * The session primitives a service runs in one transaction (see
 * {@link SessionStore.transaction}). None of them publishes events or evicts
 * caches: the service does, through the transaction's effects.
 */
export interface SessionWrites {
  /**
   * Takes the user's row lock (`UPDATE identity_users SET updated_at =
   * updated_at WHERE id = ?`, with `AND status = 'active'` for `activeOnly`),
   * which serializes concurrent writes of one user's sessions (a row lock on
   * Postgres, the write lock on SQLite) until the transaction ends.
   *
   * @returns whether the user exists (and, with `activeOnly`, is active).
   */
  lockUser(userId: string, options?: { readonly activeOnly?: boolean }): Promise<boolean>;
  /** The ids of the user's sessions that are neither revoked nor expired at `now`, oldest first (`created_at`, then id). */
  liveIds(userId: string, now: string): Promise<string[]>;
  /** The ids of the user's sessions that are not revoked (expired ones included). */
  unrevokedIds(userId: string): Promise<string[]>;
  /** Inserts a session (active from `createdAt`). */
  insert(session: NewSession): Promise<void>;
  /**
   * Ends sessions (`UPDATE ... SET revoked_at = now, revoked_reason = reason
   * WHERE id IN (...) AND revoked_at IS NULL`) and records each one's
   * revocation watermark at `now`, so tokens minted under its `sid` stop
   * validating. No statement for an empty list.
   */
  end(sessionIds: readonly string[], reason: SessionEndReason, now: string): Promise<void>;
  /**
   * Revokes a session of `userId` that is not revoked yet (`UPDATE ... WHERE
   * id = ? AND user_id = ? AND revoked_at IS NULL`: exactly one concurrent
   * caller wins) and records its revocation watermark.
   *
   * @returns `false` (nothing written) when no such session exists (another user's included).
   */
  revoke(userId: string, sessionId: string, reason: SessionEndReason, now: string): Promise<boolean>;
  /** {@link SessionStore.markAuthenticated} inside the transaction (when the re-authentication is audited). */
  markAuthenticated(sessionId: string, amr: readonly string[], at: string): Promise<boolean>;
}

/**
 * Persistence of sign-in sessions: reads outside a transaction, and the
 * {@link SessionWrites} primitives inside one the session service opens
 * (which also publishes the session events and evicts the cached session and
 * watermark, in that transaction).
 */
export interface SessionStore extends UnitOfWork<SessionWrites> {
  /** The session whose cookie hashes to `tokenHash`, in any state. */
  findByTokenHash(tokenHash: string): Promise<StoredSession | undefined>;
  /** The user's sessions that are neither revoked nor expired at `now`, newest first. */
  listActive(userId: string, now: string): Promise<StoredSession[]>;
  /**
   * Records activity with one conditional statement (`UPDATE ... SET
   * last_activity_at = now WHERE id = ? AND last_activity_at < staleBefore
   * AND revoked_at IS NULL`), so concurrent instances write at most once per
   * interval.
   *
   * @returns the session's last activity after the statement, or `undefined`
   *   when the session is missing or revoked.
   */
  touch(sessionId: string, now: string, staleBefore: string): Promise<string | undefined>;
  /** Deletes sessions revoked or expired at `now`; returns how many. */
  prune(now: string): Promise<number>;
  // C1: recent authentication
  /** When the user last authenticated in a session that is neither revoked nor expired at `now`, or `undefined`. */
  authentication(sessionId: string, now: string): Promise<SessionAuthentication | undefined>;
  /**
   * Records a re-authentication in a session that is not revoked (`UPDATE
   * ... SET authenticated_at = at, amr = ? WHERE id = ? AND revoked_at IS NULL`).
   *
   * @returns whether such a session exists.
   */
  markAuthenticated(sessionId: string, amr: readonly string[], at: string): Promise<boolean>;
}

/** C1: the last authentication of a live session. */
export interface SessionAuthentication {
  readonly userId: string;
  /** ISO 8601 UTC: the sign-in, or the latest re-authentication in the session. */
  readonly authenticatedAt: string;
  /** The methods of that authentication (RFC 8176), e.g. `['pwd', 'otp', 'mfa']`. */
  readonly amr: readonly string[];
}
