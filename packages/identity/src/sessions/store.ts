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
 * Persistence of sign-in sessions. Every write that ends a session also
 * records its revocation watermark (so tokens minted under its `sid` stop
 * validating) and evicts the cached session and watermark, in the same
 * transaction.
 */
export interface SessionStore {
  /**
   * Starts a session, in ONE transaction:
   * 1. locks the user row (`UPDATE identity_users SET updated_at = updated_at
   *    WHERE id = ? AND status = 'active'`), which serializes concurrent
   *    logins of one user (a row lock on Postgres, the write lock on SQLite);
   * 2. revokes the oldest active sessions (oldest `created_at` first) so that
   *    at most `maxActive - 1` remain, publishing one `UserSessionEvictedEvent`
   *    per evicted session;
   * 3. inserts `session`.
   *
   * Hence concurrent starts for one user never leave more than `maxActive`
   * active sessions.
   *
   * @returns the evicted session ids, or `undefined` when the user is missing
   *   or not active (nothing is written).
   */
  create(session: NewSession, maxActive: number): Promise<{ evicted: string[] } | undefined>;
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
  /**
   * Revokes a session of `userId` that is not revoked yet (`UPDATE ... WHERE
   * id = ? AND user_id = ? AND revoked_at IS NULL`: exactly one concurrent
   * caller wins), with its watermark and cache evictions, in one transaction.
   *
   * @returns `false` when no such session exists (another user's included).
   */
  revoke(userId: string, sessionId: string, reason: SessionEndReason, now: string): Promise<boolean>;
  /** Revokes every unrevoked session of a user in one transaction; returns their ids. */
  revokeAllForUser(userId: string, reason: SessionEndReason, now: string): Promise<string[]>;
  /** Deletes sessions revoked or expired at `now`; returns how many. */
  prune(now: string): Promise<number>;
}
